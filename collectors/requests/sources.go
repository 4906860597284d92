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
	"unicode"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// Bounds on what one read may hold: memory stays flat for request files of
// any length, and a runaway line or file is refused instead of filling RAM.
// Variables only so that the quick tests can meet them with small inputs.
var (
	maxBench int64 = 1 << 30 // a whole bench result JSON
	maxLine        = 64 << 20
)

// ReadBench reads `vllm bench serve` (or benchmark_serving.py) result JSON:
// one object, or one per line as --append-result writes them (the last run
// is used). Detailed arrays (ttfts, itls in seconds) give per-request
// evidence; without them only the summary statistics (in ms) are used.
//
// The document is read once, streaming (stream.go): the per-request arrays
// go into compact columns, never into a tree of the document. From a file
// (an io.Seeker) the ITL gaps, most of the document, are not kept either;
// in the rare case where that cannot give what keeping them gives (a
// request's gaps that turn out not to count), the file is read again,
// keeping them.
func ReadBench(r io.Reader, from string) (*Accumulator, []string, error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		if pos, err := rs.Seek(0, io.SeekCurrent); err == nil {
			a, notes, err := readBench(r, from, false)
			if !errors.Is(err, errKeepGaps) {
				return a, notes, err
			}
			if _, err := rs.Seek(pos, io.SeekStart); err != nil {
				return nil, nil, fmt.Errorf("%s: cannot read it a second time: %s", from, oneLine(err))
			}
		}
	}
	return readBench(r, from, true)
}

// errKeepGaps: streamed gaps went where take would not have put them.
var errKeepGaps = errors.New("the ITL gaps must be kept")

