package requests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// sameBits compares two values field by field, unexported fields included,
// floats by their bits (NaN equals NaN).
func sameBits(a, b reflect.Value, path string) error {
	if a.Kind() != b.Kind() {
		return fmt.Errorf("%s: kind %v vs %v", path, a.Kind(), b.Kind())
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Errorf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
			}
			return nil
		}
		return sameBits(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if err := sameBits(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Errorf("%s: len %d vs %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if err := sameBits(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			return fmt.Errorf("%s: len %d vs %d", path, a.Len(), b.Len())
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() {
				return fmt.Errorf("%s: key %v missing", path, k)
			}
			if err := sameBits(a.MapIndex(k), bv, fmt.Sprintf("%s[%v]", path, k)); err != nil {
				return err
			}
		}
	case reflect.Float32, reflect.Float64:
		if math.Float64bits(a.Float()) != math.Float64bits(b.Float()) {
			return fmt.Errorf("%s: %v vs %v", path, a.Float(), b.Float())
		}
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return fmt.Errorf("%s: %v vs %v", path, a.Bool(), b.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return fmt.Errorf("%s: %v vs %v", path, a.Int(), b.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			return fmt.Errorf("%s: %v vs %v", path, a.Uint(), b.Uint())
		}
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Errorf("%s: %q vs %q", path, a.String(), b.String())
		}
	default:
		return fmt.Errorf("%s: cannot compare %v", path, a.Kind())
	}
	return nil
}

// sameRead reads in with the old reader and the streaming one (through
// reader, when given, to vary how the bytes arrive) and says how they differ.
func sameRead(in []byte, wrap func(io.Reader) io.Reader) error {
	oa, on, oerr := oldReadBench(bytes.NewReader(in), "b.json")
	open := func(seekable bool) io.Reader {
		br := bytes.NewReader(in)
		if wrap == nil {
			return br
		}
		if seekable { // as a file is: gaps are streamed only then
			return struct {
				io.Reader
				io.Seeker
			}{wrap(br), br}
		}
		return wrap(br)
	}
	restore := setGapWorkers(1, gapChunkSize)
	na, nn, nerr := ReadBench(open(false), "b.json")
	restore()
	if err := sameResult(oa, on, oerr, na, nn, nerr); err != nil {
		return err
	}
	// Streamed, the gaps read by the tokenizer alone, then by workers in
	// chunks cut at every entry, at a few dozen bytes and at the default.
	for _, g := range []struct{ workers, size int }{{1, gapChunkSize}, {2, 1}, {3, 37}, {2, gapChunkSize}} {
		restore := setGapWorkers(g.workers, g.size)
		pa, pn, perr := ReadBench(open(true), "b.json")
		restore()
		if err := sameResult(oa, on, oerr, pa, pn, perr); err != nil {
			return fmt.Errorf("gaps streamed, %d workers, chunks of %d bytes: %w", g.workers, g.size, err)
		}
	}
	return nil
}

// setGapWorkers sets how the gaps are read in parallel; the returned func
// restores it.
func setGapWorkers(workers, size int) func() {
	w, c := gapWorkers, gapChunkSize
	gapWorkers, gapChunkSize = func() int { return workers }, size
	return func() { gapWorkers, gapChunkSize = w, c }
}

// errText is an error's text for a message comparing two results, "none"
// for no error.
func errText(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

// formatErrorFields shows every field of a FormatError, "none" for nil.
func formatErrorFields(e *FormatError) string {
	if e == nil {
		return "none"
	}
	return fmt.Sprintf("{File:%q Is:%q Reader:%q Convert:%q}", e.File, e.Is, e.Reader, e.Convert)
}

func sameResult(oa *Accumulator, on []string, oerr error, na *Accumulator, nn []string, nerr error) error {
	switch {
	case (oerr == nil) != (nerr == nil):
		return fmt.Errorf("old error %q, new error %q", errText(oerr), errText(nerr))
	case oerr != nil:
		if oerr.Error() != nerr.Error() {
			return fmt.Errorf("old error %q\nnew error %q", oerr.Error(), nerr.Error())
		}
		var of, nf *FormatError
		if errors.As(oerr, &of) != errors.As(nerr, &nf) || of != nil && *of != *nf {
			return fmt.Errorf("format errors %s vs %s", formatErrorFields(of), formatErrorFields(nf))
		}
		return nil
	}
	if !reflect.DeepEqual(on, nn) {
		return fmt.Errorf("notes %q vs %q", on, nn)
	}
	return sameBits(reflect.ValueOf(oa), reflect.ValueOf(na), "Accumulator")
}

func checkSame(t *testing.T, name string, in []byte) {
	t.Helper()
	for _, w := range []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{{"whole", nil}, {"bytewise", iotest.OneByteReader}, {"halves", iotest.HalfReader}} {
		if err := sameRead(in, w.wrap); err != nil {
			t.Fatalf("%s (%s, %d bytes): %v\ninput: %.600q", name, w.name, len(in), err, in)
		}
	}
}

// benchFiles: every bench document under a testdata directory of the
// repository; in the quick tier only those of this package.
func benchFiles(t *testing.T) []string {
	root := "testdata"
	if testkit.Heavy() {
		root = filepath.Join("..", "..")
	}
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.Contains(p, "testdata") && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".csv")) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cuts are where a test file is cut short: at its start, in the middle and
// at its end; in the quick tier only for files up to 128 KiB.
func cuts(data []byte) []int {
	if !testkit.Heavy() && len(data) > 128<<10 {
		return nil
	}
	var out []int
	for _, n := range []int{1, 2, len(data) / 3, len(data) / 2, len(data) - 2, len(data) - 1} {
		if n > 0 && n < len(data) {
			out = append(out, n)
		}
	}
	return out
}

