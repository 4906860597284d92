package requests

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// ReadBench reads `vllm bench serve` (or benchmark_serving.py) result JSON:
// one object, or one per line as --append-result writes them (the last run
// is used). Detailed arrays (ttfts, itls in seconds) give per-request
// evidence; without them only the summary statistics (in ms) are used.
func ReadBench(r io.Reader, from string) (*Accumulator, []string, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
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
		runs = append(runs, m)
	}
	if len(runs) == 0 {
		return nil, nil, fmt.Errorf("%s: empty benchmark result", from)
	}
	var notes []string
	if len(runs) > 1 {
		notes = append(notes, fmt.Sprintf("%s holds %d appended runs; the last one is used", from, len(runs)))
	}
	m := runs[len(runs)-1]
	if _, ok := m["completed"]; !ok {
		if _, ok2 := m["ttfts"]; !ok2 {
			return nil, nil, fmt.Errorf("%s: no completed count or ttfts: not a vllm bench serve result", from)
		}
	}
	a := NewAccumulator()
	a.Run.RequestRate = rate(m["request_rate"])
	if c, ok := number(m["max_concurrency"]); ok {
		a.Run.MaxConcurrency = c
	}
	var ttfts, inputs, outputs, starts []float64
	var itls [][]float64
	var errs []string
	decodeInto(m["ttfts"], &ttfts)
	decodeInto(m["itls"], &itls)
	decodeInto(m["input_lens"], &inputs)
	decodeInto(m["output_lens"], &outputs)
	decodeInto(m["start_times"], &starts)
	decodeInto(m["errors"], &errs)
	if len(ttfts) == 0 {
		a.Run.SummaryOnly = true
		a.Summary = summary(m)
		notes = append(notes, from+": summary statistics only (run vllm bench serve with --save-detailed for per-request analysis)")
		if completed, ok := number(m["completed"]); ok {
			a.n = completed
			if failed, ok := number(m["failed"]); ok && completed+failed > 0 {
				a.n, a.failed = completed+failed, failed
			}
			out, _ := number(m["total_output_tokens"])
			tpot, okT := number(m["mean_tpot_ms"])
			itl, okI := number(m["mean_itl_ms"])
			if okT && okI && tpot == 0 && itl == 0 && completed > 0 && out/completed > 1 {
				// Multi-token answers with no gaps: the client did not stream.
				a.multi, a.streamed = completed, 0
			}
		}
		return a, notes, nil
	}
	for i := range ttfts {
		rec := Record{TTFT: ttfts[i], Start: at(starts, i), Prompt: at(inputs, i), Output: at(outputs, i),
			MaxTokens: math.NaN(), Queue: math.NaN(), Prefill: math.NaN(), Decode: math.NaN(), ServerTTFT: math.NaN()}
		if i < len(errs) {
			rec.Error = errs[i]
		}
		rec.E2E = rec.TTFT
		if i < len(itls) {
			rec.ITLs = itls[i]
			for _, x := range itls[i] {
				rec.E2E += x
			}
		}
		if rec.Error != "" {
			rec.TTFT, rec.E2E = math.NaN(), math.NaN()
		}
		a.Add(rec)
	}
	return a, notes, nil
}

func decodeInto(raw json.RawMessage, dst any) {
	if len(raw) > 0 {
		json.Unmarshal(raw, dst)
	}
}

func at(s []float64, i int) float64 {
	if i < len(s) {
		return s[i]
	}
	return math.NaN()
}

func number(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	x, err := strconv.ParseFloat(strings.Trim(string(raw), `"`), 64)
	return x, err == nil
}

// rate reads request_rate: a number, or "inf" for a closed loop.
func rate(raw json.RawMessage) float64 {
	if strings.Contains(strings.ToLower(string(raw)), "inf") {
		return math.Inf(1)
	}
	if x, ok := number(raw); ok {
		return x
	}
	return math.NaN()
}

