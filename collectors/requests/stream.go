package requests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unsafe"

	"github.com/valyala/fastjson"
	"github.com/valyala/fastjson/fastfloat"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// The streaming reader of `vllm bench serve` result JSON.
//
// The document is read once, in chunks, by a hand-written tokenizer: the
// top-level object key by key, the per-request arrays straight into compact
// columns (a float64 per request and array, a float64 per ITL gap, a bool
// per error), everything else validated and skipped. Nothing holds the
// document or a tree of it.
//
// What it returns is what the reader that decoded the whole document did
// (oracle_test.go keeps it, and the differential tests hold the two
// together): Python's NaN and ±Infinity read as that reader's rewriting made
// them (NaN and -Infinity as null, Infinity as the string "Infinity"); syntax
// errors worded as encoding/json words them; numbers parsed by fastjson's
// parser; an array nested deeper than fastjson reads counts as unreadable;
// duplicate keys keep the last; appended runs keep the last one that decodes.

const (
	streamChunk  = 1 << 20
	maxJSONDepth = 10000 // encoding/json's nesting limit
	maxKeyLen    = 160   // longer raw keys name nothing read here, escaped or not
)

// abort ends a read whatever was parsed: the input could not be read, or is
// larger than maxBench (the old reader's ReadAll saw these first).
type abort struct{ err error }

// syntaxError is a document that does not decode, worded as encoding/json's
// Decoder words it.
type syntaxError struct{ msg string }

// column is one per-request array of numbers: ok is false when the key is
// there but not an array (null reads as absent).
type column struct {
	vals []float64
	ok   bool
}

func (c *column) column() []float64 {
	if !c.ok {
		return nil
	}
	return c.vals
}

// itlColumn holds itls: request i has off[i+1]-off[i] gaps; bad[i] is set
// when entry i holds something other than finite numbers.
//
// Kept (keep), the gaps are gaps[off[i]:off[i+1]]. Streamed (!keep), they
// are not kept: sums[i] is their sum, bad[i] also marks a negative gap, and
// the gaps of every entry that is not bad go, as they are read, into sample
// and dist, the ITL witnesses of an Accumulator. ReadBench checks that take
// would have added exactly those, and reads the input again kept when not.
type itlColumn struct {
	off   []uint32
	gaps  []float64
	bad   []bool
	valid bool

	keep   bool
	sums   []float64
	sample sample
	dist   dist
	cur    []float64 // the entry being read
}

// resetStreamed empties what streamed gaps went into.
func (c *itlColumn) resetStreamed() {
	c.sums, c.sample, c.dist = c.sums[:0], newITLSample(), dist{}
}

func (c *itlColumn) len() int {
	if !c.valid {
		return 0
	}
	return len(c.bad)
}

// errColumn holds whether each request's errors entry is a non-empty string.
type errColumn struct {
	failed []bool
	valid  bool
}

func (c *errColumn) len() int {
	if !c.valid {
		return 0
	}
	return len(c.failed)
}

// benchRun is one run of the document, as columns.
type benchRun struct {
	// scalars holds the run-level values read (request_rate, completed, the
	// summary statistics…) as raw JSON, NaN and Infinity rewritten; a
	// composite value is kept as "[" (no number).
	scalars  map[string]json.RawMessage
	hasTTFTs bool // "ttfts" is a key
	hasTTFT  bool // "ttft" or "ttft_ms" is a key: one request, not a run

	ttfts, inputs, outputs, starts column
	itls                           itlColumn
	errs                           errColumn
}

func (r *benchRun) reset() {
	clear(r.scalars)
	if r.scalars == nil {
		r.scalars = map[string]json.RawMessage{}
	}
	r.hasTTFTs, r.hasTTFT = false, false
	for _, c := range []*column{&r.ttfts, &r.inputs, &r.outputs, &r.starts} {
		c.vals, c.ok = c.vals[:0], true
	}
	r.itls.valid, r.errs.valid = false, false
	if !r.itls.keep {
		r.itls.resetStreamed()
	}
}