func readBench(r io.Reader, from string, keep bool) (*Accumulator, []string, error) {
	m, runs, err := readRuns(r, from, keep)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	if runs > 1 {
		notes = append(notes, fmt.Sprintf("holds %d appended runs; the last one is used", runs))
	}
	if _, ok := m.scalars["completed"]; !ok && !m.hasTTFTs {
		return nil, nil, fmt.Errorf("%s: no completed count or ttfts: not a vllm bench serve result", from)
	}
	a := NewAccumulator()
	a.Run.RequestRate = rate(m.scalars["request_rate"])
	if c, ok := number(m.scalars["max_concurrency"]); ok {
		a.Run.MaxConcurrency = c
	}
	a.Run.Model = modelID(m.scalars["model_id"])
	if !m.ttfts.ok {
		return nil, nil, fmt.Errorf("%s: ttfts is not an array of numbers", from)
	}
	ttfts := m.ttfts.vals
	if len(ttfts) == 0 {
		return summaryOnly(a, m.scalars, from, notes)
	}
	inputs, outputs, starts := m.inputs.column(), m.outputs.column(), m.starts.column()
	for _, c := range []struct {
		name string
		n    int
	}{{"input_lens", len(inputs)}, {"output_lens", len(outputs)}, {"itls", m.itls.len()}, {"start_times", len(starts)}, {"errors", m.errs.len()}} {
		if c.n > 0 && c.n != len(ttfts) {
			return nil, nil, fmt.Errorf("%s: ttfts has %d entries but %s has %d: the per-request arrays do not line up", from, len(ttfts), c.name, c.n)
		}
	}
	a.q.where = "index"
	noOutput := 0
	nITL, nErr := m.itls.len(), m.errs.len()
	for i, ttft := range ttfts {
		rec := Record{TTFT: ttft, Start: at(starts, i), Prompt: at(inputs, i), Output: at(outputs, i),
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
		var pre streamedGaps
		if i < nITL {
			if keep {
				rec.ITLs = m.itls.gaps[m.itls.off[i]:m.itls.off[i+1]:m.itls.off[i+1]]
			} else {
				pre.n, pre.sum = int(m.itls.off[i+1]-m.itls.off[i]), m.itls.sums[i]
				rec.pre = &pre
			}
			if m.itls.bad[i] {
				rec.bad |= bITL
			}
		}
		if i < nErr && m.errs.failed[i] {
			rec.Error = "error"
		}
		// vllm bench serve leaves a request that failed without a message at
		// TTFT 0 with no output.
		if rec.Error == "" && ttft == 0 && len(rec.ITLs) == 0 && pre.n == 0 && !(rec.Output > 0) {
			rec.Error = "no output"
			noOutput++
		}
		if rec.Error != "" {
			rec.TTFT, rec.E2E, rec.ITLs, rec.e2eFromITL, rec.pre = math.NaN(), math.NaN(), nil, false, nil
		}
		a.take(rec, i)
		// The streamed gaps of an entry that is not bad went in whole.
		if in := pre.n > 0 && !m.itls.bad[i]; pre.sampled != in || pre.added != in {
			return nil, nil, errKeepGaps
		}
	}
	if !keep {
		a.q.itl, a.itl = m.itls.sample, m.itls.dist
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
func summaryOnly(a *Accumulator, m map[string]json.RawMessage, from string, notes []string) (*Accumulator, []string, error) {
	// Milliseconds are the format's unit: seconds written there are refused.
	for _, c := range []struct {
		metric string
		below  float64
		what   string
	}{{"ttft", 1, "to a first token"}, {"tpot", 0.5, "per output token"}} {
		for _, stat := range []string{"median", "mean"} {
			key := stat + "_" + c.metric + "_ms"
			if x, ok := number(m[key]); ok && x > 0 {
				if x < c.below {
					return nil, nil, fmt.Errorf("%s: %s looks like seconds, not milliseconds: %.3g ms %s is implausible; the summary statistics must be in milliseconds", from, key, x, c.what)
				}
				break
			}
		}
	}
	a.Run.SummaryOnly = true
	a.Summary = summary(m)
	notes = append(notes, "summary statistics only (run vllm bench serve with --save-detailed for per-request analysis)")
	if completed, ok := number(m["completed"]); ok {
		a.n = completed
		failed, okF := number(m["failed"])
		if okF && completed+failed > 0 {
			a.n, a.failed = completed+failed, failed
		}
		if a.n == 0 {
			return nil, nil, fmt.Errorf("%s: the benchmark completed no requests", from)
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

var bom = []byte("\xef\xbb\xbf")

// FormatError says a file is in another format than its reader expects:
// what it is, which reader takes it ("bench" or "requests", "" for none),
// and a command that converts it, when one does.
type FormatError struct {
	File, Is, Reader, Convert string
}

func (e *FormatError) Error() string {
	msg := e.File + " is " + e.Is
	if e.Convert != "" {
		msg += ": convert with " + e.Convert
	}
	return msg
}

// nonFiniteToNull: Python's json writes NaN and ±Infinity, which JSON lacks.
// NaN and -Infinity become null, Infinity the string "Infinity" (a closed
// loop's request_rate); either is a missing summary value or a non-finite
// per-request one.
func nonFiniteToNull(b []byte) []byte {
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
		if tok := nonFiniteToken(b[i:]); tok > 0 {
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

func nonFiniteToken(b []byte) int {
	for _, t := range []string{"NaN", "Infinity", "-Infinity"} {
		if len(b) >= len(t) && string(b[:len(t)]) == t {
			return len(t)
		}
	}
	return 0
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
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
	return x, err == nil && evidence.Present(x)
}

// modelID reads model_id: a string, on one line, at most 200 characters,
// printable; "" for anything else. It names a target, so a file cannot
// put a line break or a terminal escape into a report.
func modelID(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	s = strings.Join(strings.Fields(s), " ")
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return ""
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200])
	}
	return s
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
// a time. Each row is validated: a bad row is skipped and counted by reason,
// a bad optional field is dropped from a row that is kept. A file whose
// times are in the wrong unit, or whose rows are mostly bad, is refused.
func ReadRequests(r io.Reader, from string) (*Accumulator, []string, error) {
	return readRequests(r, from, func(br *bufio.Reader, a *Accumulator, from string) error { return readJSONL(br, a, from) })
}

// readRequests is ReadRequests with its JSONL reader given, so that a test
// can hold the parallel reader to the sequential one on everything else.
func readRequests(r io.Reader, from string, jsonl func(*bufio.Reader, *Accumulator, string) error) (*Accumulator, []string, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if b, _ := br.Peek(len(bom)); bytes.Equal(b, bom) {
		_, _ = br.Discard(len(bom)) // cannot fail: Peek has buffered them
	}
	head, _ := br.Peek(64 << 10)
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 {
		return nil, nil, fmt.Errorf("%s: empty request file", from)
	}
	if err := notRequests(head, from); err != nil {
		return nil, nil, err
	}
	a := NewAccumulator()
	var err error
	if head[0] == '{' {
		err = jsonl(br, a, from)
	} else {
		err = readCSV(br, a, from)
	}
	if err != nil {
		return nil, nil, err
	}
	notes, err := a.finish(from, "requests")
	if err != nil {
		return nil, nil, err
	}
	if !a.Exact() {
		notes = append(notes, fmt.Sprintf("%d requests: quantiles come from a sketch, within %.0f%% of the exact value", a.Requests(), SketchAccuracy*100))
	}
	return a, notes, nil
}

// notRequests names what a file given as per-request data is instead.
func notRequests(head []byte, from string) error {
	switch {
	case head[0] == '[':
		return &FormatError{File: from, Is: "a JSON array; request files are JSONL, one object per line", Convert: "jq -c '.[]' " + from}
	case head[0] == '{' && string(bytes.TrimSpace(firstLine(head))) == "{":
		if looksBench(head) {
			return &FormatError{File: from, Is: "vllm bench serve result JSON", Reader: "bench"}
		}
		return &FormatError{File: from, Is: "one JSON object over several lines; request files are JSONL, one object per line", Convert: "jq -c . " + from}
	}
	return nil
}

func looksBench(b []byte) bool {
	for _, k := range []string{`"ttfts"`, `"completed"`, `"request_throughput"`, `"median_ttft_ms"`} {
		if bytes.Contains(b, []byte(k)) {
			return true
		}
	}
	return false
}

func benchObject(v *fastjson.Value) bool {
	if v.Get("ttft") != nil || v.Get("ttft_ms") != nil {
		return false
	}
	for _, k := range []string{"ttfts", "completed", "request_throughput", "median_ttft_ms"} {
		if v.Get(k) != nil {
			return true
		}
	}
	return false
}

func readCSV(br *bufio.Reader, a *Accumulator, from string) error {
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s: no CSV header: %s", from, oneLine(err))
	}
	cols := map[string]int{}
	for i, h := range head {
		cols[strings.TrimSpace(h)] = i
	}
	_, s := cols["ttft"]
	_, ms := cols["ttft_ms"]
	if !s && !ms {
		return fmt.Errorf("%s: CSV header has no ttft (or ttft_ms) column (see docs/requests.md)", from)
	}
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return fmt.Errorf("%s: %s", from, oneLine(err))
			}
			a.q.skip(rUnreadable, pe.StartLine, oneLine(err))
			continue
		}
		line, _ := cr.FieldPos(0)
		rec, e := csvRecord(cols, row)
		if e != nil {
			a.q.skip(rUnreadable, line, oneLine(e))
			continue
		}
		a.take(rec, line)
	}
}

// schema lists the numeric fields of docs/requests.md; a time field may
// instead be given in milliseconds under its _ms name.
var schema = []struct {
	key, msKey string
	bad, ms    uint16
}{{"prompt_tokens", "", bTokens, 0}, {"output_tokens", "", bTokens, 0}, {"max_tokens", "", bTokens, 0},
	{"ttft", "ttft_ms", bTTFT, msTTFT}, {"e2e", "e2e_ms", bE2E, msE2E}, {"queue_time", "queue_time_ms", bStage, 0},
	{"prefill_time", "prefill_time_ms", bStage, 0}, {"decode_time", "decode_time_ms", bStage, 0},
	{"server_ttft", "server_ttft_ms", bStage, 0}}

func (r *Record) slot(i int) *float64 {
	return [...]*float64{&r.Prompt, &r.Output, &r.MaxTokens, &r.TTFT, &r.E2E, &r.Queue, &r.Prefill, &r.Decode, &r.ServerTTFT}[i]
}

// set stores one numeric field: a non-finite value is flagged, not kept.
func (r *Record) set(i int, x float64, inMs bool) {
	f := schema[i]
	switch {
	case !evidence.Present(x):
		r.bad |= f.bad
		x = math.NaN()
	case inMs:
		x /= 1000
		r.ms |= f.ms
	}
	*r.slot(i) = x
}

// parseLine reads one line of the per-request JSONL schema (docs/requests.md)
// in one pass over its keys. itls is reused between lines: Add copies what
// it keeps.
func parseLine(p *fastjson.Parser, line []byte, itls *[]float64) (Record, error) {
	v, err := p.ParseBytes(line)
	if err != nil {
		return Record{}, err
	}
	o, err := v.Object()
	if err != nil {
		return Record{}, errors.New("not a JSON object")
	}
	var vals, msVals [9]*fastjson.Value // by schema index
	var start, itl, itlMs, streaming, errV, id *fastjson.Value
	o.Visit(func(k []byte, x *fastjson.Value) {
		if x.Type() == fastjson.TypeNull {
			return
		}
		switch string(k) {
		case "start_time":
			start = x
		case "itl":
			itl = x
		case "itl_ms":
			itlMs = x
		case "streaming":
			streaming = x
		case "error":
			errV = x
		case "request_id":
			id = x
		default:
			if i, ms := schemaIndex(k); i >= 0 && ms {
				msVals[i] = x
			} else if i >= 0 {
				vals[i] = x
			}
		}
	})
	rec := Record{}
	for i, f := range schema {
		*rec.slot(i) = math.NaN()
		x, inMs := vals[i], false
		if x == nil && msVals[i] != nil {
			x, inMs = msVals[i], true
		}
		if x == nil {
			continue
		}
		n, err := x.Float64()
		if err != nil {
			return rec, fmt.Errorf("%s is not a number", f.key)
		}
		rec.set(i, n, inMs)
	}
	switch {
	case start == nil:
		rec.Start = math.NaN()
	case start.Type() == fastjson.TypeNumber:
		rec.Start = start.GetFloat64()
		if !evidence.Present(rec.Start) {
			rec.bad |= bStart
			rec.Start = math.NaN()
		}
	case start.Type() == fastjson.TypeString:
		if rec.Start, err = startTime(string(start.GetStringBytes())); err != nil {
			return rec, err
		}
	default:
		return rec, errors.New("start_time: want Unix seconds or RFC 3339")
	}
	scale := 1.0
	if itl == nil && itlMs != nil {
		itl, scale = itlMs, 1e-3
		rec.ms |= msITL
	}
	switch {
	case itl == nil:
	case itl.Type() != fastjson.TypeArray:
		rec.bad |= bITL
	default:
		*itls = (*itls)[:0]
		for _, g := range itl.GetArray() {
			f, err := g.Float64()
			if err != nil {
				rec.bad |= bITL
				break
			}
			*itls = append(*itls, f*scale)
		}
		if rec.bad&bITL == 0 {
			rec.ITLs = *itls
		}
	}
	if streaming != nil {
		b, err := streaming.Bool()
		if err != nil {
			return rec, errors.New("streaming is not true or false")
		}
		rec.Streaming = &b
	}
	if errV != nil && errV.Type() == fastjson.TypeString {
		rec.Error = string(errV.GetStringBytes())
	}
	if id != nil && id.Type() == fastjson.TypeString {
		rec.ID = string(id.GetStringBytes())
	}
	return rec, nil
}

// schemaIndex finds a numeric field by name, and whether it is the _ms name.
func schemaIndex(k []byte) (int, bool) {
	switch string(k) {
	case "prompt_tokens":
		return 0, false
	case "output_tokens":
		return 1, false
	case "max_tokens":
		return 2, false
	case "ttft":
		return 3, false
	case "ttft_ms":
		return 3, true
	case "e2e":
		return 4, false
	case "e2e_ms":
		return 4, true
	case "queue_time":
		return 5, false
	case "queue_time_ms":
		return 5, true
	case "prefill_time":
		return 6, false
	case "prefill_time_ms":
		return 6, true
	case "decode_time":
		return 7, false
	case "decode_time_ms":
		return 7, true
	case "server_ttft":
		return 8, false
	case "server_ttft_ms":
		return 8, true
	}
	return -1, false
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
	var rec Record
	for i, f := range schema {
		*rec.slot(i) = math.NaN()
		s, ok := get(f.key)
		inMs := false
		if !ok && f.msKey != "" {
			s, ok = get(f.msKey)
			inMs = true
		}
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil && !math.IsInf(x, 0) { // out of range is ±Inf: non-finite, not unreadable
			return rec, fmt.Errorf("%s %q is not a number", f.key, s)
		}
		rec.set(i, x, inMs)
	}
	rec.Start = math.NaN()
	if s, ok := get("start_time"); ok {
		if x, err := strconv.ParseFloat(s, 64); err == nil || math.IsInf(x, 0) {
			rec.Start = x
			if !evidence.Present(x) {
				rec.bad |= bStart
				rec.Start = math.NaN()
			}
		} else {
			var err error
			if rec.Start, err = startTime(s); err != nil {
				return rec, err
			}
		}
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
	return rec, nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// Collect reads requests a program measured itself (a probe's) as a file's
// rows are read: each validated, the unsound left out and named in notes.
// Times are seconds.
func Collect(recs []Record, run Run, from string) (*Accumulator, []string, error) {
	a := NewAccumulator()
	a.Run = run
	for i, r := range recs {
		a.take(r, i+1)
	}
	notes, err := a.finish(from, "requests")
	if err != nil {
		return nil, nil, err
	}
	return a, notes, nil
}
