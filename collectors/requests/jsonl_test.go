package requests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/valyala/fastjson"
	"github.com/valyala/fastjson/fastfloat"
)

// oldReadRequests is ReadRequests with JSONL read as it was, one line at a
// time on one goroutine: the oracle of the parallel reader.
func oldReadRequests(r io.Reader, from string) (*Accumulator, []string, error) {
	return readRequests(r, from, oldReadJSONL)
}

func oldReadJSONL(br *bufio.Reader, a *Accumulator, from string) error {
	var p fastjson.Parser
	var itls []float64
	first := true
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := append([]byte(nil), b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
				if len(long) > maxLine {
					return fmt.Errorf("%s: line %d is longer than %d MiB: one request's record should be far smaller", from, line, maxLine>>20)
				}
			}
			b = long
		}
		if len(bytes.TrimSpace(b)) > 0 {
			if first {
				first = false
				if v, e := p.ParseBytes(b); e == nil && v.Type() == fastjson.TypeObject && benchObject(v) {
					return &FormatError{File: from, Is: "vllm bench serve result JSON", Reader: "bench"}
				}
			}
			rec, e := parseLine(&p, b, &itls)
			if e != nil {
				msg, _, _ := strings.Cut(oneLine(e), "; unparsed tail")
				a.q.skip(rUnreadable, line, msg)
			} else {
				a.take(rec, line)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
	}
}

// sameRequests reads in with the oracle and with ReadRequests cutting
// chunks of about chunkSize bytes, and says how they differ.
func sameRequests(in []byte, chunkSize int, wrap func(io.Reader) io.Reader) error {
	defer func(n int) { jsonlChunk = n }(jsonlChunk)
	jsonlChunk = chunkSize
	open := func() io.Reader {
		if wrap != nil {
			return wrap(bytes.NewReader(in))
		}
		return bytes.NewReader(in)
	}
	oa, on, oerr := oldReadRequests(open(), "r.jsonl")
	na, nn, nerr := ReadRequests(open(), "r.jsonl")
	switch {
	case (oerr == nil) != (nerr == nil):
		return fmt.Errorf("old error %q, new error %q", errText(oerr), errText(nerr))
	case oerr != nil:
		if oerr.Error() != nerr.Error() {
			return fmt.Errorf("old error %q\nnew error %q", oerr.Error(), nerr.Error())
		}
		return nil
	}
	if !reflect.DeepEqual(on, nn) {
		return fmt.Errorf("notes %q vs %q", on, nn)
	}
	return sameBits(reflect.ValueOf(oa), reflect.ValueOf(na), "Accumulator")
}

func checkSameRequests(t *testing.T, name string, in []byte) {
	t.Helper()
	for _, c := range []struct {
		size int
		wrap func(io.Reader) io.Reader
	}{{1 << 20, nil}, {1, nil}, {37, iotest.OneByteReader}, {200, iotest.HalfReader}} {
		if err := sameRequests(in, c.size, c.wrap); err != nil {
			t.Fatalf("%s (chunks of %d, %d bytes): %v\ninput: %.600q", name, c.size, len(in), err, in)
		}
	}
}

func TestRequestsSameOnTestdata(t *testing.T) {
	for _, p := range benchFiles(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkSameRequests(t, p, data)
		for _, n := range cuts(data) {
			checkSameRequests(t, fmt.Sprintf("%s[:%d]", p, n), data[:n])
		}
	}
	for i, in := range badInputs {
		checkSameRequests(t, fmt.Sprint("badInputs ", i), []byte(in))
	}
}

// genLine writes one request line, mostly plain, sometimes with what sends
// a line to the fallback parser or refuses it.
func genLine(r *rand.Rand, i int) string {
	num := func() string {
		switch r.Intn(30) {
		case 0:
			return "NaN"
		case 1:
			return "1e400"
		case 2:
			return "-0.0"
		case 3:
			return `"0.1"`
		case 4:
			return "null"
		case 5:
			return "1.2.3"
		case 6:
			return "2E-3"
		case 7:
			return "+1"
		case 8:
			return "12345678901234567890.123"
		}
		return fmt.Sprintf("%.*f", r.Intn(8), r.Float64()*float64(1+r.Intn(3)))
	}
	var kv []string
	add := func(k, v string) { kv = append(kv, fmt.Sprintf("%q%s:%s", k, strings.Repeat(" ", r.Intn(2)), v)) }
	ttft := 0.05 + r.Float64()*0.2
	if r.Intn(10) > 0 {
		add("request_id", fmt.Sprintf(`"r%d"`, i))
	}
	if r.Intn(4) > 0 {
		add("start_time", fmt.Sprintf("%.3f", 1767225600+float64(i)*0.01-float64(r.Intn(2))))
	} else if r.Intn(3) == 0 {
		add("start_time", []string{`"2026-01-01T00:00:00Z"`, `"yesterday"`, "NaN", "true"}[r.Intn(4)])
	}
	out := 1 + r.Intn(300)
	add("prompt_tokens", fmt.Sprint(r.Intn(8000)))
	add("output_tokens", fmt.Sprint(out))
	if r.Intn(3) == 0 {
		add("max_tokens", num())
	}
	if r.Intn(20) == 0 {
		add("ttft_ms", fmt.Sprintf("%.3f", ttft*1000))
	} else {
		add("ttft", fmt.Sprintf("%.6f", ttft))
	}
	switch r.Intn(20) {
	case 0:
		add("e2e", num())
	case 1:
		add("e2e_ms", fmt.Sprintf("%.3f", (ttft+float64(out)*0.02)*1000))
	default:
		add("e2e", fmt.Sprintf("%.6f", ttft+float64(out)*0.02))
	}
	if r.Intn(3) > 0 {
		var g []string
		for range r.Intn(6) {
			if r.Intn(40) == 0 {
				g = append(g, num())
			} else {
				g = append(g, fmt.Sprintf("%.5f", 0.01+r.Float64()*0.02))
			}
		}
		key := "itl"
		if r.Intn(8) == 0 {
			key = "itl_ms"
		}
		add(key, "["+strings.Join(g, ", ")+"]")
		if r.Intn(20) == 0 {
			add([]string{"itl", "itl_ms"}[r.Intn(2)], "[0.01]")
		}
	}
	for _, k := range []string{"queue_time", "server_ttft", "prefill_time"} {
		if r.Intn(5) == 0 {
			add(k, num())
		}
	}
	if r.Intn(3) == 0 {
		add("streaming", []string{"true", "false", "null", `"yes"`}[r.Intn(4)])
	}
	switch r.Intn(15) {
	case 0:
		add("error", `"timeout"`)
	case 1:
		add("error", `""`)
	case 2:
		add("error", []string{"1", "null", "[]", `"a\"b"`}[r.Intn(4)])
	}
	if r.Intn(10) == 0 {
		add("model", []string{`"m"`, `{"a": 1}`, "[1, 2]", "3", "false", `"\u00e9"`}[r.Intn(6)])
	}
	if r.Intn(30) == 0 {
		add("ttft", num()) // a repeated key
	}
	r.Shuffle(len(kv), func(a, b int) { kv[a], kv[b] = kv[b], kv[a] })
	line := "{" + strings.Join(kv, ", ") + "}"
	switch r.Intn(60) {
	case 0:
		line = ""
	case 1:
		line = "  \t"
	case 2:
		line = line[:len(line)/2]
	case 3:
		line += " x"
	case 4:
		line = " " + line + "\r"
	case 5:
		line = "[1]"
	}
	return line
}

