package requests

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// jsonl writes n sound requests (TTFT 50–150 ms, 20 ms per token, 100–300
// tokens out) in the given unit, then the extra lines.
func jsonl(n int, scale float64, extra ...string) string {
	var b strings.Builder
	for i := range n {
		out := 100 + i%200
		ttft := (0.05 + float64(i%100)/1000) * scale
		fmt.Fprintf(&b, `{"request_id":"r%d","prompt_tokens":%d,"output_tokens":%d,"ttft":%g,"e2e":%g}`+"\n",
			i, 500+i*10, out, ttft, ttft+float64(out-1)*0.02*scale)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	return b.String()
}

func readReq(t *testing.T, in string) (*Accumulator, []string, error) {
	t.Helper()
	a, notes, err := ReadRequests(strings.NewReader(in), "r.jsonl")
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Fatalf("error spans lines: %q", err)
	}
	return a, notes, err
}

func fill(a *Accumulator) evidence.Values {
	e := evidence.New(evidence.Target{Model: "m"})
	a.Fill(e, "x")
	return e.Values
}

// Bad rows are skipped and counted by reason; the rest are evidence.
func TestBadRowsSkippedByReason(t *testing.T) {
	in := jsonl(40, 1,
		`{"ttft": -0.1, "e2e": 2}`,
		`{"ttft": 0, "e2e": 2}`,
		`{"ttft": 0.5, "e2e": 0.2}`,
		`{"ttft": NaN, "e2e": 2}`,
		`{"ttft": 0.1, "e2e": 1e400}`,
		`{"e2e": 2}`,
		`{"ttft": "fast"}`,
		`{"ttft": 0.1, "e2e": 0.0995}`, // within rounding: kept
		`{"ttft": 0.2, "error": "HTTP 500"}`)
	a, notes, err := readReq(t, in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"non_positive": 2, "e2e_below_ttft": 1, "non_finite": 2, "no_ttft": 1, "unreadable": 1}
	got := a.Skipped()
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: skipped %d, want %d (all %v)", k, got[k], n, got)
		}
	}
	if a.Rows() != 49 || a.Requests() != 42 {
		t.Fatalf("rows %d requests %d", a.Rows(), a.Requests())
	}
	note := strings.Join(notes, " | ")
	for _, w := range []string{"7 of 49 rows skipped", "2 zero or negative latency (first line 41: ttft -0.1)",
		"1 e2e < ttft (first line 43: e2e 0.2 < ttft 0.5)", "2 non-finite ttft or e2e (first line 44)", "1 no ttft (first line 46)"} {
		if !strings.Contains(note, w) {
			t.Errorf("notes %q lack %q", note, w)
		}
	}
	if v := fill(a); v.Service.ClientTTFT.Max > 0.2 || v.Service.ClientTTFT.Count != 41 || math.Abs(v.Service.ClientFailedShare-1.0/42) > 1e-9 {
		t.Fatalf("ttft %+v failed %v", v.Service.ClientTTFT, v.Service.ClientFailedShare)
	}
}

