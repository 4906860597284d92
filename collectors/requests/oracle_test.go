package requests

// The reader of vllm bench serve results as it was when it loaded the whole
// document (before streaming), frozen: the differential tests compare the
// streaming ReadBench with it, value for value and error for error.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// oldReadBench is ReadBench as it was before it streamed, kept as the
// oracle of the differential tests. It reads `vllm bench serve` (or benchmark_serving.py) result JSON:
// one object, or one per line as --append-result writes them (the last run
// is used). Detailed arrays (ttfts, itls in seconds) give per-request
// evidence; without them only the summary statistics (in ms) are used.
func oldReadBench(r io.Reader, from string) (*Accumulator, []string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxBench+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %s", from, oneLine(err))
	}
	if int64(len(data)) > maxBench {
		return nil, nil, fmt.Errorf("%s is larger than %d MiB, more than a benchmark result holds: split the run, or give its requests as per-request JSONL, which streams", from, maxBench>>20)
	}
	data = bytes.TrimLeft(bytes.TrimPrefix(data, bom), " \t\r\n")
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("%s: empty benchmark result", from)
	}
	if err := oldNotBench(data, from); err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(oldNonFiniteToNull(data)))
	dec.UseNumber()
	var runs []map[string]json.RawMessage
	for {
		var m map[string]json.RawMessage
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if len(runs) > 0 {
				break // a cut-off last line of an appended file: keep the runs before it
			}
			return nil, nil, fmt.Errorf("%s: not vllm bench serve result JSON: %s", from, oneLine(err))
		}
		if len(runs) == 0 && oldRequestObject(m) {
			return nil, nil, &FormatError{File: from, Is: "per-request JSONL, not a vllm bench serve result", Reader: "requests"}
		}
		runs = append(runs, m)
	}
	if len(runs) == 0 {
		return nil, nil, fmt.Errorf("%s: empty benchmark result", from)
	}
	var notes []string
	if len(runs) > 1 {
		notes = append(notes, fmt.Sprintf("holds %d appended runs; the last one is used", len(runs)))
	}
	m := runs[len(runs)-1]
	if _, ok := m["completed"]; !ok {
		if _, ok2 := m["ttfts"]; !ok2 {
			return nil, nil, fmt.Errorf("%s: no completed count or ttfts: not a vllm bench serve result", from)
		}
	}
	a := NewAccumulator()
	a.Run.RequestRate = oldRate(m["request_rate"])
	if c, ok := oldNumber(m["max_concurrency"]); ok {
		a.Run.MaxConcurrency = c
	}
	a.Run.Model = modelID(m["model_id"])
	var p fastjson.Parser
	ttfts, ok := oldFloats(&p, m["ttfts"])
	if !ok {
		return nil, nil, fmt.Errorf("%s: ttfts is not an array of numbers", from)
	}
	if len(ttfts) == 0 {
		return oldSummaryOnly(a, m, from, notes)
	}
	inputs, _ := oldFloats(&p, m["input_lens"])
	outputs, _ := oldFloats(&p, m["output_lens"])
	starts, _ := oldFloats(&p, m["start_times"])
	itls, itlsBad := oldNested(&p, m["itls"])
	errs := oldStringsOf(&p, m["errors"])
	for _, c := range []struct {
		name string
		n    int
	}{{"input_lens", len(inputs)}, {"output_lens", len(outputs)}, {"itls", len(itls)}, {"start_times", len(starts)}, {"errors", len(errs)}} {
		if c.n > 0 && c.n != len(ttfts) {
			return nil, nil, fmt.Errorf("%s: ttfts has %d entries but %s has %d: the per-request arrays do not line up", from, len(ttfts), c.name, c.n)
		}
	}
	a.q.where = "index"
	noOutput := 0
	for i, ttft := range ttfts {
		rec := Record{TTFT: ttft, Start: oldAt(starts, i), Prompt: oldAt(inputs, i), Output: oldAt(outputs, i),
			MaxTokens: math.NaN(), Queue: math.NaN(), Prefill: math.NaN(), Decode: math.NaN(), ServerTTFT: math.NaN(),
			e2eFromITL: true}
		// The arrays hold an entry for every request: NaN there was not a finite number.
		if math.IsNaN(ttft) {
			rec.bad |= bTTFT
		}
		if (i < len(inputs) && math.IsNaN(inputs[i])) || (i < len(outputs) && math.IsNaN(outputs[i])) {
			rec.bad |= bTokens
		}
		if i < len(starts) && math.IsNaN(starts[i]) {
			rec.bad |= bStart
		}
		if i < len(itls) {
			rec.ITLs = itls[i]
			if itlsBad[i] {
				rec.bad |= bITL
			}
		}
		if i < len(errs) {
			rec.Error = errs[i]
		}
		// vllm bench serve leaves a request that failed without a message at
		// TTFT 0 with no output.
		if rec.Error == "" && ttft == 0 && len(rec.ITLs) == 0 && !(rec.Output > 0) {
			rec.Error = "no output"
			noOutput++
		}
		if rec.Error != "" {
			rec.TTFT, rec.E2E, rec.ITLs, rec.e2eFromITL = math.NaN(), math.NaN(), nil, false
		}
		a.take(rec, i)
	}
	more, err := a.finish(from, "bench")
	if err != nil {
		return nil, nil, err
	}
	if noOutput > 0 {
		notes = append(notes, fmt.Sprintf("%d requests with TTFT 0 and no output counted as failed", noOutput))
	}
	return a, append(notes, more...), nil
}

