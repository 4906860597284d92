package logs

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func read(t *testing.T, file string) *Result {
	t.Helper()
	f, err := os.Open("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read only
	r, err := Read(f, "m", 2026, file)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestV1Lines(t *testing.T) {
	r := read(t, "v1-kv-full.log")
	if r.StatsLines != 60 || r.Skipped != 0 || r.Lines != 100 {
		t.Fatalf("stats %d skipped %d lines %d", r.StatsLines, r.Skipped, r.Lines)
	}
	w := r.Window
	kv := w.Gauges["vllm:kv_cache_usage_perc"][0].Points
	if len(kv) != 60 || kv[0] != 0.99 {
		t.Fatalf("kv points %d first %v", len(kv), kv[0])
	}
	if w.End.Sub(w.Start).Seconds() != 600 {
		t.Fatalf("window %v", w.End.Sub(w.Start))
	}
	if len(w.Counters["vllm:num_preemptions_total"]) != 1 {
		t.Fatal("preemptions were logged, so they are known")
	}
	if g := w.Counters["vllm:prompt_tokens_total"][0].Increase; g < 60*10*1500 || g > 60*10*3000 {
		t.Fatalf("prompt tokens %v", g)
	}
}

func TestV0LinesAndPrefixLine(t *testing.T) {
	r := read(t, "v0-kv-full.log")
	w := r.Window
	if r.StatsLines != 60 || w.Gauges["vllm:num_requests_waiting"][0].Points[0] != 36 {
		t.Fatalf("stats %d, pending read as %v", r.StatsLines, w.Gauges["vllm:num_requests_waiting"][0].Points[0])
	}
	if hit := w.Gauges["vllm:gpu_prefix_cache_hit_rate"][0].Points[0]; math.Abs(hit-0.0581) > 1e-9 {
		t.Fatalf("V0 prefix line read as %v", hit)
	}
	if _, ok := w.Counters["vllm:num_preemptions_total"]; ok {
		t.Fatal("V0 logs never print preemptions: the count must stay unknown, not zero")
	}
}

func TestAggregatedEnginesAndBrokenLines(t *testing.T) {
	data, _ := os.ReadFile("testdata/v1-kv-full-short.log")
	broken := string(data) + "(APIServer pid=1) INFO 11-30 14:00:40 [loggers.py:123] Engine 000: Avg prompt throughput: x tokens/s\n"
	r, err := Read(strings.NewReader(broken), "m", 2026, "f")
	if err != nil {
		t.Fatal(err)
	}
	if r.StatsLines != 3 || r.Skipped != 1 {
		t.Fatalf("stats %d skipped %d", r.StatsLines, r.Skipped)
	}
	if r.Window.Gauges["vllm:num_requests_running"][0].Labels["engine"] != "all" {
		t.Fatal("aggregated lines are engine all")
	}
	notes := strings.Join(r.Window.Notes, " | ")
	if !strings.Contains(notes, "1 line looks like a stats line but could not be read (1 with a value that is not a number)") || !strings.Contains(notes, "only 3 stats lines") {
		t.Fatalf("notes %q", notes)
	}
}

func TestNoStatsLines(t *testing.T) {
	_, err := Read(strings.NewReader("INFO 11-30 14:00:00 [api_server.py:1] Started server\n"), "m", 2026, "x.log")
	if err == nil || !strings.Contains(err.Error(), "no vLLM stats lines") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v", err)
	}
}

func FuzzRead(f *testing.F) {
	data, _ := os.ReadFile("testdata/v1-kv-full-short.log")
	f.Add(data)
	v0, _ := os.ReadFile("testdata/v0-kv-full.log")
	f.Add(v0[:600])
	for _, seed := range []string{
		"[2025-11-20 12:00:01 TP0] Decode batch, #running-req: 42, #token: 150112, token usage: 0.36, cuda graph: True, gen throughput (token/s): 3307.90, #queue-req: 6, \n[2025-11-20 12:00:02 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.4213 -> 0.7000\n",
		"Processed prompts:   0%|  | 34/10000 [00:29<3:36:54]INFO 06-16 21:24:15 metrics.py:341] Avg prompt throughput: 2706.1 tokens/s, Avg generation throughput: 13395.4 tokens/s, Running: 34 reqs, Swapped: 100 reqs, Pen\nding: 9832 reqs, GPU KV cache usage: 99.2%, CPU KV cache usage: 70.4%.\r\nWARNING 06-16 21:24:15 scheduler.py:1089] Sequence group 165 is preempted by PreemptionMode.SWAP mode. total_num_cumulative_preemption=151\n",
		"INFO 02-03 09:15:27 loggers.py:72] SpecDecoding metrics: Mean acceptance length: 2.71, Accepted: 6124 tokens, Drafted: 10740 tokens, Per-position acceptance rate: 0.803, 0.552\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Read(strings.NewReader(string(in)), "m", 2026, "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if r.Window.Points < 1 || r.StatsLines+r.Events < 1 {
			t.Fatalf("counts %+v", r)
		}
		for name, gs := range r.Window.Gauges {
			for _, g := range gs {
				for _, x := range g.Points {
					if x < 0 || math.IsInf(x, 0) {
						t.Fatalf("%s reads %v", name, x)
					}
				}
			}
		}
		for name, cs := range r.Window.Counters {
			for _, c := range cs {
				if !(c.Increase >= 0) || math.IsInf(c.Increase, 0) {
					t.Fatalf("%s increases by %v", name, c.Increase)
				}
			}
		}
	})
}

