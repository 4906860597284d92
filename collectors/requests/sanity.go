package requests

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// A row is skipped for one reason; the key is stable (JSON), the text is
// for people.
type reason struct{ key, text string }

var (
	rUnreadable  = reason{"unreadable", "unreadable"}
	rNoTTFT      = reason{"no_ttft", "no ttft"}
	rNonFinite   = reason{"non_finite", "non-finite ttft or e2e"}
	rNonPositive = reason{"non_positive", "zero or negative latency"}
	rE2EBelow    = reason{"e2e_below_ttft", "e2e < ttft"}
	skipReasons  = []reason{rUnreadable, rNoTTFT, rNonFinite, rNonPositive, rE2EBelow}
)

// Fields dropped from a row that is kept: the rest of the row is sound.
const (
	dITLBad = iota
	dITLCount
	dITLSum
	dTokens
	dStage
	dServerTTFT
	dStart
	nDrops
)

var dropText = [nDrops]string{
	dITLBad:     "itl on %d (a negative, non-finite or non-number gap)",
	dITLCount:   "itl on %d (more gaps than output tokens + 1)",
	dITLSum:     "itl on %d (gaps add up to more than e2e − ttft)",
	dTokens:     "token counts on %d (negative, non-finite or over 100M)",
	dStage:      "server-side times on %d (negative or non-finite)",
	dServerTTFT: "server_ttft on %d (above ttft)",
	dStart:      "start_time on %d (non-finite)",
}

// Bits of Record.bad: a field that was present but not a finite number.
const (
	bTTFT uint16 = 1 << iota
	bE2E
	bTokens
	bStage
	bStart
	bITL
)

// Bits of Record.ms: a time field given with its _ms name.
const (
	msTTFT uint16 = 1 << iota
	msE2E
	msITL
)

// maxTokens bounds a token count: no model takes a context of 100M tokens,
// so a larger count is a broken field, not a long request.
const maxTokens = 1e8

// tol absorbs rounding: exports often keep milliseconds only.
const tol = 1e-3

// quality counts what validation left out of one source.
type quality struct {
	rows    int
	where   string // "line" or "index": how a row is named
	skipped map[reason]int
	first   map[reason]string
	dropped [nDrops]int
	ms      uint16
	// Raw values, before validation, for telling units apart.
	ttft, tpot, itl sample
	// whole is e2e ÷ output tokens: an upper bound of the time per token,
	// the witness left when a client does not stream (e2e = ttft).
	whole sample
}

func newQuality(where string) quality {
	return quality{where: where, skipped: map[reason]int{}, first: map[reason]string{},
		ttft: newSample(2), tpot: newSample(3), itl: newITLSample(), whole: newSample(5)}
}

// skip counts a row left out and remembers the first of each reason.
func (q *quality) skip(r reason, row int, detail string) {
	q.rows++
	q.skipped[r]++
	if _, ok := q.first[r]; !ok {
		s := fmt.Sprintf("%s %d", q.where, row)
		if detail != "" {
			s += ": " + cut(detail, 100)
		}
		q.first[r] = s
	}
}

func (q *quality) skippedTotal() int {
	n := 0
	for _, c := range q.skipped {
		n += c
	}
	return n
}

// take validates one row and adds what is sound. row names it in notes.
func (a *Accumulator) take(r Record, row int) {
	q := &a.q
	q.ms |= r.ms
	var drops uint16
	if r.e2eFromITL {
		// A benchmark's end-to-end is TTFT plus the gaps: bad gaps, no e2e.
		r.E2E = math.NaN()
		n, p := len(r.ITLs), r.pre
		if p != nil {
			n = p.n
		}
		switch {
		case r.bad&bITL != 0 || badGaps(r.ITLs):
			drops |= 1 << dITLBad
		case n > 0 && evidence.Present(r.Output) && float64(n) > r.Output+1:
			drops |= 1 << dITLCount
		case p != nil:
			r.E2E = r.TTFT + p.sum
			p.sampled = n > 0 // sampleUnits would take them
		default:
			r.E2E = r.TTFT + sum(r.ITLs)
		}
		if drops != 0 {
			r.ITLs = nil
		}
	}
	q.sampleUnits(&r)
	if r.Error == "" {
		if why, detail := rowProblem(&r); why != nil {
			q.skip(*why, row, detail)
			return
		}
	}
	q.rows++
	drops |= fieldProblems(&r)
	for i := range nDrops {
		if drops&(1<<i) != 0 {
			q.dropped[i]++
		}
	}
	if r.pre != nil && r.Error == "" {
		r.pre.added = r.pre.sampled // Add would take them
	}
	a.Add(r)
}