// requestObject: one request of the per-request schema, not a benchmark run.
func (r *benchRun) requestObject() bool {
	_, completed := r.scalars["completed"]
	return r.hasTTFT && !r.hasTTFTs && !completed
}

// scalarKeys are the run-level values ReadBench and summaryOnly look at.
var scalarKeys = func() map[string]bool {
	m := map[string]bool{"request_rate": true, "max_concurrency": true, "completed": true, "failed": true,
		"total_output_tokens": true, "model_id": true}
	for _, stat := range []string{"mean", "median", "p90", "p95", "p99"} {
		for _, metric := range []string{"ttft", "tpot", "itl", "e2el"} {
			m[stat+"_"+metric+"_ms"] = true
		}
	}
	return m
}()

// stream is the tokenizer: buf[i:n] is read and not yet consumed.
type stream struct {
	src   io.Reader
	from  string
	buf   []byte
	i, n  int
	mark  int // a token being read, kept across refills (-1: none)
	hold  int // a value being captured, kept across refills (-1: none)
	eof   bool
	total int64
	depth int  // containers open, for encoding/json's nesting limit
	keep  bool // keep the ITL gaps (itlColumn)

	// pending is a read that failed ahead of the tokenizer (gapsParallel
	// reads ahead): raised when the tokenizer needs more input, where a
	// read one chunk at a time would have met it.
	pending *abort
}

// readRuns reads the document and returns its last run (nil for a run that
// was null) and how many runs it holds.
func readRuns(r io.Reader, from string, keep bool) (run *benchRun, runs int, err error) {
	s := &stream{src: io.LimitReader(r, maxBench+1), from: from, buf: make([]byte, 64<<10), mark: -1, hold: -1, keep: keep}
	defer func() {
		if p := recover(); p != nil {
			a, ok := p.(abort)
			if !ok {
				panic(p)
			}
			run, runs, err = nil, 0, a.err
		}
	}()
	run, runs, err = s.document()
	s.drain()
	return run, runs, err
}

// more reads the next chunk, keeping the unconsumed bytes and any token or
// capture in progress; false at the end of the input.
func (s *stream) more() bool {
	if s.pending != nil {
		panic(*s.pending)
	}
	if s.eof {
		return false
	}
	keep := s.i
	if s.mark >= 0 && s.mark < keep {
		keep = s.mark
	}
	if s.hold >= 0 && s.hold < keep {
		keep = s.hold
	}
	if keep > 0 {
		s.n = copy(s.buf, s.buf[keep:s.n])
		s.i -= keep
		if s.mark >= 0 {
			s.mark -= keep
		}
		if s.hold >= 0 {
			s.hold -= keep
		}
	}
	// The buffer starts small (most files are) and doubles while the
	// input goes on, up to streamChunk, or to hold a token that long.
	if s.n == len(s.buf) || len(s.buf) < streamChunk && s.total >= int64(2*len(s.buf)) {
		s.buf = append(s.buf[:s.n], make([]byte, len(s.buf))...)
	}
	for {
		k, err := s.src.Read(s.buf[s.n:])
		s.n += k
		s.total += int64(k)
		if s.total > maxBench {
			panic(abort{fmt.Errorf("%s is larger than %d MiB, more than a benchmark result holds: split the run, or give its requests as per-request JSONL, which streams", s.from, maxBench>>20)})
		}
		if err != nil && !errors.Is(err, io.EOF) {
			panic(abort{fmt.Errorf("%s: %s", s.from, oneLine(err))})
		}
		if err != nil {
			s.eof = true
			return k > 0
		}
		if k > 0 {
			return true
		}
	}
}

// drain reads what is left: a read error or the size limit there still
// refuses the file.
func (s *stream) drain() {
	s.mark, s.hold = -1, -1
	for {
		s.i = s.n
		if !s.more() {
			return
		}
	}
}