func statsLine(t time.Time, eng string, prompt float64, running int) string {
	return fmt.Sprintf("(APIServer pid=1) INFO %s [loggers.py:123] Engine %s: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: 10.0 tokens/s, Running: %d reqs, Waiting: 0 reqs, GPU KV cache usage: 10.0%%, Prefix cache hit rate: 0.0%%\n",
		t.Format("01-02 15:04:05"), eng, prompt, running)
}

// Idle stats lines are logged at DEBUG: a log whose lines pause for seven
// minutes draws its points at their times, names the pause, does not
// stretch the line after it over the pause, and takes its rates over the
// time its lines cover, as its gauges are: a stream's speed is tokens over
// the time they were counted in.
func TestLogWithAGap(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	var b strings.Builder
	var secs []int
	for s := 10; s <= 900; s += 10 {
		if s > 120 && s < 540 {
			continue
		}
		secs = append(secs, s)
		b.WriteString(statsLine(t0.Add(time.Duration(s)*time.Second), "000", 100, 5))
	}
	r, err := Read(strings.NewReader(b.String()), "m", 2026, "gap.log")
	if err != nil {
		t.Fatal(err)
	}
	w := r.Window
	if w.Points != len(secs) || !w.Start.Equal(t0) || !w.End.Equal(t0.Add(900*time.Second)) || w.Seconds() != float64(10*len(secs)) {
		t.Fatalf("points %d, start %v, seconds %v", w.Points, w.Start, w.Seconds())
	}
	got := w.Timeline(w.Gauges["vllm:num_requests_running"][0].Points)
	if len(got) != len(secs) {
		t.Fatalf("timeline %v", got)
	}
	for i, p := range got {
		if p[0] != float64(secs[i]) {
			t.Fatalf("line %d drawn at %v s, logged at %d s", i, p[0], secs[i])
		}
	}
	if notes := strings.Join(w.Notes, "\n"); !strings.Contains(notes, "no samples from 02:00 to 09:00 (7m00s)") {
		t.Errorf("the pause is not named: %q", notes)
	}
	// Each line's 100 tokens/s covers its own 10 s, the pause's idle lines
	// none.
	if got := w.Counters["vllm:prompt_tokens_total"][0].Increase; got != 100*10*float64(len(secs)) {
		t.Errorf("prompt tokens %v, want %v", got, 100*10*len(secs))
	}
}

// Engines log one after another in each round: a round straddling a second
// is one point, so the engines' running add up at every point.
func TestEnginesOfARoundShareAPoint(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := range 12 {
		at := t0.Add(time.Duration(10*i+9) * time.Second)
		b.WriteString(statsLine(at, "000", 100, 5))
		if i%3 == 0 {
			at = at.Add(time.Second)
		}
		b.WriteString(statsLine(at, "001", 100, 7))
	}
	r, err := Read(strings.NewReader(b.String()), "m", 2026, "dp.log")
	if err != nil {
		t.Fatal(err)
	}
	w := r.Window
	if w.Points != 12 || len(w.Notes) != 0 {
		t.Fatalf("points %d, notes %q", w.Points, w.Notes)
	}
	for _, g := range w.Gauges["vllm:num_requests_running"] {
		for i, p := range g.Points {
			if math.IsNaN(p) {
				t.Fatalf("engine %s has no point in round %d: %v", g.Labels["engine"], i, g.Points)
			}
		}
	}
}