// streamedGaps stand for a bench request's gaps that were not kept
// (itlColumn): take uses their count and sum, and says whether it would
// have added them to the unit sample and to the distribution.
type streamedGaps struct {
	n              int
	sum            float64
	sampled, added bool
}

// rowProblem: without a sound TTFT and e2e the row says nothing.
func rowProblem(r *Record) (*reason, string) {
	switch {
	case r.bad&(bTTFT|bE2E) != 0:
		return &rNonFinite, ""
	case !evidence.Present(r.TTFT):
		return &rNoTTFT, ""
	case r.TTFT <= 0:
		return &rNonPositive, fmt.Sprintf("ttft %g", r.TTFT)
	case evidence.Present(r.E2E) && r.E2E <= 0:
		return &rNonPositive, fmt.Sprintf("e2e %g", r.E2E)
	case evidence.Present(r.E2E) && r.E2E < r.TTFT-tol:
		return &rE2EBelow, fmt.Sprintf("e2e %g < ttft %g", r.E2E, r.TTFT)
	}
	return nil, ""
}

// fieldProblems blanks fields that cannot be right on a row that is
// otherwise sound, and says which.
func fieldProblems(r *Record) uint16 {
	var d uint16
	if r.bad&bTokens != 0 || r.Prompt < 0 || r.Output < 0 || r.MaxTokens < 0 ||
		r.Prompt > maxTokens || r.Output > maxTokens || r.MaxTokens > maxTokens {
		d |= 1 << dTokens
		for _, p := range []*float64{&r.Prompt, &r.Output, &r.MaxTokens} {
			if *p < 0 || *p > maxTokens {
				*p = math.NaN()
			}
		}
	}
	if r.bad&bStage != 0 || r.Queue < 0 || r.Prefill < 0 || r.Decode < 0 || r.ServerTTFT < 0 {
		d |= 1 << dStage
		for _, p := range []*float64{&r.Queue, &r.Prefill, &r.Decode, &r.ServerTTFT} {
			if *p < 0 {
				*p = math.NaN()
			}
		}
	}
	// The server sends the first token before the client can see it.
	if r.ServerTTFT > r.TTFT+tol {
		d |= 1 << dServerTTFT
		r.ServerTTFT = math.NaN()
	}
	if r.bad&bStart != 0 {
		d |= 1 << dStart
	}
	if r.e2eFromITL {
		return d
	}
	switch {
	case r.bad&bITL != 0 || badGaps(r.ITLs):
		d |= 1 << dITLBad
		r.ITLs = nil
	// Chunks may carry several tokens (fewer gaps), and some clients time a
	// role chunk and a final empty chunk (up to two more).
	case len(r.ITLs) > 0 && evidence.Present(r.Output) && float64(len(r.ITLs)) > r.Output+1:
		d |= 1 << dITLCount
		r.ITLs = nil
	case len(r.ITLs) > 0 && evidence.Present(r.E2E) && sum(r.ITLs) > (r.E2E-r.TTFT)*1.01+tol:
		d |= 1 << dITLSum
		r.ITLs = nil
	}
	return d
}