func TestBenchStreamSameOnTestdata(t *testing.T) {
	files := benchFiles(t)
	if len(files) < 5 {
		t.Fatalf("found only %v", files)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, p, data)
		// Cut short, and in the middle: appended-run and error paths.
		for _, n := range cuts(data) {
			checkSame(t, fmt.Sprintf("%s[:%d]", p, n), data[:n])
		}
	}
}

// TestBenchStreamSameOnCases: hand-picked corners of what the old reader accepted.
func TestBenchStreamSameOnCases(t *testing.T) {
	cases := append([]string{}, badInputs...)
	cases = append(cases,
		"", " ", "\xef\xbb\xbf", "\xef\xbb\xbf \n{\"completed\": 1}", "{\"completed\": 1", "[1,2,3]", "{\"hello\": 1}", "<html>",
		`{"completed": 1, "ttfts": "fast"}`, `{"completed": 0, "failed": 0, "median_ttft_ms": NaN}`,
		`{"completed": 10, "median_ttft_ms": 0.031, "median_tpot_ms": 0.008}`,
		`{"completed": 10, "mean_ttft_ms": 30, "mean_tpot_ms": 0.02}`,
		`{"completed": 10, "median_ttft_ms": 30, "mean_tpot_ms": NaN, "p99_itl_ms": Infinity}`,
		`{"completed": 10, "median_ttft_ms": 30, "request_rate": Infinity, "max_concurrency": Infinity}`,
		`{"completed": 10, "median_ttft_ms": 30, "request_rate": -Infinity, "max_concurrency": "12"}`,
		`{"completed": 10, "median_ttft_ms": 30, "request_rate": ["Inf"], "max_concurrency": [1]}`,
		`{"completed": 10, "median_ttft_ms": 30, "request_rate": {"x": [-Infinity]}}`,
		`{"completed": 10, "median_ttft_ms": 30, "request_rate": "İnf"}`,
		`{"completed": 10, "median_ttft_ms": 30, "request_rate": "0x10", "max_concurrency": "1e400"}`,
		`{"completed": 3, "ttfts": [0.1, 0.2, 0.3], "ttfts": null, "median_ttft_ms": 30}`,
		`{"completed": 3, "ttfts": null, "ttfts": [0.1, 0.2, 0.3]}`,
		`{"ttf\u0074s": [0.1, 0.2, 0.3], "completed": 3}`,
		`{Infinity: 1, "completed": 3, "ttfts": [0.1]}`,
		`{NaN: 1}`, `{"a": NaNx}`, `{"a": 1NaN}`, `{"a": -NaN}`, `{"a": --Infinity}`, `{"a": 1e-Infinity}`, `{"a": tNaN}`,
		`{"ttft": 0.1, "e2e": 0.3}`, `{"ttft_ms": 100}`, `{"ttft": 0.1, "completed": 1}`, "null", "null\n{\"completed\": 1, \"median_ttft_ms\": 5}",
		"{\"completed\": 1, \"median_ttft_ms\": 5}\nnull", "{\"completed\": 1, \"median_ttft_ms\": 5}\n{\"completed\": 2, \"median_ttft_ms\": 6}\n{\"compl",
		"{\"completed\": 1, \"median_ttft_ms\": 5}x", "{\"completed\": 1, \"median_ttft_ms\": 5}\n[1]", "{\"completed\": 1, \"median_ttft_ms\": 5} 12 ",
		`"hello"`, `123`, `123abc`, `true`, `fals`, `-`, `1.`, `1e`, `1e+`, `01`, `"\x"`, "\"a\x01\"", `"\u12g4"`, `{"a" 1}`, `{"a":1,}`, `[1,]`,
		`{"a":[1 2]}`, `{"a":{"b":1 "c":2}}`, `NaN`, `Infinity`, `-Infinity`, `Infinityx`, "\v{}", `{}`, `{"errors": []}`,
		"request_id,ttft,e2e\nr1,0.1,0.2\n", "x,ttft\n", `[{"ttft": 0.1}]`, "[\n{\"ttft\": 0.1}]",
		`{"completed": 3, "ttfts": [0.1, 0, 0.3], "output_lens": [5, 0, 5], "itls": [[0.01], [], null], "errors": ["", null, "x"]}`,
		`{"completed": 3, "ttfts": [0.1, 0.2, 0.3], "itls": [[0.01, "x"], 7, [[1]]], "errors": [1, {"a": 1}, "\u0000"], "input_lens": [1, "2", [3]]}`,
		`{"completed": 3, "ttfts": [0.1, 0.2, 0.3], "itls": "no", "errors": "no", "input_lens": {"a": 1}, "output_lens": null, "start_times": [1e400, -1e400, 1e-400]}`,
		`{"completed": 2, "ttfts": [0.1, Infinity], "itls": [[Infinity], [NaN]], "errors": [Infinity, NaN], "start_times": [NaN, -Infinity]}`,
		`{"completed": 2, "ttfts": [1.5e-05, 9.5367431640625e-07], "itls": [[1E2], [0.020133256912231445, 12345678901234567890.5]], "input_lens": [12345678901234567890, 1e3]}`,
	)
	deep := func(n int, inner string) string { return strings.Repeat("[", n) + inner + strings.Repeat("]", n) }
	for _, n := range []int{298, 299, 300, 301} {
		cases = append(cases,
			fmt.Sprintf(`{"completed": 1, "ttfts": [0.1, %s], "median_ttft_ms": 4}`, deep(n, "1")),
			fmt.Sprintf(`{"completed": 1, "ttfts": [0.1, %s], "median_ttft_ms": 4}`, deep(n, "")),
			fmt.Sprintf(`{"completed": 2, "ttfts": [0.1, 0.2], "itls": [[0.01], %s]}`, deep(n, "1")),
			fmt.Sprintf(`{"completed": 2, "ttfts": [0.1, 0.2], "errors": ["a", %s]}`, deep(n, "")),
		)
	}
	cases = append(cases, fmt.Sprintf(`{"a": %s}`, deep(9999, "")), fmt.Sprintf(`{"a": %s}`, deep(10000, "")), fmt.Sprintf(`{"a": %s}`, deep(10001, "1")))
	for i, c := range cases {
		checkSame(t, fmt.Sprint("case ", i), []byte(c))
	}
}

