package requests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/valyala/fastjson"
	"github.com/valyala/fastjson/fastfloat"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// Per-request JSONL is read in newline-aligned chunks, parsed in parallel;
// the rows are then validated and accumulated one at a time, in file order,
// by the caller's goroutine: what is order-dependent (sums, reservoir
// samples, the first bad line of each kind) comes out as a sequential read
// makes it.

// jsonlChunk is how many bytes a worker parses at a time; a variable so
// tests can cut tiny files into many chunks.
var jsonlChunk = 1 << 20

// row is one parsed line: a record, or why the line is unreadable.
type row struct {
	rec  Record
	line int32 // 1-based, within the chunk
	err  string
}

// chunk is a run of whole lines and what parsing them gave.
type chunk struct {
	buf   []byte
	lines int // lines in buf, the last one counted even without '\n'
	rows  []row
	gaps  []float64
	// benchFirst: the chunk's first non-blank line is a bench result
	// object, which refuses the file when that line is the file's first.
	benchFirst bool
	long       bool  // the line after buf is longer than maxLine
	fail       error // a read error after buf
	done       chan struct{}
}

// readJSONL reads lines from r into a. Chunks are parsed by workers and
// taken here in file order.
func readJSONL(r io.Reader, a *Accumulator, from string) error {
	workers := runtime.GOMAXPROCS(0)
	inFlight := 2*workers + 2
	free := make(chan *chunk, inFlight)
	for range inFlight {
		free <- &chunk{done: make(chan struct{}, 1)}
	}
	work := make(chan *chunk, inFlight)
	order := make(chan *chunk, inFlight)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	go splitLines(r, from, free, work, order, quit)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p fastjson.Parser
			for c := range work {
				c.parse(&p)
				c.done <- struct{}{}
			}
		}()
	}
	defer func() {
		close(quit)
		for c := range order { // the splitter ends; then the workers
			<-c.done
		}
		wg.Wait()
	}()
	line, firstSeen := 0, false
	for c := range order {
		<-c.done
		if !firstSeen && len(c.rows) > 0 {
			firstSeen = true
			if c.benchFirst {
				return &FormatError{File: from, Is: "vllm bench serve result JSON", Reader: "bench"}
			}
		}
		for i := range c.rows {
			r := &c.rows[i]
			if r.err != "" {
				a.q.skip(rUnreadable, line+int(r.line), r.err)
			} else {
				a.take(r.rec, line+int(r.line))
			}
		}
		line += c.lines
		if c.long {
			return fmt.Errorf("%s: line %d is longer than %d MiB: one request's record should be far smaller", from, line+1, maxLine>>20)
		}
		if c.fail != nil {
			return c.fail
		}
		free <- c
	}
	return nil
}

// splitLines fills chunks with whole lines and hands them to the workers
// and, in the same order, to the reader of results. It stops at the end of
// the input, a read error, a line longer than maxLine, or quit.
func splitLines(r io.Reader, from string, free, work, order chan *chunk, quit chan struct{}) {
	defer close(order)
	defer close(work)
	var carry []byte
	for eof := false; !eof; {
		var c *chunk
		select {
		case c = <-free:
		case <-quit:
			return
		}
		c.buf, c.fail, c.long = append(c.buf[:0], carry...), nil, false
		lastNL := -1 // carry holds no line end
		for {
			if cap(c.buf)-len(c.buf) < 64<<10 {
				c.buf = slices.Grow(c.buf, max(jsonlChunk, 64<<10))
			}
			k, err := r.Read(c.buf[len(c.buf):cap(c.buf)])
			c.buf = c.buf[:len(c.buf)+k]
			if j := bytes.LastIndexByte(c.buf[len(c.buf)-k:], '\n'); j >= 0 {
				lastNL = len(c.buf) - k + j
			}
			if err != nil {
				eof = true
				if !errors.Is(err, io.EOF) {
					c.fail = fmt.Errorf("%s: %w", from, err)
				}
				break
			}
			if lastNL >= 0 && len(c.buf) >= jsonlChunk || len(c.buf)-lastNL-1 > maxLine {
				break
			}
		}
		cut := len(c.buf)
		if !eof {
			cut = lastNL + 1
		}
		carry = append(carry[:0], c.buf[cut:]...)
		c.buf = c.buf[:cut]
		// A line longer than maxLine (with its '\n') ends the read where it starts.
		if k := longStart(c.buf, len(carry)); k >= 0 {
			c.buf, c.long, c.fail, eof = c.buf[:k], true, nil, true
		}
		work <- c
		order <- c
	}
}

// longStart is where the first line longer than maxLine starts in buf,
// whose last line goes on for carry more bytes; -1 when there is none.
func longStart(buf []byte, carry int) int {
	start := 0
	for {
		end := bytes.IndexByte(buf[start:], '\n')
		if end < 0 {
			break
		}
		if end+1 > maxLine {
			return start
		}
		start += end + 1
	}
	if len(buf)-start+carry > maxLine {
		return start
	}
	return -1
}