// need makes k bytes available, or as many as the input has left.
func (s *stream) need(k int) bool {
	for s.n-s.i < k {
		if !s.more() {
			return false
		}
	}
	return true
}

func (s *stream) has(p string) bool {
	s.need(len(p))
	return len(p) <= s.n-s.i && string(s.buf[s.i:s.i+len(p)]) == p
}

// eff returns the next byte as the old reader's decoder saw it, after its
// rewriting of Python's non-finite tokens: NaN and -Infinity were null
// ('n'), Infinity the string "Infinity" ('"'). ok is false at the end.
func (s *stream) eff() (byte, bool) {
	if s.i >= s.n && !s.more() {
		return 0, false
	}
	c := s.buf[s.i]
	switch c {
	case 'N':
		if s.has("NaN") {
			return 'n', true
		}
	case 'I':
		if s.has("Infinity") {
			return '"', true
		}
	case '-':
		if s.has("-Infinity") {
			return 'n', true
		}
	}
	return c, true
}

// next is eff inside a value: the end of the input there is an error.
func (s *stream) next() byte {
	c, ok := s.eff()
	if !ok {
		panic(syntaxError{"unexpected EOF"})
	}
	return c
}

func (s *stream) fail(c byte, context string) {
	panic(syntaxError{"invalid character " + quoteChar(c) + " " + context})
}

// quoteChar formats c as encoding/json's syntax errors do.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	q := strconv.Quote(string(c))
	return "'" + q[1:len(q)-1] + "'"
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func (s *stream) skipWS() {
	for {
		for s.i < s.n {
			if c := s.buf[s.i]; c > ' ' || !isSpace(c) {
				return
			}
			s.i++
		}
		if !s.more() {
			return
		}
	}
}

// document reads the runs, as the old reader's json.Decoder loop did.
func (s *stream) document() (*benchRun, int, error) {
	if s.has(string(bom)) {
		s.i += len(bom)
	}
	s.skipWS()
	if s.i >= s.n {
		return nil, 0, fmt.Errorf("%s: empty benchmark result", s.from)
	}
	if err := s.notBench(); err != nil {
		return nil, 0, err
	}
	var last *benchRun
	cur := s.newRun()
	runs := 0
	for {
		s.skipWS()
		if s.i >= s.n && !s.more() {
			break
		}
		obj, err := s.top(cur)
		if err != nil {
			if runs > 0 {
				break // a cut-off last line of an appended file: keep the runs before it
			}
			return nil, 0, fmt.Errorf("%s: not vllm bench serve result JSON: %s", s.from, oneLine(err))
		}
		if runs == 0 && obj && cur.requestObject() {
			return nil, 0, &FormatError{File: s.from, Is: "per-request JSONL, not a vllm bench serve result", Reader: "requests"}
		}
		runs++
		switch {
		case !obj:
			last = nil
		case last == nil:
			last, cur = cur, s.newRun()
		default:
			last, cur = cur, last
		}
	}
	if runs == 0 {
		return nil, 0, fmt.Errorf("%s: empty benchmark result", s.from)
	}
	if last == nil {
		last = s.newRun()
		last.reset()
	}
	return last, runs, nil
}

func (s *stream) newRun() *benchRun { return &benchRun{itls: itlColumn{keep: s.keep}} }

// notBench names what a file given as a benchmark result is instead, when
// it can tell from its first byte and line.
func (s *stream) notBench() error {
	switch s.buf[s.i] {
	case '{':
		return nil
	case '[':
		if s.firstLineHas(`"ttft"`) {
			return &FormatError{File: s.from, Is: "a JSON array of requests, not a vllm bench serve result", Reader: "requests", Convert: "jq -c '.[]' " + s.from}
		}
		return fmt.Errorf("%s is a JSON array, not a vllm bench serve result object", s.from)
	}
	// Neither object nor array: the first line is read ahead, not consumed.
	off := 0
	for {
		if k := bytes.IndexByte(s.buf[s.i+off:s.n], '\n'); k >= 0 {
			off += k
			break
		}
		off = s.n - s.i
		if !s.more() {
			break
		}
	}
	first := s.buf[s.i : s.i+off]
	if bytes.Contains(first, []byte("ttft")) && bytes.Contains(first, []byte(",")) {
		return &FormatError{File: s.from, Is: "per-request CSV, not a vllm bench serve result", Reader: "requests"}
	}
	return nil
}

