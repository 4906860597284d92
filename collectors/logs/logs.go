// Package logs reads serving engines' logs as people paste them: vLLM's
// periodic stats lines (V0 and V1), its preemption warnings and speculative
// decoding lines, and SGLang's scheduler lines (prefill and decode batches,
// retractions). The readings become a window of gauges (running, waiting,
// swapped, KV usage, prefix hit rate) and counters (prompt and generated
// tokens, preemptions) under the engine's own metric names, so the same
// mapping and rules apply as for metrics. Other lines are skipped; lines
// that look like stats lines but cannot be read are counted and quoted.
package logs

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// Result is what a log gave.
type Result struct {
	Window *window.Window
	// Engine is the engine whose lines were read: vllm or sglang.
	Engine string
	// StatsLines are readings of the engine's state; Events are warnings
	// and speculative decoding lines read; Skipped are lines that looked
	// like stats lines but could not be read; Joined are records a wrap
	// had split over several lines, joined again.
	StatsLines, Events, Skipped, Joined, Lines int
	// Headless are stats lines read though cut at their start.
	Headless int
	// Model and Version are what the log's start-up lines say, if anything.
	Model, Version string
}

// unread counts the lines that looked like stats lines but could not be
// read, by reason, with the first of each.
type unread struct {
	n     int
	why   map[string]int
	first map[string]string
}

func (u *unread) add(why, line string) {
	if u.why == nil {
		u.why, u.first = map[string]int{}, map[string]string{}
	}
	u.n++
	if u.why[why] == 0 {
		u.first[why] = line
	}
	u.why[why]++
}