// parse reads the chunk's lines into rows.
func (c *chunk) parse(p *fastjson.Parser) {
	c.rows, c.gaps, c.lines, c.benchFirst = c.rows[:0], c.gaps[:0], 0, false
	first := true
	for b := c.buf; len(b) > 0; {
		c.lines++
		l := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			l, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		if blank(l) {
			continue
		}
		if first {
			first = false
			v, e := p.ParseBytes(l)
			c.benchFirst = e == nil && v.Type() == fastjson.TypeObject && benchObject(v)
		}
		r := row{line: int32(c.lines)}
		rec, ok := fastLine(l, &c.gaps)
		if !ok {
			var itls []float64
			var e error
			rec, e = parseLine(p, l, &itls)
			if e != nil {
				// The line number finds the line; its echo is noise.
				r.err, _, _ = strings.Cut(oneLine(e), "; unparsed tail")
			} else if rec.ITLs != nil {
				k := len(c.gaps)
				c.gaps = append(c.gaps, rec.ITLs...)
				rec.ITLs = c.gaps[k:len(c.gaps):len(c.gaps)]
			}
		}
		r.rec = rec
		c.rows = append(c.rows, r)
	}
}

// blank is len(bytes.TrimSpace(l)) == 0, fast on ASCII.
func blank(l []byte) bool {
	for _, c := range l {
		switch c {
		case ' ', '\t', '\r', '\n', '\v', '\f':
			continue
		}
		if c < 0x80 {
			return false
		}
		return len(bytes.TrimSpace(l)) == 0
	}
	return true
}

// ws is fastjson's whitespace.
func ws(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// numEnd ends a number as fastjson's parser does: at the first byte that
// cannot be in one.
func numEnd(b []byte, i int) int {
	for i < len(b) {
		c := b[i]
		if c >= '0' && c <= '9' || c == '.' || c == '-' || c == 'e' || c == 'E' || c == '+' {
			i++
			continue
		}
		break
	}
	return i
}

// fastNumber reads a number at b[i:] as fastjson gives it: the token ends
// where fastjson's does and short plain decimals are computed as
// fastfloat.Parse computes them (the digits as one integer, divided once by
// a power of ten); other tokens go to fastfloat.Parse itself. ok is false
// for what is not a plain number (inf, nan, +1, malformed), which the
// fallback then reads.
func fastNumber(b []byte, i int) (x float64, next int, ok bool) {
	start := i
	if b[i] == '-' {
		i++
	}
	var d uint64
	j := i
	for i < len(b) && b[i]-'0' <= 9 {
		d = d*10 + uint64(b[i]-'0')
		i++
	}
	ints := i - j
	if ints == 0 {
		return 0, start, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		k := i
		for i < len(b) && b[i]-'0' <= 9 {
			d = d*10 + uint64(b[i]-'0')
			i++
		}
		// fastfloat's own fast path: fewer than 17 characters of mantissa.
		if frac := i - k; frac > 0 && ints+1+frac <= 16 && !numByte(b, i) {
			x = float64(d) / pow10[frac]
			if b[start] == '-' {
				x = -x
			}
			return x, i, true
		}
	} else if i-start <= 18 && !numByte(b, i) {
		x = float64(d)
		if b[start] == '-' {
			x = -x
		}
		return x, i, true
	}
	i = numEnd(b, i)
	x, err := fastfloat.Parse(unsafe.String(&b[start], i-start))
	return x, i, err == nil
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16}

// numByte: b[i] would go on a number token.
func numByte(b []byte, i int) bool {
	if i >= len(b) {
		return false
	}
	c := b[i]
	return c >= '0' && c <= '9' || c == '.' || c == '-' || c == 'e' || c == 'E' || c == '+'
}

// fastString reads a string without escapes at b[i] == '"'.
func fastString(b []byte, i int) (s []byte, next int, ok bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return b[i+1 : j], j + 1, true
		case '\\':
			return nil, i, false
		}
	}
	return nil, i, false
}

// skipPlain skips a string, number or literal of a key not read here.
func skipPlain(b []byte, i int) (int, bool) {
	switch c := b[i]; {
	case c == '"':
		_, j, ok := fastString(b, i)
		return j, ok
	case c == 't':
		return i + 4, bytes.HasPrefix(b[i:], []byte("true"))
	case c == 'f':
		return i + 5, bytes.HasPrefix(b[i:], []byte("false"))
	case c == '-' || c >= '0' && c <= '9':
		return numEnd(b, i), true
	}
	return i, false
}

var (
	streamTrue, streamFalse = true, false
)

// fastLine reads one line as parseLine does, in one pass over its bytes
// and without a tree. It reads plain lines only: on escapes, nesting,
// NaN, a value of the wrong type or a syntax error it gives up (ok false)
// and parseLine reads the line, so the two never disagree.
func fastLine(b []byte, gaps *[]float64) (Record, bool) {
	n := len(*gaps)
	rec, ok := fastLineGaps(b, gaps)
	if !ok {
		*gaps = (*gaps)[:n]
	}
	return rec, ok
}