// firstLineHas reads (and consumes) the first line looking for p.
func (s *stream) firstLineHas(p string) bool {
	carry := 0
	for {
		b := s.buf[s.i-carry : s.n]
		end, nl := len(b), bytes.IndexByte(b[carry:], '\n')
		if nl >= 0 {
			end = carry + nl
		}
		if bytes.Contains(b[:end], []byte(p)) {
			return true
		}
		if nl >= 0 {
			return false
		}
		carry = min(len(p)-1, len(b))
		s.i = s.n
		s.mark = s.i - carry
		ok := s.more()
		s.mark = -1
		if !ok {
			return false
		}
	}
}

// top reads one top-level value into run: obj is false for null; any other
// value than an object or null is the error the decoder gave.
func (s *stream) top(run *benchRun) (obj bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(syntaxError)
			if !ok {
				panic(p)
			}
			s.mark, s.hold, s.depth = -1, -1, 0
			err = errors.New(e.msg)
		}
	}()
	c := s.next()
	switch c {
	case '{':
		run.reset()
		s.object(run)
		return true, nil
	case 'n':
		s.null()
		return false, nil
	}
	kind := "number"
	switch c {
	case '"':
		kind = "string"
	case 't', 'f':
		kind = "bool"
	case '[':
		kind = "array"
	}
	s.value(1)
	return false, fmt.Errorf("json: cannot unmarshal %s into Go value of type map[string]json.RawMessage", kind)
}

func (s *stream) push(c byte) {
	s.depth++
	if s.depth > maxJSONDepth {
		s.fail(c, "exceeded max depth")
	}
	s.i++
}

// object reads a run: known keys into columns, the rest skipped.
func (s *stream) object(run *benchRun) {
	s.push('{')
	s.skipWS()
	c := s.next()
	if c == '}' {
		s.i++
		s.depth--
		return
	}
	for {
		if c != '"' {
			s.fail(c, "looking for beginning of object key string")
		}
		key := s.key()
		s.skipWS()
		if c = s.next(); c != ':' {
			s.fail(c, "after object key")
		}
		s.i++
		s.skipWS()
		s.field(run, key)
		s.skipWS()
		switch c = s.next(); c {
		case ',':
			s.i++
			s.skipWS()
			c = s.next()
			continue
		case '}':
			s.i++
			s.depth--
			return
		}
		s.fail(c, "after object key:value pair")
	}
}