// More than half the rows bad, or all of them: refused, with the counts.
func TestMostRowsBadRefused(t *testing.T) {
	var bad []string
	for range 11 {
		bad = append(bad, `{"ttft": 2, "e2e": 1}`)
	}
	_, _, err := readReq(t, jsonl(10, 1, bad...))
	if err == nil || !strings.Contains(err.Error(), "11 of 21 rows are invalid") || !strings.Contains(err.Error(), "11 e2e < ttft") {
		t.Fatalf("got %v", err)
	}
	if _, _, err := readReq(t, jsonl(0, 1, `{"ttft": -1}`, `{"nothing": 1}`)); err == nil || !strings.Contains(err.Error(), "none of the 2 rows is a valid request") {
		t.Fatalf("got %v", err)
	}
	// Exactly half is not most.
	if _, _, err := readReq(t, jsonl(10, 1, bad[:10]...)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readReq(t, "request_id,ttft\n"); err == nil || !strings.Contains(err.Error(), "no requests") {
		t.Fatalf("header only: %v", err)
	}
}

func TestUnits(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"ms per token", jsonl(30, 1000), "look like milliseconds, not seconds: (e2e − ttft) ÷ (output tokens − 1) has a median of 20 s per token"},
		{"ms gaps", strings.Repeat(`{"ttft": 0.1, "e2e": 0.5, "itl": [20, 21, 19, 22, 20]}`+"\n", 5), "the median gap between streamed chunks is 20 s"},
		{"ms ttft alone", ttftOnly(30, 1000), "ttft looks like milliseconds, not seconds: median 245 s, and nine requests in ten over 129 s"},
		{"seconds in ms names", strings.ReplaceAll(strings.ReplaceAll(jsonl(30, 1), `"ttft"`, `"ttft_ms"`), `"e2e"`, `"e2e_ms"`),
			"ttft_ms and e2e_ms look like seconds, not milliseconds"},
		{"seconds in ttft_ms alone", strings.ReplaceAll(ttftOnly(30, 1), `"ttft"`, `"ttft_ms"`), "ttft_ms looks like seconds"},
	} {
		_, _, err := readReq(t, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// Milliseconds under their _ms names are read as such.
	in := strings.ReplaceAll(strings.ReplaceAll(jsonl(30, 1000), `"ttft"`, `"ttft_ms"`), `"e2e"`, `"e2e_ms"`)
	a, _, err := readReq(t, in)
	if err != nil {
		t.Fatal(err)
	}
	if v := fill(a); math.Abs(v.Service.ClientTPOT.P50-0.02) > 1e-9 || v.Service.ClientTTFT.Max > 0.2 {
		t.Fatalf("tpot %v ttft %+v", v.Service.ClientTPOT.P50, v.Service.ClientTTFT)
	}
	// An overloaded server: minutes of queueing, sane decoding. Seconds.
	var b strings.Builder
	for i := range 30 {
		ttft := 120 + float64(i)
		fmt.Fprintf(&b, `{"ttft": %g, "e2e": %g, "output_tokens": 200}`+"\n", ttft, ttft+199*0.03)
	}
	if _, _, err := readReq(t, b.String()); err != nil {
		t.Fatalf("overload read as milliseconds: %v", err)
	}
	// TTFT alone, long but with fast requests among them: seconds.
	if _, _, err := readReq(t, ttftOnly(30, 1)+strings.Repeat(`{"ttft": 400}`+"\n", 20)); err != nil {
		t.Fatal(err)
	}
}

// ttftOnly: n requests with only a TTFT of 100–380 ms, times scale.
func ttftOnly(n int, scale float64) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"ttft": %g}`+"\n", (0.1+float64(i)/100)*scale)
	}
	return b.String()
}

// A bad optional field is dropped; its row stays.
func TestBadFieldsDropped(t *testing.T) {
	in := jsonl(20, 1,
		`{"ttft": 0.1, "e2e": 0.5, "output_tokens": 3, "itl": [0.1, 0.1, 0.1, 0.1, 0.1, 0.1]}`, // 6 gaps, 3 tokens
		`{"ttft": 0.1, "e2e": 0.5, "output_tokens": 5, "itl": [0.1, 0.1, 0.1, 0.1]}`,           // 4 gaps: fine
		`{"ttft": 0.1, "e2e": 0.5, "output_tokens": 5, "itl": [0.1, 0.1, 0.1, 0.4]}`,           // 0.7 s of gaps in 0.4 s
		`{"ttft": 0.1, "e2e": 0.5, "itl": [0.1, -0.1]}`,
		`{"ttft": 0.1, "e2e": 0.5, "itl": [0.1, "x"]}`,
		`{"ttft": 0.1, "e2e": 0.5, "itl": 3}`,
		`{"ttft": 0.1, "e2e": 0.5, "prompt_tokens": -4}`,
		`{"ttft": 0.1, "e2e": 0.5, "prompt_tokens": 1e308}`,
		`{"ttft": 0.1, "e2e": 0.5, "queue_time": -1}`,
		`{"ttft": 0.1, "e2e": 0.5, "server_ttft": 0.3}`,
		`{"ttft": 0.1, "e2e": 0.5, "start_time": Inf}`)
	a, notes, err := readReq(t, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Skipped()) != 0 || a.Requests() != 31 {
		t.Fatalf("skipped %v, requests %d", a.Skipped(), a.Requests())
	}
	note := strings.Join(notes, " | ")
	for _, w := range []string{"itl on 3 (a negative, non-finite or non-number gap)", "itl on 1 (more gaps than output tokens + 1)",
		"itl on 1 (gaps add up to more than e2e − ttft)", "token counts on 2 (negative, non-finite or over 100M)", "server-side times on 1", "server_ttft on 1 (above ttft)", "start_time on 1"} {
		if !strings.Contains(note, w) {
			t.Errorf("notes %q lack %q", note, w)
		}
	}
	v := fill(a)
	if v.Service.ClientITL.Count != 4 || v.Cond.PromptTokens.Count != 20 || evidence.Present(v.Service.NetworkShare) {
		t.Fatalf("itl %v prompt %v network %v", v.Service.ClientITL.Count, v.Cond.PromptTokens.Count, v.Service.NetworkShare)
	}
}

func TestCSVNonFiniteAndLines(t *testing.T) {
	in := "request_id,ttft,e2e,output_tokens\n" + "a,0.1,0.5,10\n" + "b,inf,0.5,10\n" + "c,0.1,1e400,10\n" +
		"d,0.1\"x,0.5,10\n" + "e,0.1,0.4,NaN\n"
	for range 20 {
		in += "f,0.1,0.5,10\n"
	}
	a, notes, err := ReadRequests(strings.NewReader(in), "r.csv")
	if err != nil {
		t.Fatal(err)
	}
	if s := a.Skipped(); s["non_finite"] != 2 || s["unreadable"] != 1 {
		t.Fatalf("skipped %v notes %v", s, notes)
	}
	if n := strings.Join(notes, " "); !strings.Contains(n, "first line 3)") || !strings.Contains(n, "first line 5:") || !strings.Contains(n, "token counts on 1") {
		t.Fatalf("notes %v", notes)
	}
}

// What a file given to the wrong flag is, in one line.
func TestWrongFormat(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[{"ttft": 0.1}, {"ttft": 0.2}]`, "is a JSON array; request files are JSONL, one object per line: convert with jq -c '.[]'"},
		{"  \n[\n", "is a JSON array"},
		{"{\n  \"completed\": 10,\n  \"ttfts\": [0.1]\n}\n", "is vllm bench serve result JSON|bench"},
		{`{"completed": 10, "ttfts": [0.1], "itls": [[]]}` + "\n", "is vllm bench serve result JSON|bench"},
		{"{\n  \"ttft\": 0.1\n}\n", "is one JSON object over several lines"},
		{"\xef\xbb\xbf", "empty request file"},
	} {
		_, _, err := readReq(t, c.in)
		if !wrongFormat(err, c.want) {
			t.Errorf("%q: got %v, want %q", c.in, err, c.want)
		}
	}
	// A byte-order mark before JSONL is read past.
	if _, _, err := readReq(t, "\xef\xbb\xbf"+jsonl(3, 1)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{jsonl(3, 1), "is per-request JSONL, not a vllm bench serve result|requests"},
		{"request_id,ttft,e2e\nr1,0.1,0.2\n", "is per-request CSV, not a vllm bench serve result|requests"},
		{`[{"ttft": 0.1}]`, "is a JSON array of requests, not a vllm bench serve result: convert with jq -c '.[]'|requests"},
		{`[1, 2]`, "is a JSON array, not a vllm bench serve result object"},
	} {
		_, _, err := ReadBench(strings.NewReader(c.in), "b.json")
		if !wrongFormat(err, c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("bench %q: got %v, want %q", c.in, err, c.want)
		}
	}
}