// genBench writes a random bench document: the keys of every vintage in a
// random order, sometimes twice, entries of every type, Python's NaN and
// Infinity, unknown keys with nested values, random whitespace.
func genBench(r *rand.Rand) []byte {
	var b bytes.Buffer
	ws := func() {
		for r.Intn(4) == 0 {
			b.WriteByte(" \t\r\n"[r.Intn(4)])
		}
	}
	num := func(scale float64) {
		switch k := r.Intn(40); {
		case k == 0:
			b.WriteString([]string{"NaN", "Infinity", "-Infinity", "null", `"x"`, `"Infinity"`, "true", "[]", "{}", "1e400", "-0", "0"}[r.Intn(12)])
		case k == 1:
			fmt.Fprintf(&b, "%g", -r.Float64()*scale)
		case k == 3: // edges of the one-pass decimal reader (fastElement)
			b.WriteString([]string{"0.0000000000000000000000000000000000000000123", "123456789012345678901234.5",
				"0.1000000000000000000000", "0.12345678901234567890", "1234567890123456789", "12345678901234567890",
				"-0.0", "0.0", "1E5", "1e-7", "5.0", "-5", "7", "0.000000000000000000000000000000000000000000000001",
				"9007199254740993", "0.30000000000000004", "1.7976931348623157", "4.9406564584124654"}[r.Intn(18)])
		case k == 2:
			fmt.Fprintf(&b, "%e", r.Float64()*scale)
		case k < 20:
			fmt.Fprintf(&b, "%v", r.Float64()*scale)
		default:
			fmt.Fprintf(&b, "%.*f", r.Intn(8), r.Float64()*scale)
		}
	}
	n := r.Intn(60)
	if r.Intn(4) == 0 {
		n = 20 + r.Intn(400)
	}
	arr := func(each func(i int)) {
		m := n
		if r.Intn(25) == 0 {
			m = r.Intn(n + 2)
		}
		b.WriteByte('[')
		ws()
		for i := range m {
			if i > 0 {
				b.WriteByte(',')
				ws()
			}
			each(i)
			ws()
		}
		b.WriteByte(']')
	}
	var unknown func(depth int)
	unknown = func(depth int) {
		switch k := r.Intn(8); {
		case k == 0 && depth < 4:
			b.WriteString(`{"k": `)
			unknown(depth + 1)
			b.WriteString(`, "ttfts": [1]}`)
		case k == 1 && depth < 4:
			b.WriteByte('[')
			unknown(depth + 1)
			b.WriteString(", NaN]")
		case k == 2:
			b.WriteString(`"text with \"quotes\", \\ and \u00e9 NaN Infinity {"`)
		default:
			num(10)
		}
	}
	outLen := make([]int, n+2)
	for i := range outLen {
		outLen[i] = r.Intn(12)
	}
	fields := map[string]func(){
		"ttfts":       func() { arr(func(int) { num(0.5) }) },
		"input_lens":  func() { arr(func(int) { fmt.Fprint(&b, r.Intn(9000)) }) },
		"output_lens": func() { arr(func(i int) { fmt.Fprint(&b, outLen[i]) }) },
		"start_times": func() { arr(func(i int) { fmt.Fprintf(&b, "%v", 1767225600+float64(i)*0.1+r.Float64()) }) },
		"itls": func() {
			arr(func(i int) {
				switch r.Intn(30) {
				case 0:
					b.WriteString("null")
				case 1:
					num(1)
				default:
					b.WriteByte('[')
					for j := range outLen[i] - 1 + r.Intn(2) {
						if j > 0 {
							b.WriteString(", ")
						}
						if r.Intn(100) == 0 {
							num(1)
						} else {
							fmt.Fprintf(&b, "%v", 0.01+r.Float64()*0.02)
						}
					}
					b.WriteByte(']')
				}
			})
		},
		"errors": func() {
			arr(func(int) {
				switch r.Intn(20) {
				case 0:
					b.WriteString(`"Timeout"`)
				case 1:
					unknown(2)
				default:
					b.WriteString(`""`)
				}
			})
		},
		"generated_texts": func() { arr(func(int) { b.WriteString(`"Hello, \"world\"\n"`) }) },
		"completed":       func() { fmt.Fprint(&b, n) },
		"failed":          func() { b.WriteString([]string{"0", "1", "NaN", `"2"`}[r.Intn(4)]) },
		"request_rate":    func() { b.WriteString([]string{`"inf"`, "Infinity", "4.0", "NaN", `"12"`, "[1]", "null"}[r.Intn(7)]) },
		"max_concurrency": func() { b.WriteString([]string{"64", "null", "NaN", "Infinity", `"8"`}[r.Intn(5)]) },
		"median_ttft_ms":  func() { num(200) },
		"mean_ttft_ms":    func() { num(200) },
		"p99_ttft_ms":     func() { num(2000) },
		"mean_tpot_ms":    func() { num(50) },
		"mean_itl_ms":     func() { num(50) },
		"median_e2el_ms":  func() { num(5000) },
		"total_output_tokens": func() {
			fmt.Fprint(&b, r.Intn(100000))
		},
		"burstiness": func() { unknown(0) },
		"nested":     func() { unknown(0) },
		"ttft":       func() { num(1) },
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	// Deterministic order before shuffling: map order is random.
	sortStrings(keys)
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = keys[:r.Intn(len(keys)+1)]
	if r.Intn(3) > 0 {
		keys = append(keys, "ttfts", "completed")
	}
	if r.Intn(8) == 0 && len(keys) > 0 {
		keys = append(keys, keys[r.Intn(len(keys))]) // a duplicate: the last wins
	}
	b.WriteByte('{')
	ws()
	for i, k := range keys {
		if k == "ttft" && r.Intn(3) > 0 {
			continue
		}
		if i > 0 {
			b.WriteByte(',')
			ws()
		}
		fmt.Fprintf(&b, "%q", k)
		ws()
		b.WriteByte(':')
		ws()
		fields[k]()
		ws()
	}
	b.WriteByte('}')
	return b.Bytes()
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// mutate damages a document: cut, a byte changed, inserted or deleted.
func mutate(r *rand.Rand, in []byte) []byte {
	out := append([]byte(nil), in...)
	for range 1 + r.Intn(3) {
		if len(out) == 0 {
			return out
		}
		p := r.Intn(len(out))
		alphabet := `{}[],:"\ -+.eE0123456789NaInfity` + "\n\t\x00\xff"
		switch r.Intn(4) {
		case 0:
			out = out[:p]
		case 1:
			out[p] = alphabet[r.Intn(len(alphabet))]
		case 2:
			out = append(out[:p], append([]byte{alphabet[r.Intn(len(alphabet))]}, out[p:]...)...)
		default:
			out = append(out[:p], out[p+1:]...)
		}
	}
	return out
}

// TestBenchStreamSameOnRandom: generated documents, whole, appended, damaged.
func TestBenchStreamSameOnRandom(t *testing.T) {
	n := scaled(50, 500) // each read five ways (sameRead)
	r := rand.New(rand.NewSource(7))
	for i := range n {
		doc := genBench(r)
		name := fmt.Sprint("doc ", i)
		checkSame(t, name, doc)
		if i%4 == 0 {
			checkSame(t, name+" appended", append(append(append([]byte{}, doc...), '\n'), genBench(r)...))
		}
		for range 3 {
			checkSame(t, name+" mutated", mutate(r, doc))
		}
	}
}

// TestBenchStreamSameOnLarge: a generated run of thousands of requests (the
// distributions switch to their sketches) reads the same.
func TestBenchStreamSameOnLarge(t *testing.T) {
	var b bytes.Buffer
	if err := writeBenchDoc(&b, 8<<20, 3); err != nil {
		t.Fatal(err)
	}
	if err := sameRead(b.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	if err := sameRead(b.Bytes(), iotest.HalfReader); err != nil {
		t.Fatal(err)
	}
}

// A read error, wherever it comes, is what the old reader said.
func TestBenchStreamReadError(t *testing.T) {
	doc := []byte(benchJSON(30, nil))
	// Gap workers read ahead of the tokenizer: the error still comes where
	// the tokenizer meets it.
	for _, g := range []struct{ workers, size int }{{1, gapChunkSize}, {2, 1}, {2, 64}} {
		restore := setGapWorkers(g.workers, g.size)
		for n := 0; n <= len(doc); n += 1 + n/50 {
			oldR := io.MultiReader(bytes.NewReader(doc[:n]), &errOnce{})
			// Seekable, as a file is: only then are the gaps streamed.
			newR := struct {
				io.Reader
				io.Seeker
			}{io.MultiReader(bytes.NewReader(doc[:n]), &errOnce{}), bytes.NewReader(nil)}
			_, _, oerr := oldReadBench(oldR, "b.json")
			_, _, nerr := ReadBench(newR, "b.json")
			if oerr == nil || nerr == nil || oerr.Error() != nerr.Error() {
				t.Fatalf("%d workers, chunks of %d, error at %d: old %v, new %v", g.workers, g.size, n, oerr, nerr)
			}
		}
		restore()
	}
}

// errOnce fails its first read and is at its end after that, as a reader
// may be: the error must be kept, not met again.
type errOnce struct{ failed bool }

func (e *errOnce) Read([]byte) (int, error) {
	if e.failed {
		return 0, io.EOF
	}
	e.failed = true
	return 0, errors.New("disk on\nfire")
}

// spaces is an endless run of blanks after a document.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// A document past the size bound is refused as before, without holding it.
func TestBenchStreamTooLarge(t *testing.T) {
	_, _, err := ReadBench(io.MultiReader(strings.NewReader(benchJSON(30, nil)), spaces{}), "b.json")
	if want := fmt.Sprintf("b.json is larger than %d MiB", maxBench>>20); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v", err)
	}
}

// FuzzReadBenchSame holds the streaming reader to the old one on any input.
func FuzzReadBenchSame(f *testing.F) {
	for _, in := range badInputs {
		f.Add([]byte(in))
	}
	r := rand.New(rand.NewSource(1))
	for range 20 {
		f.Add(genBench(r))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if err := sameRead(in, nil); err != nil {
			t.Fatalf("%v\ninput: %q", err, in)
		}
		if err := sameRead(in, iotest.OneByteReader); err != nil {
			t.Fatalf("bytewise: %v\ninput: %q", err, in)
		}
	})
}