func badGaps(gaps []float64) bool {
	for _, x := range gaps {
		if !evidence.Present(x) || x < 0 {
			return true
		}
	}
	return false
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// sampleUnits keeps raw positive values, valid rows or not: a file in the
// wrong unit is wrong everywhere, and its rows may fail other checks.
func (q *quality) sampleUnits(r *Record) {
	if evidence.Present(r.TTFT) && r.TTFT > 0 {
		q.ttft.add(r.TTFT)
	}
	if evidence.Present(r.TTFT) && evidence.Present(r.E2E) && r.E2E > r.TTFT && r.Output >= 2 {
		q.tpot.add((r.E2E - r.TTFT) / (r.Output - 1))
	}
	if evidence.Present(r.E2E) && r.E2E > 0 && r.Output >= 2 {
		q.whole.add(r.E2E / r.Output)
	}
	for _, x := range r.ITLs {
		if evidence.Present(x) && x > 0 {
			q.itl.add(x)
		}
	}
}

// Unit thresholds. Real decoding runs 2–300 ms per token, so a median of
// over 1 s per token or per gap is milliseconds, and under 0.5 ms is seconds
// in a milliseconds field. A first token cannot arrive in under 1 ms over
// HTTP. TTFT alone is weaker evidence (an overloaded server queues for
// minutes), so it needs half the requests over 100 s and nine in ten over 10 s.
const (
	msPerTokenAbove = 1.0
	sPerTokenBelow  = 0.0005
	sTTFTBelow      = 0.001
	msTTFTMedian    = 100.0
	msTTFTP10       = 10.0
	minTPOTRows     = 10
	minGaps         = 20
	minTTFTRows     = 10
)

// units refuses a source whose times are in the other unit than declared.
// It judges the file's distribution, never one row. kind names the source's
// fields: "requests" or "bench".
func (q *quality) units(from, kind string) error {
	ttftMs, e2eMs, itlMs := q.ms&msTTFT != 0, q.ms&msE2E != 0, q.ms&msITL != 0
	secs := func(x float64) string { return fmt.Sprintf("%.3g s", x) }
	msec := func(x float64) string { return fmt.Sprintf("%.3g ms", x*1000) }
	asMs := "rename the fields ttft_ms, e2e_ms and itl_ms, or divide them by 1000"
	asS := "rename the fields without _ms, or multiply them by 1000"
	if kind == "bench" {
		asMs = "vllm bench serve writes ttfts and itls in seconds: divide them by 1000"
	}
	if q.itl.n() >= minGaps && !itlMs {
		if m := q.itl.quantile(0.5); m > msPerTokenAbove {
			return fmt.Errorf("%s: times look like milliseconds, not seconds: the median gap between streamed chunks is %s; %s", from, secs(m), asMs)
		}
	}
	if q.tpot.n() >= minTPOTRows && ttftMs == e2eMs {
		m := q.tpot.quantile(0.5)
		if !ttftMs && m > msPerTokenAbove {
			return fmt.Errorf("%s: times look like milliseconds, not seconds: (e2e − ttft) ÷ (output tokens − 1) has a median of %s per token; %s", from, secs(m), asMs)
		}
		if ttftMs && m < sPerTokenBelow {
			return fmt.Errorf("%s: ttft_ms and e2e_ms look like seconds, not milliseconds: (e2e − ttft) ÷ (output tokens − 1) has a median of %s per token; %s", from, msec(m), asS)
		}
		if !ttftMs {
			return nil // per-token time is the better witness: TTFT alone may be queueing
		}
	}
	// A long request that did not stream still took a sane time per token:
	// seconds, whatever its TTFT.
	if !ttftMs && !e2eMs && q.whole.n() >= minTPOTRows && q.whole.quantile(0.5) <= msPerTokenAbove {
		return nil
	}
	if q.ttft.n() >= minTTFTRows {
		m, p10 := q.ttft.quantile(0.5), q.ttft.quantile(0.1)
		if ttftMs && m < sTTFTBelow {
			return fmt.Errorf("%s: ttft_ms looks like seconds, not milliseconds: the median first token came after %s; %s", from, msec(m), asS)
		}
		if !ttftMs && m > msTTFTMedian && p10 > msTTFTP10 {
			return fmt.Errorf("%s: ttft looks like milliseconds, not seconds: median %s, and nine requests in ten over %s; %s", from, secs(m), secs(p10), asMs)
		}
	}
	return nil
}

// finish judges the source as a whole once every row is read: wrong units
// and a majority of bad rows refuse it, fewer bad rows become notes.
func (a *Accumulator) finish(from, kind string) ([]string, error) {
	q := &a.q
	if err := q.units(from, kind); err != nil {
		return nil, err
	}
	skipped := q.skippedTotal()
	switch {
	case q.rows == 0:
		return nil, fmt.Errorf("%s: no requests in the file", from)
	case skipped == q.rows:
		return nil, fmt.Errorf("%s: none of the %d rows is a valid request: %s", from, q.rows, q.skipList())
	case 2*skipped > q.rows:
		return nil, fmt.Errorf("%s: %d of %d rows are invalid, too many to trust the rest: %s", from, skipped, q.rows, q.skipList())
	}
	var notes []string
	if skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d rows skipped: %s", skipped, q.rows, q.skipList()))
	}
	var drops []string
	for i, n := range q.dropped {
		if n > 0 {
			drops = append(drops, fmt.Sprintf(dropText[i], n))
		}
	}
	if len(drops) > 0 {
		notes = append(notes, "fields dropped from rows that were kept: "+strings.Join(drops, ", "))
	}
	return notes, nil
}