// wrongFormat checks an error's text and, after "|", the reader its
// FormatError names.
func wrongFormat(err error, want string) bool {
	text, reader, _ := strings.Cut(want, "|")
	if err == nil || !strings.Contains(err.Error(), text) {
		return false
	}
	var fe *FormatError
	return reader == "" || errors.As(err, &fe) && fe.Reader == reader
}

// benchJSON: n requests of a detailed run, with the given edits.
func benchJSON(n int, edit func(i int, ttft *string, itl *string, out *int)) string {
	var ttfts, itls, outs []string
	for i := range n {
		ttft, itl, out := fmt.Sprintf("%g", 0.05+float64(i)/1000), "[0.02, 0.021, 0.019, 0.02]", 5
		if edit != nil {
			edit(i, &ttft, &itl, &out)
		}
		ttfts, itls, outs = append(ttfts, ttft), append(itls, itl), append(outs, fmt.Sprint(out))
	}
	return fmt.Sprintf(`{"completed": %d, "request_rate": "inf", "median_ttft_ms": NaN, "ttfts": [%s], "itls": [%s], "output_lens": [%s], "input_lens": [%s]}`,
		n, strings.Join(ttfts, ","), strings.Join(itls, ","), strings.Join(outs, ","), strings.Repeat("100,", n-1)+"100")
}