// summaryOnly reads a benchmark saved without --save-detailed.
func oldSummaryOnly(a *Accumulator, m map[string]json.RawMessage, from string, notes []string) (*Accumulator, []string, error) {
	// Milliseconds are the format's unit: seconds written there are refused.
	for _, c := range []struct {
		metric string
		below  float64
		what   string
	}{{"ttft", 1, "to a first token"}, {"tpot", 0.5, "per output token"}} {
		for _, stat := range []string{"median", "mean"} {
			key := stat + "_" + c.metric + "_ms"
			if x, ok := oldNumber(m[key]); ok && x > 0 {
				if x < c.below {
					return nil, nil, fmt.Errorf("%s: %s looks like seconds, not milliseconds: %.3g ms %s is implausible; the summary statistics must be in milliseconds", from, key, x, c.what)
				}
				break
			}
		}
	}
	a.Run.SummaryOnly = true
	a.Summary = oldSummary(m)
	notes = append(notes, "summary statistics only (run vllm bench serve with --save-detailed for per-request analysis)")
	if completed, ok := oldNumber(m["completed"]); ok {
		a.n = completed
		failed, okF := oldNumber(m["failed"])
		if okF && completed+failed > 0 {
			a.n, a.failed = completed+failed, failed
		}
		if a.n == 0 {
			return nil, nil, fmt.Errorf("%s: the benchmark completed no requests", from)
		}
		out, _ := oldNumber(m["total_output_tokens"])
		tpot, okT := oldNumber(m["mean_tpot_ms"])
		itl, okI := oldNumber(m["mean_itl_ms"])
		if okT && okI && tpot == 0 && itl == 0 && completed > 0 && out/completed > 1 {
			// Multi-token answers with no gaps: the client did not stream.
			a.multi, a.streamed = completed, 0
		}
	}
	return a, notes, nil
}

// notBench names what a file given as a benchmark result is instead, when it can tell.
func oldNotBench(data []byte, from string) error {
	switch first := oldFirstLine(data); {
	case data[0] == '[' && bytes.Contains(first, []byte(`"ttft"`)):
		return &FormatError{File: from, Is: "a JSON array of requests, not a vllm bench serve result", Reader: "requests", Convert: "jq -c '.[]' " + from}
	case data[0] == '[':
		return fmt.Errorf("%s is a JSON array, not a vllm bench serve result object", from)
	case data[0] != '{' && bytes.Contains(first, []byte("ttft")) && bytes.Contains(first, []byte(",")):
		return &FormatError{File: from, Is: "per-request CSV, not a vllm bench serve result", Reader: "requests"}
	}
	return nil
}

// requestObject: one request of the per-request schema, not a benchmark run.
func oldRequestObject(m map[string]json.RawMessage) bool {
	_, ttfts := m["ttfts"]
	_, completed := m["completed"]
	_, ttft := m["ttft"]
	_, ttftMs := m["ttft_ms"]
	return (ttft || ttftMs) && !ttfts && !completed
}

