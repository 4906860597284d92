// Package logs reads vLLM server logs: the periodic stats lines of the V0 and
// V1 engines become a window of gauges (running, waiting, KV usage, prefix
// hit rate) and counters (prompt and generated tokens, preemptions), so the
// same mapping and rules apply as for metrics. Other lines are skipped.
package logs

import (
	"bufio"
	"fmt"
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/vllm"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// The head of a stats line, V0 and V1 (vllm/v1/metrics/loggers.py and vllm/engine/metrics.py in vllm-project/vllm).
var statsRe = regexp.MustCompile(`(?:Engine (\d{3}): |(\d+) Engines Aggregated: )?Avg prompt throughput: ([\d.]+) tokens/s, ` +
	`Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs, (?:Swapped: \d+ reqs, Pending|Waiting): (\d+) reqs`)

// Timestamp as vLLM's logger prints it: "INFO 02-28 21:48:18".
var timeRe = regexp.MustCompile(`(?:INFO|DEBUG|WARNING) (\d\d-\d\d \d\d:\d\d:\d\d)`)

// V0 prints prefix caching on its own line.
var v0PrefixRe = regexp.MustCompile(`Prefix cache hit rate: GPU: ([\d.]+)%`)

// Result is what a log gave.
type Result struct {
	Window *window.Window
	// StatsLines, Skipped: lines read as stats, lines that looked like stats
	// lines but could not be read.
	StatsLines, Skipped, Lines int
}

type sample struct {
	t                    time.Time
	prompt, gen          float64
	running, waiting     float64
	kv, hit, preemptions float64
	// sawPreemptions: the line reports preemptions (V1 from 0.11.1 prints
	// the field only when non-zero; older versions never do).
	sawPreemptions bool
}

// Read parses a log. model names the target (logs do not carry it); year
// places the month-day timestamps.
func Read(r io.Reader, model string, year int, from string) (*Result, error) {
	res := &Result{}
	byEngine := map[string][]sample{}
	var lastEngine string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		res.Lines++
		if m := v0PrefixRe.FindStringSubmatch(line); m != nil && !strings.Contains(line, "Avg prompt throughput") {
			if s := byEngine[lastEngine]; len(s) > 0 {
				s[len(s)-1].hit = parsePct(m[1])
			}
			continue
		}
		if !strings.Contains(line, "Avg prompt throughput") {
			continue
		}
		m := statsRe.FindStringSubmatch(line)
		tm := timeRe.FindStringSubmatch(line)
		if m == nil || tm == nil {
			res.Skipped++
			continue
		}
		t, err := time.Parse("2006 01-02 15:04:05", fmt.Sprintf("%d %s", year, tm[1]))
		if err != nil {
			res.Skipped++
			continue
		}
		engine := "0"
		switch {
		case m[1] != "":
			n, _ := strconv.Atoi(m[1])
			engine = strconv.Itoa(n)
		case m[2] != "":
			engine = "all"
		}
		s := sample{t: t, prompt: num(m[3]), gen: num(m[4]), running: num(m[5]), waiting: num(m[6]),
			kv: math.NaN(), hit: math.NaN()}
		for _, part := range strings.Split(line[strings.Index(line, m[0])+len(m[0]):], ", ") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), ": ")
			if !ok {
				continue
			}
			switch k {
			case "GPU KV cache usage":
				s.kv = parsePct(v)
			case "Prefix cache hit rate":
				s.hit = parsePct(v)
			case "Preemptions":
				s.preemptions, s.sawPreemptions = num(v), true
			case "Waiting", "Deferred":
			}
		}
		byEngine[engine] = append(byEngine[engine], s)
		lastEngine = engine
		res.StatsLines++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", from, err)
	}
	if res.StatsLines == 0 {
		return nil, fmt.Errorf("%s: no vLLM stats lines (\"Avg prompt throughput: …\") in %d lines: is --disable-log-stats set, or is this another log?", from, res.Lines)
	}
	// Per-engine lines are finer than the aggregated ones; use them when present.
	if len(byEngine) > 1 {
		delete(byEngine, "all")
	}
	res.Window = build(byEngine, model, from)
	if res.Skipped > 0 {
		res.Window.Notes = append(res.Window.Notes, fmt.Sprintf("%s: %d stats lines could not be read", from, res.Skipped))
	}
	if res.StatsLines < 10 {
		res.Window.Notes = append(res.Window.Notes, fmt.Sprintf("%s: only %d stats lines: a thin sample, so read the verdict with care", from, res.StatsLines))
	}
	return res, nil
}

func num(s string) float64 {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return math.NaN()
	}
	return x
}