// summary turns {mean,median,p90,p99}_{ttft,tpot,itl,e2el}_ms into distributions.
func summary(m map[string]json.RawMessage) map[string]evidence.Dist {
	out := map[string]evidence.Dist{}
	completed, _ := number(m["completed"])
	for metric, path := range map[string]string{"ttft": "service.client_ttft", "tpot": "service.client_tpot",
		"itl": "service.client_itl", "e2el": "service.client_e2e"} {
		ms := func(key string) float64 {
			if x, ok := number(m[key+"_"+metric+"_ms"]); ok {
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

// ReadRequests reads per-request JSONL or CSV (docs/requests.md), one line at
// a time. Lines that cannot be read are counted, not fatal.
func ReadRequests(r io.Reader, from string) (*Accumulator, []string, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	first, err := br.Peek(1)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: empty request file", from)
	}
	a := NewAccumulator()
	var bad int
	var firstBad string
	note := func(line int, err error) {
		bad++
		if firstBad == "" {
			firstBad = fmt.Sprintf("line %d: %s", line, oneLine(err))
		}
	}
	if first[0] == '{' {
		line := 0
		var p fastjson.Parser
		var itls []float64
		for {
			b, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				// A line longer than the buffer: gather it whole.
				long := append([]byte(nil), b...)
				for errors.Is(err, bufio.ErrBufferFull) {
					b, err = br.ReadSlice('\n')
					long = append(long, b...)
				}
				b = long
			}
			if len(bytes.TrimSpace(b)) > 0 {
				line++
				rec, e := parseLine(&p, b, &itls)
				if e != nil {
					note(line, e)
				} else {
					a.Add(rec)
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %v", from, err)
			}
		}
	} else {
		cr := csv.NewReader(br)
		cr.ReuseRecord = true
		cr.FieldsPerRecord = -1
		head, err := cr.Read()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: no CSV header: %s", from, oneLine(err))
		}
		cols := map[string]int{}
		for i, h := range head {
			cols[strings.TrimSpace(h)] = i
		}
		if _, ok := cols["ttft"]; !ok {
			return nil, nil, fmt.Errorf("%s: CSV header has no ttft column (see docs/requests.md)", from)
		}
		line := 1
		for {
			row, err := cr.Read()
			line++
			if err == io.EOF {
				break
			}
			if err != nil {
				note(line, err)
				continue
			}
			rec, e := csvRecord(cols, row)
			if e != nil {
				note(line, e)
				continue
			}
			a.Add(rec)
		}
	}
	var notes []string
	if bad > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d lines could not be read (first: %s)", from, bad, firstBad))
	}
	if a.n == 0 {
		return nil, nil, fmt.Errorf("%s: no readable request (first problem: %s)", from, firstBad)
	}
	if !a.Exact() {
		notes = append(notes, fmt.Sprintf("%s: %d requests: quantiles come from a sketch, within %.0f%% of the exact value", from, a.Requests(), SketchAccuracy*100))
	}
	return a, notes, nil
}

// parseLine reads one line of the per-request JSONL schema (docs/requests.md).
// itls is reused between lines: Add copies what it keeps.
func parseLine(p *fastjson.Parser, line []byte, itls *[]float64) (Record, error) {
	v, err := p.ParseBytes(line)
	if err != nil {
		return Record{}, err
	}
	o, err := v.Object()
	if err != nil {
		return Record{}, errors.New("not a JSON object")
	}
	num := func(k string) (float64, error) {
		x := o.Get(k)
		if x == nil || x.Type() == fastjson.TypeNull {
			return math.NaN(), nil
		}
		f, err := x.Float64()
		if err != nil {
			return 0, fmt.Errorf("%s is not a number", k)
		}
		return f, nil
	}
	rec := Record{}
	for _, f := range []struct {
		key string
		dst *float64
	}{{"prompt_tokens", &rec.Prompt}, {"output_tokens", &rec.Output}, {"max_tokens", &rec.MaxTokens},
		{"ttft", &rec.TTFT}, {"e2e", &rec.E2E}, {"queue_time", &rec.Queue}, {"prefill_time", &rec.Prefill},
		{"decode_time", &rec.Decode}, {"server_ttft", &rec.ServerTTFT}} {
		if *f.dst, err = num(f.key); err != nil {
			return rec, err
		}
	}
	switch st := o.Get("start_time"); {
	case st == nil || st.Type() == fastjson.TypeNull:
		rec.Start = math.NaN()
	case st.Type() == fastjson.TypeNumber:
		rec.Start = st.GetFloat64()
	case st.Type() == fastjson.TypeString:
		if rec.Start, err = startTime(string(st.GetStringBytes())); err != nil {
			return rec, err
		}
	default:
		return rec, errors.New("start_time: want Unix seconds or RFC 3339")
	}
	if x := o.Get("itl"); x != nil && x.Type() == fastjson.TypeArray {
		*itls = (*itls)[:0]
		for _, g := range x.GetArray() {
			f, err := g.Float64()
			if err != nil {
				return rec, errors.New("itl holds a non-number")
			}
			*itls = append(*itls, f)
		}
		rec.ITLs = *itls
	}
	if x := o.Get("streaming"); x != nil && x.Type() != fastjson.TypeNull {
		b, err := x.Bool()
		if err != nil {
			return rec, errors.New("streaming is not true or false")
		}
		rec.Streaming = &b
	}
	if x := o.Get("error"); x != nil && x.Type() == fastjson.TypeString {
		rec.Error = string(x.GetStringBytes())
	}
	if x := o.Get("request_id"); x != nil && x.Type() == fastjson.TypeString {
		rec.ID = string(x.GetStringBytes())
	}
	if !evidence.Present(rec.TTFT) && rec.Error == "" {
		return rec, errors.New("no ttft")
	}
	return rec, nil
}

func startTime(s string) (float64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("start_time %q: want Unix seconds or RFC 3339", s)
	}
	return float64(t.UnixNano()) / 1e9, nil
}