func TestBenchRows(t *testing.T) {
	// Python writes NaN and Infinity: non-finite rows, not a parse error.
	in := benchJSON(30, func(i int, ttft, itl *string, out *int) {
		switch i {
		case 3:
			*ttft = "NaN"
		case 4:
			*ttft = "-Infinity"
		case 5:
			*ttft = "-0.2"
		case 6:
			*itl = "[0.02, Infinity]"
		case 7:
			*itl = "[0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02]" // 8 gaps, 5 tokens
		case 8:
			*ttft, *itl, *out = "0", "[]", 0 // failed without a message
		}
	})
	a, notes, err := ReadBench(strings.NewReader(in), "b.json")
	if err != nil {
		t.Fatal(err)
	}
	if s := a.Skipped(); s["non_finite"] != 2 || s["non_positive"] != 1 || len(s) != 2 {
		t.Fatalf("skipped %v", s)
	}
	note := strings.Join(notes, " | ")
	for _, w := range []string{"3 of 30 rows skipped", "first index 3", "first index 5: ttft -0.2", "itl on 1 (a negative", "itl on 1 (more gaps",
		"1 requests with TTFT 0 and no output counted as failed"} {
		if !strings.Contains(note, w) {
			t.Errorf("notes %q lack %q", note, w)
		}
	}
	v := fill(a)
	// Rows 6 and 7 keep their TTFT but have no gaps, hence no e2e.
	if v.Service.ClientTTFT.Count != 26 || v.Service.ClientE2E.Count != 24 || math.Abs(v.Service.ClientFailedShare-1.0/27) > 1e-9 {
		t.Fatalf("ttft %v e2e %v failed %v", v.Service.ClientTTFT.Count, v.Service.ClientE2E.Count, v.Service.ClientFailedShare)
	}

	for _, c := range []struct{ in, want string }{
		{benchJSON(30, func(i int, ttft, itl *string, out *int) { *ttft = "50"; *itl = "[20, 21, 19, 20]" }),
			"times look like milliseconds, not seconds: the median gap between streamed chunks is 20 s; vllm bench serve writes ttfts and itls in seconds"},
		{benchJSON(30, func(i int, ttft, itl *string, out *int) {
			if i%3 > 0 {
				*ttft = "-1"
			}
		}), "20 of 30 rows are invalid, too many to trust the rest: 20 zero or negative latency (first index 1: ttft -1)"},
		{strings.Replace(benchJSON(3, nil), `"output_lens": [5,5,5]`, `"output_lens": [5,5]`, 1), "ttfts has 3 entries but output_lens has 2"},
		{`{"completed": 1, "ttfts": "fast"}`, "ttfts is not an array of numbers"},
		{`{"completed": 0, "failed": 0, "median_ttft_ms": NaN}`, "the benchmark completed no requests"},
		{`{"completed": 10, "median_ttft_ms": 0.031, "median_tpot_ms": 0.008}`, "median_ttft_ms looks like seconds, not milliseconds: 0.031 ms to a first token"},
		{`{"completed": 10, "mean_ttft_ms": 30, "mean_tpot_ms": 0.02}`, "mean_tpot_ms looks like seconds"},
	} {
		_, _, err := ReadBench(strings.NewReader(c.in), "b.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	// A summary with NaN (no request finished a stage) reads it as missing.
	a, _, err = ReadBench(strings.NewReader(`{"completed": 10, "median_ttft_ms": 30, "mean_tpot_ms": NaN, "p99_itl_ms": Infinity}`), "b.json")
	if err != nil {
		t.Fatal(err)
	}
	if v := fill(a); v.Service.ClientTTFT.P50 != 0.03 || evidence.Present(v.Service.ClientTPOT.Mean) || evidence.Present(v.Service.ClientITL.P99) {
		t.Fatalf("ttft %v tpot %v itl %v", v.Service.ClientTTFT.P50, v.Service.ClientTPOT.Mean, v.Service.ClientITL.P99)
	}
	// A closed loop written as a bare Infinity is still a closed loop.
	a, _, err = ReadBench(strings.NewReader(`{"completed": 10, "median_ttft_ms": 30, "request_rate": Infinity, "max_concurrency": Infinity}`), "b.json")
	if err != nil {
		t.Fatal(err)
	}
	if v := fill(a); v.Cond.OpenLoop != 0 || evidence.Present(v.Cond.MaxConcurrency) {
		t.Fatalf("open loop %v, max concurrency %v", v.Cond.OpenLoop, v.Cond.MaxConcurrency)
	}
}

func TestNonFiniteToNull(t *testing.T) {
	in := `{"a": NaN, "b": [Infinity, -Infinity, 1], "c": "NaN \" Infinity", "d": "\\"}`
	want := `{"a": null, "b": ["Infinity", null, 1], "c": "NaN \" Infinity", "d": "\\"}`
	if got := string(nonFiniteToNull([]byte(in))); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// badInputs seed the fuzzers with every path validation takes.
var badInputs = []string{
	jsonl(12, 1, `{"ttft": -0.1, "e2e": 2}`, `{"ttft": 0.5, "e2e": 0.2}`, `{"ttft": NaN}`, `{"ttft": 0.1, "e2e": 0.5, "output_tokens": 2, "itl": [0.1, 0.1, 0.1, 0.1]}`),
	jsonl(12, 1000),
	strings.ReplaceAll(jsonl(12, 1), `"ttft"`, `"ttft_ms"`),
	`[{"ttft": 0.1}]`,
	"{\n \"completed\": 1\n}",
	"request_id,ttft_ms,e2e,itl\nr,inf,1e400,x\n",
	benchJSON(12, func(i int, ttft, itl *string, out *int) {
		if i == 2 {
			*ttft, *itl = "NaN", "[Infinity]"
		}
	}),
	`{"completed": 10, "median_ttft_ms": 0.031}`,
	`{"completed": 3, "ttfts": [0.1, 0.2, 0.3], "output_lens": [1]}`,
}

// An empty key is no field of the schema.
func TestEmptyKey(t *testing.T) {
	if i, _ := schemaIndex([]byte("")); i != -1 {
		t.Fatalf("empty key read as %s", schema[i].key)
	}
}

// The reservoir keeps a uniform sample of what passed through it, late
// values as likely as early ones, and everything while it is not full.
func TestSampleUniform(t *testing.T) {
	s := newSample(1)
	for i := range sampleSize {
		s.add(float64(i))
	}
	if s.n() != sampleSize || len(s.vals) != sampleSize || s.vals[sampleSize-1] != sampleSize-1 {
		t.Fatalf("a full reservoir lost values: %d kept of %d", len(s.vals), s.n())
	}
	const n = 2_000_000
	var deciles [10]int
	var mean float64
	// A uniform reservoir takes value t with chance size/t once full: it
	// takes size·(H(n) − H(size)) values in all, give or take its root.
	want := 0.0
	for i := sampleSize + 1; i <= n; i++ {
		want += float64(sampleSize) / float64(i)
	}
	for seed := range int64(5) {
		s := newSample(seed)
		taken := 0
		for i := range n {
			next := s.next
			s.add(float64(i))
			if s.next != next && i >= sampleSize {
				taken++
			}
		}
		if math.Abs(float64(taken)-want) > 5*math.Sqrt(want) {
			t.Errorf("seed %d: the full reservoir took %d values, want %.0f ± %.0f", seed, taken, want, math.Sqrt(want))
		}
		if len(s.vals) != sampleSize || s.n() != n {
			t.Fatalf("kept %d of %d", len(s.vals), s.n())
		}
		for _, v := range s.vals {
			deciles[int(v)*10/n]++
			mean += v / n / sampleSize / 5
		}
	}
	// 5 × 4096 draws: a decile's count is 2048 ± 43 (binomial σ); the
	// mean is 0.5 ± 0.002.
	for k, c := range deciles {
		if c < 2048-5*43 || c > 2048+5*43 {
			t.Errorf("decile %d holds %d of %d", k, c, 5*sampleSize)
		}
	}
	if math.Abs(mean-0.5) > 0.01 {
		t.Errorf("mean position %.4f, want 0.5", mean)
	}
}