// key reads an object key; "" when it is too long to be one read here.
func (s *stream) key() string {
	if s.buf[s.i] == 'I' { // Infinity, rewritten "Infinity"
		s.i += len("Infinity")
		return "Infinity"
	}
	s.mark = s.i
	s.str()
	raw := s.buf[s.mark:s.i]
	s.mark = -1
	if len(raw) > maxKeyLen {
		return ""
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var k string
	if json.Unmarshal(raw, &k) != nil {
		return ""
	}
	return k
}

func (s *stream) field(run *benchRun, key string) {
	switch key {
	case "ttfts":
		run.hasTTFTs = true
		s.floats(&run.ttfts)
	case "input_lens":
		s.floats(&run.inputs)
	case "output_lens":
		s.floats(&run.outputs)
	case "start_times":
		s.floats(&run.starts)
	case "itls":
		s.itls(&run.itls)
	case "errors":
		s.errs(&run.errs)
	case "ttft", "ttft_ms":
		run.hasTTFT = true
		s.value(1)
	default:
		if scalarKeys[key] {
			s.scalar(run, key)
		} else {
			s.value(1)
		}
	}
}

// scalar captures a run-level value as the old reader's raw JSON.
func (s *stream) scalar(run *benchRun, key string) {
	if c := s.next(); (c == '[' || c == '{') && key != "request_rate" {
		s.value(1)
		run.scalars[key] = json.RawMessage("[")
		return
	}
	s.hold = s.i
	s.value(1)
	raw := bytes.Clone(s.buf[s.hold:s.i])
	s.hold = -1
	run.scalars[key] = nonFiniteToNull(raw)
}

// value validates and skips one value at fastjson depth d, and returns the
// deepest fastjson depth within it.
func (s *stream) value(d int) int {
	switch c := s.next(); {
	case c == '{':
		s.push(c)
		s.skipWS()
		c = s.next()
		if c == '}' {
			s.i++
			s.depth--
			return d
		}
		deepest := d
		for {
			if c != '"' {
				s.fail(c, "looking for beginning of object key string")
			}
			s.str()
			s.skipWS()
			if c = s.next(); c != ':' {
				s.fail(c, "after object key")
			}
			s.i++
			s.skipWS()
			deepest = max(deepest, s.value(d+1))
			s.skipWS()
			switch c = s.next(); c {
			case ',':
				s.i++
				s.skipWS()
				c = s.next()
				continue
			case '}':
				s.i++
				s.depth--
				return deepest
			}
			s.fail(c, "after object key:value pair")
		}
	case c == '[':
		if !s.openArray() {
			return d
		}
		deepest := d
		for {
			deepest = max(deepest, s.value(d+1))
			if s.endElement() {
				return deepest
			}
		}
	case c == '"':
		s.str()
	case c == 'n':
		s.null()
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == '-' || '0' <= c && c <= '9':
		s.number()
	default:
		s.fail(c, "looking for beginning of value")
	}
	return d
}

// endElement reads what follows an array element: true at the array's end.
func (s *stream) endElement() bool {
	s.skipWS()
	switch c := s.next(); c {
	case ',':
		s.i++
		s.skipWS()
		return false
	case ']':
		s.i++
		s.depth--
		return true
	default:
		s.fail(c, "after array element")
	}
	return false
}

// null reads null, or NaN or -Infinity (which the old reader made null).
func (s *stream) null() {
	switch s.buf[s.i] {
	case 'N':
		s.i += len("NaN")
	case '-':
		s.i += len("-Infinity")
	default:
		s.literal("null")
	}
}

func (s *stream) literal(word string) {
	s.i++
	for k := 1; k < len(word); k++ {
		if c := s.next(); c != word[k] {
			s.fail(c, "in literal "+word+" (expecting "+quoteChar(word[k])+")")
		}
		s.i++
	}
}

// strStop marks the bytes that end a run of plain string content.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str reads a string (or Infinity, the old reader's "Infinity"); empty
// reports whether it had no content.
func (s *stream) str() (empty bool) {
	if s.buf[s.i] == 'I' {
		s.i += len("Infinity")
		return false
	}
	s.i++
	empty = true
	for {
		b, i := s.buf[:s.n], s.i
		for i < len(b) && !strStop[b[i]] {
			i++
		}
		if i > s.i {
			empty = false
		}
		s.i = i
		if i == len(b) {
			if !s.more() {
				panic(syntaxError{"unexpected EOF"})
			}
			continue
		}
		c := b[i]
		if c == '"' {
			s.i++
			return empty
		}
		empty = false
		if c != '\\' {
			s.fail(c, "in string literal")
		}
		s.i++
		if !s.need(1) {
			panic(syntaxError{"unexpected EOF"})
		}
		switch c = s.buf[s.i]; c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.i++
		case 'u':
			s.i++
			for range 4 {
				if !s.need(1) {
					panic(syntaxError{"unexpected EOF"})
				}
				c = s.buf[s.i]
				if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
					s.fail(c, "in \\u hexadecimal character escape")
				}
				s.i++
			}
		default:
			s.fail(c, "in string escape code")
		}
	}
}