// The reader under any prefix that starts a log record (a timestamp, a
// process tag, a compose name: the prefixes collectors add), any wrap
// width and any other log line between records: the running and waiting
// counts it reads are the ones written. (Junk that no logger writes, before
// a record or between two, can make a wrap unreadable to anyone.)
func FuzzReadMangled(f *testing.F) {
	f.Add("(APIServer pid=1) ", uint8(80), "INFO:     10.0.0.1:5000 - \"GET /metrics HTTP/1.1\" 200 OK", true)
	f.Add("vllm-1  | ", uint8(61), "", false)
	f.Add("2025-03-17T15:38:20.123Z ", uint8(0), "Traceback (most recent call last):", true)
	f.Add("\x1b[1;36m(APIServer pid=7)\x1b[0;0m ", uint8(33), "   ", false)
	f.Fuzz(func(t *testing.T, prefix string, width uint8, noise string, sglang bool) {
		if prefix != "" && !recordStart.MatchString(prefix) || noise != "" && !recordStart.MatchString(noise) {
			return
		}
		if strings.ContainsAny(prefix+noise, "\r\n") || headOf(prefix+noise) >= 0 ||
			lookalike.MatchString(prefix+noise) || strings.ContainsAny(prefix, "#,") {
			return
		}
		t0 := time.Date(2025, 3, 17, 15, 0, 0, 0, time.UTC)
		var b strings.Builder
		var running, waiting []float64
		for i := 0; i < 6; i++ {
			ts := t0.Add(time.Duration(i) * 10 * time.Second)
			run, wait := float64(10+i*7), float64(90-i*11)
			running, waiting = append(running, run), append(waiting, wait)
			var line string
			if sglang {
				line = fmt.Sprintf("[%s TP0] Decode batch, #running-req: %d, #token: 9000, token usage: 0.%02d, cuda graph: True, gen throughput (token/s): 900.00, #queue-req: %d",
					ts.Format("2006-01-02 15:04:05"), int(run), 10+i, int(wait))
			} else {
				line = fmt.Sprintf("INFO %s [loggers.py:259] Engine 000: Avg prompt throughput: 23998.2 tokens/s, Avg generation throughput: 18.1 tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: 19.%d%%, Prefix cache hit rate: 0.0%%",
					ts.Format("01-02 15:04:05"), int(run), int(wait), i)
			}
			line = prefix + line
			// No terminal is narrower than 30 columns, and none counts an
			// escape sequence in its width.
			if width >= 30 && strings.Contains(prefix, "\x1b") {
				return
			}
			if width >= 30 {
				line = trimWrap(line, int(width))
				// One wrap inside SGLang's last number ("#queue-req: 9" and
				// "0") leaves a line that reads whole and a number: with
				// no second wrap to show the width, nobody can tell.
				if parts := strings.Split(line, "\n"); sglang && len(parts) == 2 && startsNumber(parts[1]) {
					return
				}
			}
			b.WriteString(line + "\n")
			if noise != "" {
				b.WriteString(noise + "\n")
			}
		}
		r, err := Read(strings.NewReader(b.String()), "m", 2025, "fuzz")
		if err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		eng := "vllm"
		if sglang {
			eng = "sglang"
		}
		got := func(key string) []float64 { return r.Window.Gauges[name(eng, key)][0].Points }
		if r.StatsLines != 6 || !slicesEqual(got("running"), running) || !slicesEqual(got("waiting"), waiting) {
			t.Fatalf("read %d lines, running %v waiting %v, want %v %v\n%s", r.StatsLines, got("running"), got("waiting"), running, waiting, b.String())
		}
	})
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Speculative decoding lines alone are read: what speculation drafted and
// accepted (verify passes from the per-position list), said to be all the
// log holds. Stats lines beside them add the same counters to the window.
func TestSpeculativeDecodingLines(t *testing.T) {
	spec := "INFO 02-03 09:15:%02d [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.71, Accepted: 6124 tokens, Drafted: 10740 tokens, Per-position acceptance rate: 0.803, 0.552\n"
	stats := "INFO 02-03 09:15:%02d [loggers.py:116] Engine 000: Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: 900.0 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 10.0%%, Prefix cache hit rate: 0.0%%\n"
	check := func(what string, r *Result, lines float64) {
		t.Helper()
		got := map[string]float64{}
		for _, n := range []string{"vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total"} {
			for _, c := range r.Window.Counters[n] {
				got[n] += c.Increase
			}
		}
		if got["vllm:spec_decode_num_draft_tokens_total"] != lines*10740 || got["vllm:spec_decode_num_accepted_tokens_total"] != lines*6124 ||
			got["vllm:spec_decode_num_drafts_total"] != lines*5370 {
			t.Errorf("%s: counters %v, want %v lines of 10740 drafted, 6124 accepted in 5370 passes of 2", what, got, lines)
		}
	}
	r, err := Read(strings.NewReader(fmt.Sprintf(spec, 27)), "", 2025, "x.log")
	if err != nil {
		t.Fatal(err)
	}
	check("alone", r, 1)
	if notes := strings.Join(r.Window.Notes, "\n"); !strings.Contains(notes, "only 1 speculative decoding line") {
		t.Errorf("notes do not say the log holds speculation alone:\n%s", notes)
	}
	var b strings.Builder
	for s := 10; s < 40; s += 10 {
		b.WriteString(fmt.Sprintf(stats, s) + fmt.Sprintf(spec, s))
	}
	r, err = Read(strings.NewReader(b.String()), "", 2025, "x.log")
	if err != nil {
		t.Fatal(err)
	}
	check("with stats", r, 3)
}

// vLLM's KV connector line gives the transfers' count and time (and size),
// alone or beside stats lines; SGLang's decode lines of a split deployment
// give the requests whose KV is on its way.
func TestTransferLines(t *testing.T) {
	const xfer = "(APIServer pid=1) INFO 09-22 13:28:%02d [metrics.py:98] KV Transfer metrics: Num successful transfers=4, " +
		"Avg xfer time (ms)=250.000, P90 xfer time (ms)=400.000, Avg post time (ms)=5.693, P90 post time (ms)=5.693, " +
		"Avg MB per transfer=70.0, Throughput (MB/s)=280.000, Avg number of descriptors=56.0\n"
	const stats = "(APIServer pid=1) INFO 09-22 13:28:%02d [loggers.py:127] Engine 000: Avg prompt throughput: 100.0 tokens/s, " +
		"Avg generation throughput: 200.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 10.0%%, Prefix cache hit rate: 0.0%%\n"
	check := func(what string, r *Result, lines float64) {
		t.Helper()
		h := r.Window.Histograms["vllm:nixl_xfer_time_seconds"]
		b := r.Window.Histograms["vllm:nixl_bytes_transferred"]
		if len(h) != 1 || h[0].Count != 4*lines || math.Abs(h[0].Sum-lines) > 1e-9 || len(b) != 1 || math.Abs(b[0].Sum-4*lines*70e6) > 1 {
			t.Errorf("%s: transfer histograms %+v %+v, want %v transfers of 250 ms and 70 MB", what, h, b, 4*lines)
		}
	}
	r, err := Read(strings.NewReader(fmt.Sprintf(xfer, 10)), "", 2025, "x.log")
	if err != nil {
		t.Fatal(err)
	}
	check("alone", r, 1)
	if notes := strings.Join(r.Window.Notes, "\n"); !strings.Contains(notes, "only 1 KV transfer line") || strings.Contains(notes, "KV cache was full") {
		t.Errorf("notes of a transfer line alone:\n%s", notes)
	}
	var b strings.Builder
	for s := 10; s < 40; s += 10 {
		b.WriteString(fmt.Sprintf(stats, s) + fmt.Sprintf(xfer, s))
	}
	if r, err = Read(strings.NewReader(b.String()), "", 2025, "x.log"); err != nil {
		t.Fatal(err)
	}
	check("with stats", r, 3)
	// A line cut before its count is no transfer.
	if _, err := Read(strings.NewReader("INFO 09-22 13:28:10 [metrics.py:98] KV Transfer metrics: Avg xfer time (ms)=9.8\n"), "", 2025, "x.log"); err == nil {
		t.Error("a transfer line without its count was read")
	}
	const decode = "[2026-08-14 14:02:%02d TP0] Decode batch, #running-req: 3, #token: 266624, token usage: 0.43, pre-allocated usage: 0.22, " +
		"#prealloc-req: 0, #transfer-req: %d, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 183.10, #queue-req: 0\n"
	b.Reset()
	for s, n := range []int{1, 2, 3, 3} {
		b.WriteString(fmt.Sprintf(decode, 40+s, n))
	}
	if r, err = Read(strings.NewReader(b.String()), "", 2026, "d.log"); err != nil {
		t.Fatal(err)
	}
	g := r.Window.Gauges["sglang:num_decode_transfer_queue_reqs"]
	if len(g) != 1 || fmt.Sprint(g[0].Points) != "[1 2 3 3]" {
		t.Errorf("transfer queue %+v, want one series reading 1 2 3 3", g)
	}
}