// say is one line: how many, why, and one of them quoted.
func (u *unread) say() string {
	whys := make([]string, 0, len(u.why))
	for w := range u.why {
		whys = append(whys, w)
	}
	sort.Slice(whys, func(i, j int) bool {
		return u.why[whys[i]] > u.why[whys[j]] || u.why[whys[i]] == u.why[whys[j]] && whys[i] < whys[j]
	})
	var parts []string
	for _, w := range whys {
		parts = append(parts, fmt.Sprintf("%d %s", u.why[w], w))
	}
	q := u.first[whys[0]]
	if len(q) > 160 {
		q = q[:157] + "…"
	}
	verb := "look"
	if u.n == 1 {
		verb = "looks"
	}
	return fmt.Sprintf("%d line%s %s like a stats line but could not be read (%s), e.g. %q",
		u.n, plural(u.n), verb, strings.Join(parts, ", "), q)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Start-up lines that name the model and the version.
var (
	modelRe   = regexp.MustCompile(`(?:\bmodel|model_path|served_model_name)='([^']+)'`)
	versionRe = regexp.MustCompile(`(?:vLLM API server version|vLLM engine \(|V1 LLM engine \(|version[ =])v?(\d+\.\d+[\w.+-]*)`)
	// A head repeated inside one line: records glued without a newline.
	gluedHead = regexp.MustCompile(`Avg prompt throughput:`)
	gluedCut  = regexp.MustCompile(`(?:\((?:[A-Za-z_]+ )?pid=\d+\)\s*)?(?:INFO|WARNING|DEBUG|ERROR)\s+\d\d-\d\d\s`)
)

// Read parses a log. model names the target when the log does not; year
// places month-day timestamps (vLLM's carry no year).
func Read(r io.Reader, model string, year int, from string) (*Result, error) {
	res := &Result{}
	p := newPhysical(r)
	var recs []record
	var bad unread
	for {
		line, ok := p.next()
		if !ok {
			break
		}
		if res.Model == "" {
			if m := modelRe.FindStringSubmatch(line); m != nil {
				res.Model = m[1]
			}
		}
		if res.Version == "" {
			if m := versionRe.FindStringSubmatch(line); m != nil {
				res.Version = m[1]
			}
		}
		var wrapped []int
		if headOf(line) < 0 {
			if line, wrapped = p.joinHead(line); wrapped == nil {
				if rec, ok := headless(line); ok {
					recs = append(recs, rec)
					res.Headless++
					continue
				}
				if lookalike.MatchString(line) {
					bad.add("without a stats head", line)
				}
				continue
			}
		}
		// A record cut short is joined with the lines that continue it.
		text, rec, why := line, record{}, ""
		var held bool
		// The lengths of the record's physical lines: a terminal wraps at
		// one width, so pieces of that width are followed by more.
		pieces := []int{len(line)}
		if wrapped != nil {
			res.Joined++
			pieces = wrapped
		}
		for n := 1; ; n++ {
			rec, held, why = parse(text, year)
			if n >= maxJoin {
				break
			}
			nx, ok := p.peek()
			if !ok || !continuation(nx) {
				break
			}
			whole := held && why == ""
			if whole {
				// A record read whole still takes a next line that starts
				// with a field separator, or one that goes on with a number
				// after pieces of one terminal width, if it reads whole
				// with it: a wrap fell between two fields, or inside the
				// last number (SGLang's fields carry no unit to tell); the
				// rest of a record is its last, shorter piece, where a
				// piece of the full width is the next record's start.
				next := strings.TrimLeft(nx, " \t")
				w, wraps := wrapWidth(pieces)
				if !strings.HasPrefix(next, ",") && !(startsNumber(next) && wraps && len(nx) < w-1) {
					break
				}
				if _, h, w := parse(text+next, year); !h || w != "" {
					break
				}
			}
			p.next()
			pieces = append(pieces, len(nx))
			text += strings.TrimLeft(nx, " \t")
			if n == 1 && wrapped == nil {
				res.Joined++
			}
		}
		if !held {
			if lookalike.MatchString(text) {
				bad.add(whyCut, text)
			}
			continue
		}
		for _, seg := range splitGlued(text) {
			if seg != text {
				rec, _, why = parse(seg, year)
			}
			if why != "" {
				bad.add(why, seg)
				continue
			}
			recs = append(recs, rec)
		}
	}
	res.Lines = p.n
	if err := p.sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	res.Skipped = bad.n
	if v, s := engineLines(recs); v >= 2 && s >= 2 {
		return nil, &MixedEnginesError{From: from, VLLM: v, SGLang: s}
	}
	engine, readings, events := sortOut(recs)
	res.StatsLines, res.Events = readings, events
	preempted, speculated := false, false
	for _, r := range recs {
		preempted = preempted || r.sawPreemptions && (r.kind == vllmPreempt || r.kind == sglRetract)
		speculated = speculated || r.kind == specDecode && (!math.IsNaN(r.drafted) || !math.IsNaN(r.acceptLen)) ||
			r.kind == kvTransfer && r.xfers > 0
	}
	if readings == 0 && !preempted && !speculated {
		if bad.n > 0 {
			return nil, &noStats{fmt.Sprintf("%s: no stats line could be read in %d line%s: %s", from, res.Lines, plural(res.Lines), bad.say())}
		}
		if events > 0 {
			return nil, &noStats{fmt.Sprintf("%s: %d warning or speculative-decoding line%s but no periodic stats line (\"Avg prompt throughput: …\" or \"Decode batch …\") in %d lines: is --disable-log-stats set?",
				from, events, plural(events), res.Lines)}
		}
		return nil, &noStats{fmt.Sprintf("%s: no vLLM stats lines (\"Avg prompt throughput: …\") nor SGLang scheduler lines (\"Decode batch …\") in %d lines: is --disable-log-stats set, or is this another log?", from, res.Lines)}
	}
	if readings == 0 {
		engine = eventsEngine(recs)
	}
	res.Engine = engine
	if model == "" {
		model = res.Model
	}
	if model == "" {
		model = engine + " (from log)"
	}
	w, notes := build(recs, engine, model, from)
	res.Window = w
	if res.Joined > 0 {
		w.Notes = append(w.Notes, fmt.Sprintf("%s: %d stats line%s had been wrapped over several lines: joined", from, res.Joined, plural(res.Joined)))
	}
	if res.Model != "" || res.Version != "" {
		w.Notes = append(w.Notes, fmt.Sprintf("%s: the start-up lines say%s%s", from,
			map[bool]string{true: " model " + res.Model, false: ""}[res.Model != ""],
			map[bool]string{true: " version " + res.Version, false: ""}[res.Version != ""]))
	}
	if res.Headless > 0 {
		w.Notes = append(w.Notes, fmt.Sprintf("%s: %d stats line%s cut at the start (the head lost) read from the fields left", from, res.Headless, plural(res.Headless)))
	}
	if bad.n > 0 {
		w.Notes = append(w.Notes, from+": "+bad.say())
	}
	w.Notes = append(w.Notes, notes...)
	switch {
	case readings == 0 && !preempted:
		var spec, xfer int
		for _, r := range recs {
			switch r.kind {
			case specDecode:
				spec++
			case kvTransfer:
				xfer++
			}
		}
		if spec > 0 {
			w.Notes = append(w.Notes, fmt.Sprintf("%s: no stats line, only %d speculative decoding line%s: they say what speculation accepts, and nothing of the batch, the queue or the speed of tokens", from, spec, plural(spec)))
		}
		if xfer > 0 {
			w.Notes = append(w.Notes, fmt.Sprintf("%s: no stats line, only %d KV transfer line%s: they say how long pulling KV from the prefill instance took, and nothing of the batch, the queue or the speed of tokens", from, xfer, plural(xfer)))
		}
	case readings == 0:
		w.Notes = append(w.Notes, fmt.Sprintf("%s: no stats line, only %d preemption or retraction warning%s: they say the KV cache ran out, and nothing of the batch or the queue", from, events, plural(events)))
	case readings < ThinReadings:
		w.Notes = append(w.Notes, fmt.Sprintf("%s: only %d stats line%s: a few readings, not a window, so a verdict from them is tentative", from, readings, plural(readings)))
	}
	return res, nil
}

// eventsEngine is the engine whose warnings a log without stats lines holds.
func eventsEngine(recs []record) string {
	for _, r := range recs {
		if r.kind == sglRetract {
			return "sglang"
		}
	}
	return "vllm"
}

// startsNumber reports whether a line begins with a digit, a point or a
// percent sign: the rest of a number a wrap cut.
func startsNumber(s string) bool {
	return s != "" && (s[0] >= '0' && s[0] <= '9' || s[0] == '.' || s[0] == '%')
}

// wrapWidth returns the terminal width a record's pieces so far were
// wrapped at, and whether they are two or more of it (at least 20; a piece
// a copy trimmed of its last space one short), the last of the full width:
// the wrap goes on.
func wrapWidth(pieces []int) (int, bool) {
	if len(pieces) < 2 {
		return 0, false
	}
	w := pieces[len(pieces)-1]
	if w < 20 {
		return w, false
	}
	// A line joined in front of the head's pieces may be no piece of the
	// wrap: shorter, or longer where the copy wrapped only the record.
	for len(pieces) > 1 && (pieces[0] < w-1 || pieces[0] > w) {
		pieces = pieces[1:]
	}
	if len(pieces) < 2 {
		return w, false
	}
	for _, n := range pieces {
		if n < w-1 || n > w {
			return w, false
		}
	}
	return w, true
}

// ThinReadings is the fewest stats lines a log needs before its verdict is
// more than tentative.
const ThinReadings = 10

// splitGlued cuts a line holding several vLLM stats records (a paste that
// lost its newlines) into one line per record.
func splitGlued(s string) []string {
	idx := gluedHead.FindAllStringIndex(s, -1)
	if len(idx) < 2 {
		return []string{s}
	}
	var out []string
	start := 0
	for k := 1; k < len(idx); k++ {
		seg := s[idx[k-1][1]:idx[k][0]]
		cut := idx[k][0]
		if m := gluedCut.FindAllStringIndex(seg, -1); len(m) > 0 {
			cut = idx[k-1][1] + m[len(m)-1][0]
		}
		out = append(out, s[start:cut])
		start = cut
	}
	return append(out, s[start:])
}

// engineLines counts the readings of each engine in a log.
func engineLines(recs []record) (vllm, sglang int) {
	for _, r := range recs {
		switch r.kind {
		case vllmStats:
			vllm++
		case sglPrefill, sglDecode:
			sglang++
		}
	}
	return vllm, sglang
}

// sortOut decides which engine's lines the log holds (the one with more
// readings when both appear) and drops the other's; it counts readings and
// events.
func sortOut(recs []record) (string, int, int) {
	v, s := engineLines(recs)
	engine := "vllm"
	if s > v {
		engine = "sglang"
	}
	readings, events := 0, 0
	for _, r := range recs {
		switch {
		case r.kind == vllmStats && engine == "vllm", (r.kind == sglPrefill || r.kind == sglDecode) && engine == "sglang":
			readings++
		case r.kind == vllmPreempt || r.kind == specDecode || r.kind == sglRetract || r.kind == vllmPrefix || r.kind == kvTransfer:
			events++
		}
	}
	return engine, readings, events
}

// interval is a logging interval: the median spacing of dated readings, or
// the engine's default.
func interval(times []time.Time, def time.Duration) time.Duration {
	if len(times) < 2 {
		return def
	}
	d := make([]time.Duration, 0, len(times)-1)
	for i := 1; i < len(times); i++ {
		if g := times[i].Sub(times[i-1]); g > 0 {
			d = append(d, g)
		}
	}
	if len(d) == 0 {
		return def
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d)%2 == 0 {
		return (d[len(d)/2-1] + d[len(d)/2]) / 2
	}
	return d[len(d)/2]
}