// skipList: "7 e2e < ttft (first line 17: e2e 0.1 < ttft 0.3), 2 unreadable (…)".
func (q *quality) skipList() string {
	var parts []string
	for _, r := range skipReasons {
		if n := q.skipped[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (first %s)", n, r.text, q.first[r]))
		}
	}
	return strings.Join(parts, ", ")
}

// Rows is how many rows (lines, or a benchmark's per-request entries) the
// source held; 0 for a summary-only benchmark.
func (a *Accumulator) Rows() int { return a.q.rows }

// Skipped is how many rows were left out, by reason.
func (a *Accumulator) Skipped() map[string]int {
	if len(a.q.skipped) == 0 {
		return nil
	}
	out := map[string]int{}
	for r, n := range a.q.skipped {
		out[r.key] = n
	}
	return out
}

// sample is a reservoir of values: enough for a median, memory bounded.
// Once full it skips ahead by Li's Algorithm L (a random draw per kept
// value, not per value seen: millions of gaps pass through it).
type sample struct {
	vals   []float64
	seen   int
	sorted bool
	rng    *rand.Rand
	w      float64 // Algorithm L's running weight
	next   int     // the value (by seen) to keep next
}

const sampleSize = 4096

// newITLSample is the empty sample of gaps, also filled while a bench
// result streams.
func newITLSample() sample { return newSample(4) }

func newSample(seed int64) sample { return sample{rng: rand.New(rand.NewSource(seed))} }

func (s *sample) add(x float64) {
	s.seen++
	if len(s.vals) < sampleSize {
		s.sorted = false
		s.vals = append(s.vals, x)
		if len(s.vals) == sampleSize {
			s.w = 1
			s.skip()
		}
		return
	}
	if s.seen == s.next {
		s.sorted = false
		s.vals[s.rng.Intn(sampleSize)] = x
		s.skip()
	}
}

// skip draws which value the reservoir keeps next.
func (s *sample) skip() {
	u := func() float64 { return 1 - s.rng.Float64() } // (0, 1]: a log of it is finite
	s.w *= math.Exp(math.Log(u()) / sampleSize)
	gap := 0.0
	if s.w < 1 {
		gap = math.Floor(math.Log(u()) / math.Log1p(-s.w))
	}
	s.next = s.seen + 1 + int(min(gap, 1<<40))
}

func (s *sample) n() int { return s.seen }

func (s *sample) quantile(p float64) float64 {
	if !s.sorted {
		sort.Float64s(s.vals)
		s.sorted = true
	}
	return quantile(s.vals, p)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n-- // not inside a UTF-8 sequence
	}
	return s[:n] + "…"
}