func csvRecord(cols map[string]int, row []string) (Record, error) {
	get := func(name string) (string, bool) {
		i, ok := cols[name]
		if !ok || i >= len(row) || strings.TrimSpace(row[i]) == "" {
			return "", false
		}
		return strings.TrimSpace(row[i]), true
	}
	f := func(name string) (float64, error) {
		s, ok := get(name)
		if !ok {
			return math.NaN(), nil
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("%s %q is not a number", name, s)
		}
		return x, nil
	}
	var rec Record
	var err error
	for _, c := range []struct {
		name string
		dst  *float64
	}{{"prompt_tokens", &rec.Prompt}, {"output_tokens", &rec.Output}, {"max_tokens", &rec.MaxTokens},
		{"ttft", &rec.TTFT}, {"e2e", &rec.E2E}, {"queue_time", &rec.Queue}, {"prefill_time", &rec.Prefill},
		{"decode_time", &rec.Decode}, {"server_ttft", &rec.ServerTTFT}} {
		if *c.dst, err = f(c.name); err != nil {
			return rec, err
		}
	}
	if s, ok := get("start_time"); ok {
		if x, err := strconv.ParseFloat(s, 64); err == nil {
			rec.Start = x
		} else if rec.Start, err = startTime(s); err != nil {
			return rec, err
		}
	} else {
		rec.Start = math.NaN()
	}
	if s, ok := get("streaming"); ok {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return rec, fmt.Errorf("streaming %q is not true or false", s)
		}
		rec.Streaming = &b
	}
	rec.Error, _ = get("error")
	rec.ID, _ = get("request_id")
	if !evidence.Present(rec.TTFT) && rec.Error == "" {
		return rec, errors.New("no ttft")
	}
	return rec, nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
