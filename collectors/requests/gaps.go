package requests

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime"

	"github.com/DataDog/sketches-go/ddsketch/mapping"
)

// The ITL gaps on every core.
//
// The gaps are most of a bench result and parsing their numbers most of
// reading it. Inside the itls array, the bytes ahead of the tokenizer are
// cut, each just before an entry's '[', into chunks of about gapChunkSize
// bytes, and workers parse a chunk's entries — arrays of numbers, each
// followed by a comma — into floats. The tokenizer takes the chunks back in
// order and records their entries as it would have read them
// (itlColumn.add), so the result is a sequential read's. A chunk holding
// anything else (null, a string, the array's last entry, bad syntax) is
// taken as far as its entries go; the tokenizer reads on from there itself
// and the chunks after it are dropped.

var (
	// gapChunkSize is the size chunks are cut at (tests make it small).
	gapChunkSize = 128 << 10
	// gapWorkers is how many workers parse gaps; below 2 the tokenizer
	// reads them alone (tests vary it).
	gapWorkers = func() int { return runtime.GOMAXPROCS(0) }
)

// gapTries bounds how often one itls array hands entries to the workers: an
// array whose entries keep stopping them is read by the tokenizer alone.
const gapTries = 16

// gapReader spreads one itls array's entries over the workers.
type gapReader struct {
	workers int
	tries   int
	free    []*gapChunk
	sketch  *mapping.CubicallyInterpolatedMapping // the bins a dist's sketch uses
}

// gapsInParallel: streamed gaps, with more than one core.
func gapsInParallel(keep bool) *gapReader {
	n := gapWorkers()
	if keep || n < 2 {
		return &gapReader{tries: gapTries}
	}
	return &gapReader{workers: n, sketch: sketchMapping()}
}

func (p *gapReader) try() bool { return p.tries < gapTries }

// gapChunk is a run of entries, copied, and what a worker read from it.
type gapChunk struct {
	src  []byte
	gaps []float64
	bins []int  // each gap's sketch bin (sketchBin)
	ends []int  // entry k's gaps end at gaps[ends[k]]
	nan  []bool // entry k held a number that is not finite
	used int    // bytes of src that are whole entries with their commas
	done chan struct{}
}

// entries records the entries ahead of s.i that workers can read, leaving
// s.i at the start of the next entry.
func (p *gapReader) entries(s *stream, col *itlColumn, n *uint32) {
	p.tries++
	jobs := make(chan *gapChunk, 2*p.workers)
	defer close(jobs)
	for range p.workers {
		go func() {
			for c := range jobs {
				c.parse(p.sketch)
				c.done <- struct{}{}
			}
		}()
	}
	var queue []*gapChunk
	defer func() { // the workers let go of the chunks, also on a panic
		for _, c := range queue {
			<-c.done
		}
	}()
	d := s.i // where the next chunk starts
	for {
		for len(queue) < 2*p.workers {
			if s.n-d < gapChunkSize && !s.eof && s.pending == nil {
				i0 := s.i
				more := s.readAhead()
				d -= i0 - s.i // more shifts the buffer
				if more {
					continue
				}
			}
			k := bytes.LastIndexByte(s.buf[d:min(s.n, d+2*gapChunkSize)], '[')
			if k <= 0 {
				break
			}
			c := p.chunk()
			c.src = append(c.src[:0], s.buf[d:d+k]...)
			queue = append(queue, c)
			jobs <- c
			d += k
		}
		if len(queue) == 0 {
			return
		}
		c := queue[0]
		<-c.done
		queue = queue[1:]
		from := 0
		for k, end := range c.ends {
			col.add(c.gaps[from:end], c.bins[from:end], c.nan[k], n)
			from = end
		}
		s.i += c.used
		p.free = append(p.free, c)
		if c.used < len(c.src) {
			return
		}
	}
}

func (p *gapReader) chunk() *gapChunk {
	if k := len(p.free); k > 0 {
		c := p.free[k-1]
		p.free = p.free[:k-1]
		return c
	}
	return &gapChunk{done: make(chan struct{}, 1)}
}

// readAhead is more, for reading ahead of the tokenizer: a failed read is
// kept for when the tokenizer gets there (stream.pending).
func (s *stream) readAhead() (more bool) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(abort)
			if !ok {
				panic(r)
			}
			s.pending, more = &a, false
		}
	}()
	return s.more()
}