func fastLineGaps(b []byte, gaps *[]float64) (rec Record, ok bool) {
	var vals, msVals [9]float64
	var have, haveMs uint16
	var start float64
	var startStr []byte
	hasStart, startIsStr := false, false
	var itl, itlMs [2]int // where each array's gaps were appended; {0, 0}: absent
	var streaming, hasStreaming bool
	var errStr []byte
	hasErr := false

	i := ws(b, 0)
	if i >= len(b) || b[i] != '{' {
		return rec, false
	}
	i = ws(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return rec, false
			}
			key, j, ok := fastString(b, i)
			if !ok {
				return rec, false
			}
			i = ws(b, j)
			if i >= len(b) || b[i] != ':' {
				return rec, false
			}
			i = ws(b, i+1)
			if i >= len(b) {
				return rec, false
			}
			if b[i] == 'n' { // null reads as absent
				if !bytes.HasPrefix(b[i:], []byte("null")) {
					return rec, false
				}
				i += 4
			} else {
				switch string(key) {
				case "start_time":
					if b[i] == '"' {
						if startStr, i, ok = fastString(b, i); !ok {
							return rec, false
						}
						hasStart, startIsStr = true, true
					} else {
						if start, i, ok = fastNumber(b, i); !ok {
							return rec, false
						}
						hasStart, startIsStr = true, false
					}
				case "itl", "itl_ms":
					if b[i] != '[' {
						return rec, false
					}
					at := &itl
					if len(key) == len("itl_ms") {
						at = &itlMs
					}
					if at[1] > 0 { // a repeated key: the fallback keeps the last
						return rec, false
					}
					at[0] = len(*gaps)
					if i, ok = fastArray(b, i, gaps); !ok {
						return rec, false
					}
					at[1] = len(*gaps) + 1
				case "streaming":
					switch {
					case bytes.HasPrefix(b[i:], []byte("true")):
						streaming, i = true, i+4
					case bytes.HasPrefix(b[i:], []byte("false")):
						streaming, i = false, i+5
					default:
						return rec, false
					}
					hasStreaming = true
				case "error":
					if b[i] == '"' {
						if errStr, i, ok = fastString(b, i); !ok {
							return rec, false
						}
						hasErr = true
					} else if b[i] == '[' || b[i] == '{' {
						return rec, false
					} else {
						if i, ok = skipPlain(b, i); !ok {
							return rec, false
						}
						hasErr = false // not a string: no error, as parseLine reads it
					}
				default:
					idx, ms := schemaIndex(key)
					if idx < 0 {
						if i, ok = skipPlain(b, i); !ok {
							return rec, false
						}
						break
					}
					var x float64
					if x, i, ok = fastNumber(b, i); !ok {
						return rec, false
					}
					if ms {
						msVals[idx], haveMs = x, haveMs|1<<idx
					} else {
						vals[idx], have = x, have|1<<idx
					}
				}
			}
			i = ws(b, i)
			if i >= len(b) {
				return rec, false
			}
			if b[i] == ',' {
				i = ws(b, i+1)
				continue
			}
			if b[i] == '}' {
				i++
				break
			}
			return rec, false
		}
	}
	if ws(b, i) != len(b) {
		return rec, false
	}
	for k := range schema {
		*rec.slot(k) = math.NaN()
		switch {
		case have&(1<<k) != 0:
			rec.set(k, vals[k], false)
		case haveMs&(1<<k) != 0:
			rec.set(k, msVals[k], true)
		}
	}
	rec.Start = math.NaN()
	if hasStart && startIsStr {
		var err error
		if rec.Start, err = startTime(string(startStr)); err != nil {
			return rec, false
		}
	} else if hasStart {
		rec.Start = start
		if !evidence.Present(start) {
			rec.bad |= bStart
			rec.Start = math.NaN()
		}
	}
	// Seconds win over milliseconds, as in parseLine.
	switch {
	case itl[1] > 0:
		rec.ITLs = (*gaps)[itl[0] : itl[1]-1 : itl[1]-1]
	case itlMs[1] > 0:
		rec.ms |= msITL
		rec.ITLs = (*gaps)[itlMs[0] : itlMs[1]-1 : itlMs[1]-1]
		for k := range rec.ITLs {
			rec.ITLs[k] *= 1e-3
		}
	}
	if hasStreaming {
		if streaming {
			rec.Streaming = &streamTrue
		} else {
			rec.Streaming = &streamFalse
		}
	}
	if hasErr && len(errStr) > 0 {
		rec.Error = string(errStr)
	}
	return rec, true
}

// fastArray appends an array of plain numbers at b[i] == '['.
func fastArray(b []byte, i int, gaps *[]float64) (int, bool) {
	i = ws(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		if i >= len(b) {
			return i, false
		}
		x, j, ok := fastNumber(b, i)
		if !ok {
			return i, false
		}
		*gaps = append(*gaps, x)
		i = ws(b, j)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = ws(b, i+1)
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}