func parsePct(s string) float64 {
	return num(strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(s, ".")), "%")) / 100
}

// build lays the engines' samples on one time axis: the logging rounds, each
// at the time of its first line (engines log one after another in the same
// round, so a round may straddle a second). Points are placed at their
// lines' times, so a pause in the log (idle lines at DEBUG, a cut) stays a
// pause and is noted.
func build(byEngine map[string][]sample, model, from string) *window.Window {
	w := window.New()
	w.From = from
	type line struct {
		eng string
		i   int
	}
	var all []line
	for eng, ss := range byEngine {
		for i := range ss {
			all = append(all, line{eng, i})
		}
	}
	sort.Slice(all, func(a, b int) bool {
		ta, tb := byEngine[all[a].eng][all[a].i].t, byEngine[all[b].eng][all[b].i].t
		if !ta.Equal(tb) {
			return ta.Before(tb)
		}
		return all[a].eng < all[b].eng
	})
	// idx[engine][i] is the round of the engine's i-th line.
	idx := map[string][]int{}
	for eng, ss := range byEngine {
		idx[eng] = make([]int, len(ss))
	}
	var times []time.Time
	inRound := map[string]bool{}
	for _, l := range all {
		t := byEngine[l.eng][l.i].t
		if len(times) == 0 || inRound[l.eng] || t.Sub(times[len(times)-1]) > time.Second {
			times = append(times, t)
			inRound = map[string]bool{}
		}
		inRound[l.eng] = true
		idx[l.eng][l.i] = len(times) - 1
	}
	// Each line covers the logging interval before it (vLLM's default 10 s;
	// the median spacing of the rounds when there are several): a pause
	// longer than GapFactor of them is time no line covers.
	interval := 10 * time.Second
	if len(times) > 1 {
		d := make([]time.Duration, len(times)-1)
		for i := 1; i < len(times); i++ {
			d[i-1] = times[i].Sub(times[i-1])
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		interval = d[len(d)/2]
		if len(d)%2 == 0 {
			interval = (d[len(d)/2-1] + d[len(d)/2]) / 2
		}
	}
	w.Start, w.End = times[0].Add(-interval), times[len(times)-1]
	w.Points = len(times)
	if len(times) > 1 {
		w.Times = times
		w.NoteGaps()
	}
	engines := make([]string, 0, len(byEngine))
	for e := range byEngine {
		engines = append(engines, e)
	}
	sort.Strings(engines)
	for _, eng := range engines {
		ss := byEngine[eng]
		l := window.Labels{"model_name": model, "engine": eng}
		points := func(f func(sample) float64) []float64 {
			p := make([]float64, len(times))
			for i := range p {
				p[i] = math.NaN()
			}
			for i, s := range ss {
				p[idx[eng][i]] = f(s)
			}
			return p
		}
		add := func(name string, p []float64) {
			w.Gauges[name] = append(w.Gauges[name], window.Gauge{Labels: l, Points: p})
		}
		add(vllm.Name(engine.Running), points(func(s sample) float64 { return s.running }))
		add(vllm.Name(engine.Waiting), points(func(s sample) float64 { return s.waiting }))
		add(vllm.Name(engine.KVUsage), points(func(s sample) float64 { return s.kv }))
		// The log's hit rate is over the last 1000 requests: a gauge, as V0 had.
		add(vllm.Name(engine.PrefixHitGauge), points(func(s sample) float64 { return s.hit }))
		var prompt, gen, pre float64
		sawPre := false
		prev := w.Start
		for _, s := range ss {
			// After a pause the line's average covers its own interval,
			// not the pause: idle rounds are logged at DEBUG.
			dt := s.t.Sub(prev)
			if dt > window.GapFactor*interval {
				dt = interval
			}
			prev = s.t
			prompt += s.prompt * dt.Seconds()
			gen += s.gen * dt.Seconds()
			pre += s.preemptions
			sawPre = sawPre || s.sawPreemptions
		}
		w.Counters[vllm.Name(engine.PromptTokens)] = append(w.Counters[vllm.Name(engine.PromptTokens)], window.Counter{Labels: l, Increase: prompt})
		w.Counters[vllm.Name(engine.GenTokens)] = append(w.Counters[vllm.Name(engine.GenTokens)], window.Counter{Labels: l, Increase: gen})
		// Without a single Preemptions field the count is unknown, not zero:
		// older versions never print it.
		if sawPre {
			w.Counters[vllm.Name(engine.Preemptions)] = append(w.Counters[vllm.Name(engine.Preemptions)], window.Counter{Labels: l, Increase: pre})
		}
	}
	return w
}