// parse reads whole entries from the start of src: '[' numbers ']' and a
// comma, blanks between; and the gaps' sketch bins.
func (c *gapChunk) parse(m *mapping.CubicallyInterpolatedMapping) {
	c.entries()
	c.bins = c.bins[:0]
	for _, x := range c.gaps {
		c.bins = append(c.bins, sketchBin(m, x))
	}
}

func (c *gapChunk) entries() {
	c.gaps, c.ends, c.nan, c.used = c.gaps[:0], c.ends[:0], c.nan[:0], 0
	b := c.src
	for i := 0; i < len(b) && b[i] == '['; {
		j, nan, ok := c.entry(b, i+1)
		if !ok {
			if k := len(c.ends); k > 0 {
				c.gaps = c.gaps[:c.ends[k-1]]
			} else {
				c.gaps = c.gaps[:0]
			}
			return
		}
		c.ends, c.nan = append(c.ends, len(c.gaps)), append(c.nan, nan)
		i, c.used = j, j
	}
}

// entry reads an entry's numbers from b[i:], just past its '[', to past the
// comma after it and the blanks after that.
func (c *gapChunk) entry(b []byte, i int) (next int, nan, ok bool) {
	i = skipBlanks(b, i)
	if i < len(b) && b[i] == ']' {
		i++
	} else {
		for {
			x, j, ok := gapNumber(b, i)
			if !ok {
				return 0, false, false
			}
			c.gaps = append(c.gaps, x)
			nan = nan || math.IsNaN(x)
			if i = skipBlanks(b, j); i >= len(b) {
				return 0, false, false
			}
			if b[i] == ']' {
				i++
				break
			}
			if b[i] != ',' {
				return 0, false, false
			}
			i = skipBlanks(b, i+1)
		}
	}
	if i = skipBlanks(b, i); i >= len(b) || b[i] != ',' {
		return 0, false, false
	}
	return skipBlanks(b, i+1), nan, true
}

func skipBlanks(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// gapNumber reads a JSON number at b[i:] to its value as finite gives it:
// a plain decimal by Eisel–Lemire (exact whenever it answers), anything
// else by finite itself. ok is false when b[i:] does not start with one.
func gapNumber(b []byte, i int) (x float64, next int, ok bool) {
	start, neg := i, false
	if i < len(b) && b[i] == '-' {
		i, neg = i+1, true
	}
	if i >= len(b) {
		return 0, 0, false
	}
	var man uint64
	nd, exp10 := 0, 0
	switch c := b[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		for ; i < len(b) && isDigit(b[i]); i++ {
			man = man*10 + uint64(b[i]-'0')
			nd++
		}
	default:
		return 0, 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		from := i
		if nd == 0 {
			for i < len(b) && b[i] == '0' { // leading zeros are not significant
				i++
			}
		}
		for ; i+8 <= len(b); i += 8 { // the fraction eight digits at a time
			v := binary.LittleEndian.Uint64(b[i:])
			if !eightDigits(v) {
				break
			}
			man = man*100_000_000 + eightDigitsValue(v)
			nd += 8
		}
		for ; i < len(b) && isDigit(b[i]); i++ {
			man = man*10 + uint64(b[i]-'0')
			nd++
		}
		if i == from {
			return 0, 0, false
		}
		exp10 = from - i
	}
	exp := false
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		exp = true
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		from := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == from {
			return 0, 0, false
		}
	}
	if !exp && nd <= 19 { // (zero: ±0, as finite gives it)
		if x, ok := eiselLemire64(man, exp10, neg); ok {
			return x, i, true
		}
	}
	return finite(b[start:i], exp), i, true
}

// eightDigits: the eight bytes of v (little-endian) are all '0'..'9'.
func eightDigits(v uint64) bool {
	return v&0xF0F0F0F0F0F0F0F0 == 0x3030303030303030 &&
		(v+0x0606060606060606)&0xF0F0F0F0F0F0F0F0 == 0x3030303030303030
}

// eightDigitsValue is the number eight digit bytes (little-endian, the
// first the most significant) write, combined pairwise in three multiplies.
func eightDigitsValue(v uint64) uint64 {
	v -= 0x3030303030303030
	v = (v*10 + v>>8) & 0x00FF00FF00FF00FF
	v = (v*100 + v>>16) & 0x0000FFFF0000FFFF
	return (v*10000 + v>>32) & 0xFFFFFFFF
}