func genRequests(r *rand.Rand, n int) []byte {
	var b strings.Builder
	for i := range n {
		b.WriteString(genLine(r, i))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func TestRequestsSameOnRandom(t *testing.T) {
	n := scaled(30, 300)
	r := rand.New(rand.NewSource(11))
	for i := range n {
		doc := genRequests(r, 1+r.Intn(60))
		name := fmt.Sprint("doc ", i)
		checkSameRequests(t, name, doc)
		checkSameRequests(t, name+" mutated", mutate(r, doc))
		if i%10 == 0 {
			checkSameRequests(t, name+" no final newline", bytes.TrimRight(doc, "\n"))
		}
	}
}

// TestRequestsSameOnLarge: enough requests for the sketches, the reservoirs
// and the prompt-length sample to fill, over many chunks.
func TestRequestsSameOnLarge(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	doc := genRequests(r, 40000)
	for _, size := range []int{1 << 20, 64 << 10, 4000} {
		if err := sameRequests(doc, size, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// A line longer than maxLine is refused with its number, as before.
func TestRequestsLongLine(t *testing.T) {
	long := `{"ttft": 0.1, "e2e": 0.2, "x": "` + strings.Repeat("a", maxLine) + `"}`
	for _, in := range []string{
		jsonl(3, 1) + long + "\n" + jsonl(3, 1),
		jsonl(3, 1) + long,
		long[:maxLine-5] + "\n" + jsonl(3, 1),
	} {
		for _, size := range []int{1 << 20, 1000} {
			if err := sameRequests([]byte(in), size, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A read error is what the old reader said.
func TestRequestsReadError(t *testing.T) {
	doc := genRequests(rand.New(rand.NewSource(3)), 500)
	for _, n := range []int{10, len(doc) / 2, len(doc) - 1} {
		wrap := func(r io.Reader) io.Reader {
			return io.MultiReader(io.LimitReader(r, int64(n)), iotest.ErrReader(errors.New("disk on fire")))
		}
		if err := sameRequests(doc, 256, wrap); err != nil {
			t.Fatal(err)
		}
	}
}

// fastNumber gives fastfloat.Parse's bits, or gives up, on every token
// fastjson would cut.
func TestFastNumber(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.Intn(10)))
		}
		return b.String()
	}
	toks := []string{"0", "-0", "-0.0", "1.", "1.e5", "01", "00.5", "-", "-.5", ".5", "1e5", "1E-3", "+1", "1-2", "1.2.3",
		"123456789012345678", "1234567890123456789", "-123456789012345678", "0.000000000000001", "1.23456789012345",
		"12345678901234.5", "123456789012345.6", "9007199254740993", "9007199254740993.0", "1767225600.010"}
	for range 20000 {
		tok := digits(1 + r.Intn(12))
		if r.Intn(2) == 0 {
			tok += "." + digits(r.Intn(12))
		}
		if r.Intn(4) == 0 {
			tok = "-" + tok
		}
		toks = append(toks, tok)
	}
	for _, tok := range toks {
		for _, tail := range []string{"", ",", "]", " ", "x"} {
			b := []byte(tok + tail)
			if !(b[0] == '-' || b[0] >= '0' && b[0] <= '9') {
				continue
			}
			x, next, ok := fastNumber(b, 0)
			end := numEnd(b, 0)
			want, err := fastfloat.Parse(string(b[:end]))
			// Not ok sends the line to the fallback, which reads it as before.
			if ok && (err != nil || next != end || math.Float64bits(x) != math.Float64bits(want)) {
				t.Errorf("%q: got %v %d %v, fastfloat %v %d %v", b, x, next, ok, want, end, err)
			}
		}
	}
}