// number reads a number and returns its text, valid until the next read,
// and whether it has an exponent.
func (s *stream) number() (tok []byte, exp bool) {
	s.mark = s.i
	c := s.next()
	if c == '-' {
		s.i++
		c = s.next()
	}
	switch {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		s.i++
		s.digits()
	default:
		s.fail(c, "in numeric literal")
	}
	if c, ok := s.eff(); ok && c == '.' {
		s.i++
		if c = s.next(); c < '0' || c > '9' {
			s.fail(c, "after decimal point in numeric literal")
		}
		s.digits()
	}
	if c, ok := s.eff(); ok && (c == 'e' || c == 'E') {
		exp = true
		s.i++
		c = s.next()
		if c == '+' || c == '-' {
			s.i++
			c = s.next()
		}
		if c < '0' || c > '9' {
			s.fail(c, "in exponent of numeric literal")
		}
		s.digits()
	}
	tok = s.buf[s.mark:s.i]
	s.mark = -1
	return tok, exp
}

func (s *stream) digits() {
	for {
		b, i := s.buf[:s.n], s.i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		s.i = i
		if i < len(b) || !s.more() {
			return
		}
	}
}

// finite parses a number as fastjson did for the old reader: NaN when it is
// not finite. fastjson's parser is strconv's, correctly rounded, on a
// number without exponent (exact on short ones, strconv's on long ones),
// so long ones go straight to strconv; with an exponent it multiplies by a
// power of ten, which only it reproduces.
func finite(tok []byte, exp bool) float64 {
	s := unsafe.String(unsafe.SliceData(tok), len(tok))
	var f float64
	var err error
	if !exp && len(s) > 16 {
		if f, ok := parseLong(tok); ok {
			return f // finite: Eisel–Lemire answers only there
		}
		f, err = strconv.ParseFloat(s, 64)
	} else {
		f, err = fastfloat.Parse(s)
	}
	if err == nil && evidence.Present(f) {
		return f
	}
	return math.NaN()
}

func isNumberStart(c byte) bool { return c == '-' || '0' <= c && c <= '9' }

// openArray steps into the array at '[': false when it is empty (and so
// already closed), true when elements follow.
func (s *stream) openArray() bool {
	s.push('[')
	s.skipWS()
	if s.next() == ']' {
		s.i++
		s.depth--
		return false
	}
	return true
}

// numberOr reads an array element as a number; another value (skipped, its
// nesting from depth raising *deepest) or a non-finite number is NaN. The
// number is the hot path: it stays small enough to inline.
func (s *stream) numberOr(depth int, deepest *int) float64 {
	if isNumberStart(s.next()) {
		return finite(s.number())
	}
	return s.nonNumber(depth, deepest)
}

func (s *stream) nonNumber(depth int, deepest *int) float64 {
	*deepest = max(*deepest, s.value(depth))
	return math.NaN()
}

// fastLookahead is how many unread bytes fastElement needs: a number it
// takes and what follows it always fit, so it never refills the buffer.
const fastLookahead = 64

// fastElement reads the commonest array element of a bench result, a number
// and what follows it (", " or "]"), in one pass over the buffer, as the gap
// workers do (gapNumber: the value is finite's). ok is false, nothing
// consumed, for anything else (literals, numbers near the buffer's end,
// malformed input): the general path reads it and words any error.
func (s *stream) fastElement() (x float64, end, ok bool) {
	if s.n-s.i < fastLookahead {
		return 0, false, false
	}
	b := s.buf[s.i : s.i+fastLookahead]
	x, i, ok := gapNumber(b, 0)
	if !ok || i >= fastLookahead-8 {
		return 0, false, false // or the number may go on past b
	}
	for i < fastLookahead-8 && isSpace(b[i]) {
		i++
	}
	switch b[i] {
	case ',':
		i++
		for i < fastLookahead-8 && isSpace(b[i]) {
			i++
		}
		if isSpace(b[i]) {
			return 0, false, false
		}
	case ']':
		i++
		s.depth--
		end = true
	default:
		return 0, false, false
	}
	s.i += i
	return x, end, true
}