// oldNonFiniteToNull: Python's json writes NaN and ±Infinity, which JSON lacks.
// NaN and -Infinity become null, Infinity the string "Infinity" (a closed
// loop's request_rate); either is a missing summary value or a non-finite
// per-request one.
func oldNonFiniteToNull(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	out := make([]byte, 0, len(b))
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			out = append(out, c)
			continue
		}
		if c == '"' {
			inStr = true
		}
		if tok := oldNonFiniteToken(b[i:]); tok > 0 {
			if b[i] == 'I' {
				out = append(out, `"Infinity"`...)
			} else {
				out = append(out, "null"...)
			}
			i += tok - 1
			continue
		}
		out = append(out, c)
	}
	return out
}

func oldNonFiniteToken(b []byte) int {
	for _, t := range []string{"NaN", "Infinity", "-Infinity"} {
		if len(b) >= len(t) && string(b[:len(t)]) == t {
			return len(t)
		}
	}
	return 0
}

// floats reads a JSON array of numbers; an entry that is null (NaN or
// ±Infinity in the file), not finite or not a number is NaN. ok is false
// when raw is there but not an array.
func oldFloats(p *fastjson.Parser, raw json.RawMessage) ([]float64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	v, err := p.ParseBytes(raw)
	if err != nil || v.Type() != fastjson.TypeArray {
		return nil, false
	}
	arr := v.GetArray()
	out := make([]float64, len(arr))
	for i, x := range arr {
		out[i] = oldFinite(x)
	}
	return out, true
}

func oldFinite(x *fastjson.Value) float64 {
	if f, err := x.Float64(); err == nil && evidence.Present(f) {
		return f
	}
	return math.NaN()
}

// nested reads itls: an array of arrays of gaps. bad[i] is set when entry
// i holds something other than finite numbers.
func oldNested(p *fastjson.Parser, raw json.RawMessage) (out [][]float64, bad []bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	v, err := p.ParseBytes(raw)
	if err != nil || v.Type() != fastjson.TypeArray {
		return nil, nil
	}
	arr := v.GetArray()
	out, bad = make([][]float64, len(arr)), make([]bool, len(arr))
	for i, x := range arr {
		if x.Type() != fastjson.TypeArray {
			bad[i] = x.Type() != fastjson.TypeNull
			continue
		}
		inner := x.GetArray()
		out[i] = make([]float64, len(inner))
		for j, g := range inner {
			out[i][j] = oldFinite(g)
			bad[i] = bad[i] || math.IsNaN(out[i][j])
		}
	}
	return out, bad
}

func oldStringsOf(p *fastjson.Parser, raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	v, err := p.ParseBytes(raw)
	if err != nil || v.Type() != fastjson.TypeArray {
		return nil
	}
	arr := v.GetArray()
	out := make([]string, len(arr))
	for i, x := range arr {
		out[i] = string(x.GetStringBytes())
	}
	return out
}

func oldFirstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

func oldAt(s []float64, i int) float64 {
	if i < len(s) {
		return s[i]
	}
	return math.NaN()
}

func oldNumber(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	x, err := strconv.ParseFloat(strings.Trim(string(raw), `"`), 64)
	return x, err == nil && evidence.Present(x)
}

// rate reads request_rate: a number, or "inf" for a closed loop.
func oldRate(raw json.RawMessage) float64 {
	if strings.Contains(strings.ToLower(string(raw)), "inf") {
		return math.Inf(1)
	}
	if x, ok := oldNumber(raw); ok {
		return x
	}
	return math.NaN()
}

// summary turns {mean,median,p90,p99}_{ttft,tpot,itl,e2el}_ms into distributions.
func oldSummary(m map[string]json.RawMessage) map[string]evidence.Dist {
	out := map[string]evidence.Dist{}
	completed, _ := oldNumber(m["completed"])
	for metric, path := range map[string]string{"ttft": "service.client_ttft", "tpot": "service.client_tpot",
		"itl": "service.client_itl", "e2el": "service.client_e2e"} {
		ms := func(key string) float64 {
			if x, ok := oldNumber(m[key+"_"+metric+"_ms"]); ok {
				return x / 1000
			}
			return math.NaN()
		}
		d := evidence.Dist{Count: completed, Mean: ms("mean"), P50: ms("median"), P90: ms("p90"), P95: ms("p95"),
			P99: ms("p99"), Max: math.NaN()}
		if evidence.Present(d.P50) || evidence.Present(d.Mean) {
			out[path] = d
		}
	}
	return out
}