// floats reads a per-request array of numbers into col; an entry that is
// not a finite number is NaN. null reads as absent; anything else than an
// array (or one nested deeper than fastjson reads) is not ok.
func (s *stream) floats(col *column) {
	col.vals, col.ok = col.vals[:0], true
	switch c := s.next(); c {
	case 'n':
		s.null()
		return
	case '[':
	default:
		s.value(1)
		col.ok = false
		return
	}
	if !s.openArray() {
		return
	}
	deepest := 1
	for {
		col.vals = append(col.vals, s.numberOr(2, &deepest))
		if s.endElement() {
			break
		}
	}
	if deepest > fastjson.MaxDepth {
		col.vals, col.ok = col.vals[:0], false
	}
}

// itls reads the arrays of gaps.
func (s *stream) itls(col *itlColumn) {
	col.off, col.gaps, col.bad, col.valid = append(col.off[:0], 0), col.gaps[:0], col.bad[:0], false
	if !col.keep {
		col.resetStreamed()
	}
	if s.next() != '[' {
		s.value(1)
		return
	}
	if !s.openArray() {
		col.valid = true
		return
	}
	deepest := 1
	n := uint32(0)
	par := gapsInParallel(col.keep)
	for {
		if par.try() {
			par.entries(s, col, &n)
		}
		bad := false
		col.cur = col.cur[:0]
		switch c := s.next(); c {
		case '[':
			if !s.openArray() {
				break
			}
			for {
				x, end, ok := s.fastElement()
				if !ok {
					x = s.numberOr(3, &deepest)
					end = s.endElement()
				}
				bad = bad || math.IsNaN(x)
				col.cur = append(col.cur, x)
				if end {
					break
				}
			}
		case 'n':
			s.null()
		default:
			deepest = max(deepest, s.value(2))
			bad = true
		}
		col.add(col.cur, nil, bad, &n)
		if s.endElement() {
			break
		}
	}
	col.valid = deepest <= fastjson.MaxDepth
	if !col.valid && !col.keep {
		col.resetStreamed()
	}
}

// add records one entry: its gaps (with their sketch bins, when known),
// and bad when it held something other than finite numbers; n counts the
// gaps so far.
func (c *itlColumn) add(gaps []float64, bins []int, bad bool, n *uint32) {
	*n += uint32(len(gaps))
	if c.keep {
		c.gaps = append(c.gaps, gaps...)
	} else {
		bad = bad || badGaps(gaps)
		c.sums = append(c.sums, sum(gaps))
		if !bad {
			c.stream(gaps, bins)
		}
	}
	c.bad = append(c.bad, bad)
	c.off = append(c.off, *n)
}

// stream adds one request's gaps as take and Add would: positive ones to
// the unit sample, all to the distribution.
func (c *itlColumn) stream(gaps []float64, bins []int) {
	for k, x := range gaps {
		if x > 0 {
			c.sample.add(x)
		}
		if bins != nil {
			c.dist.addBin(x, bins[k])
		} else {
			c.dist.add(x)
		}
	}
}

// errs reads errors: whether each entry is a non-empty string.
func (s *stream) errs(col *errColumn) {
	col.failed, col.valid = col.failed[:0], false
	if s.next() != '[' {
		s.value(1)
		return
	}
	if !s.openArray() {
		col.valid = true
		return
	}
	deepest := 1
	for {
		failed := false
		if s.next() == '"' {
			failed = !s.str()
		} else {
			deepest = max(deepest, s.value(2))
		}
		col.failed = append(col.failed, failed)
		if s.endElement() {
			break
		}
	}
	col.valid = deepest <= fastjson.MaxDepth
}
