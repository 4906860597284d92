package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/sim"
)

// exampleText reads one of an example window's snapshots.
func exampleText(t *testing.T, ex, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", ex, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// edit applies a regexp replacement that must match.
func edit(t *testing.T, s, pattern, repl string) string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	if !re.MatchString(s) {
		t.Fatalf("pattern %q matches nothing", pattern)
	}
	return re.ReplaceAllString(s, repl)
}

// snapshotRun writes the expositions to files and diagnoses them as a
// 15-minute window (one file: totals since start).
func snapshotRun(t *testing.T, format string, texts ...string) (code int, out, errOut string) {
	t.Helper()
	dir := t.TempDir()
	args := []string{"diagnose", "--format", format, "--color", "never"}
	for i, s := range texts {
		p := filepath.Join(dir, "s"+string(rune('0'+i))+".prom")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--snapshot", p)
	}
	if len(texts) > 1 {
		args = append(args, "--snapshot-interval", "15m")
	}
	return runCLI(t, args...)
}

type lintView struct {
	Notes   []string `json:"notes"`
	Targets []struct {
		Primary         struct{ Bottleneck, Status string } `json:"primary"`
		Inconsistencies []struct {
			Check  string
			Fields []string
			Note   string
		} `json:"inconsistencies"`
		Gaps []struct {
			Rule    string
			Details []struct{ Path, Why string }
		} `json:"gaps"`
		Evidence map[string]any `json:"evidence"`
	} `json:"targets"`
}

func lintJSON(t *testing.T, texts ...string) lintView {
	t.Helper()
	code, out, errOut := snapshotRun(t, "json", texts...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v lintView
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Targets) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	return v
}

// withheld asserts that a family is named as not trusted for a field, that
// the field carries no number, and that a rule reading it says why.
func withheld(t *testing.T, v lintView, family, field, why string) {
	t.Helper()
	tg := v.Targets[0]
	named := false
	for _, in := range tg.Inconsistencies {
		if in.Check == "exposition" && strings.Contains(in.Note, family) && strings.Contains(in.Note, why) {
			for _, f := range in.Fields {
				if f == field {
					named = true
				}
			}
		}
	}
	if !named {
		t.Fatalf("%s not withheld for %s with %q: %+v", family, field, why, tg.Inconsistencies)
	}
	if x := evidence.TreeNumber(tg.Evidence, field+".mean"); x == x {
		t.Errorf("%s.mean = %v from a withheld family", field, x)
	}
}

func init() {
	const ttftSum = `vllm:time_to_first_token_seconds_sum\{model_name="meta-llama/Llama-3.1-8B-Instruct",engine="0"\} [0-9.e+]+`
	robustCases = append(robustCases,
		robustCase{Area: "exposition", Input: "the same series twice with different values",
			Want: "the family is withheld and named; rules that read it say it is inconsistent",
			Test: func(t *testing.T) {
				end := exampleText(t, "queueing", "end.prom")
				line := regexp.MustCompile(`(?m)^vllm:num_requests_running\{.*$`).FindString(end)
				end = strings.Replace(end, line, line+"\n"+strings.Replace(line, "256.0", "7.0", 1), 1)
				v := lintJSON(t, exampleText(t, "queueing", "start.prom"), end)
				withheld(t, v, "vllm:num_requests_running", "service.running", "appears twice with different values")
			}},
		robustCase{Area: "exposition", Input: "the same series twice with the same value",
			Want: "read once, with a note; the numbers are those of one series",
			Test: func(t *testing.T) {
				end := exampleText(t, "queueing", "end.prom")
				line := regexp.MustCompile(`(?m)^vllm:num_requests_running\{.*$`).FindString(end)
				end = strings.Replace(end, line, line+"\n"+line, 1)
				v := lintJSON(t, exampleText(t, "queueing", "start.prom"), end)
				if !strings.Contains(strings.Join(v.Notes, "\n"), "vllm:num_requests_running: 1 series repeated") {
					t.Errorf("notes %v", v.Notes)
				}
				if x := evidence.TreeNumber(v.Targets[0].Evidence, "service.running.max"); x != 256 {
					t.Errorf("running max %v, want 256", x)
				}
			}},
		robustCase{Area: "exposition", Input: "cache_config_info repeated",
			Want: "an info series is read once: KV capacity is not multiplied by the repeats",
			Test: func(t *testing.T) {
				s := exampleText(t, "queueing", "end.prom")
				line := regexp.MustCompile(`(?m)^vllm:cache_config_info\{.*$`).FindString(s)
				s = strings.Replace(s, line, line+"\n"+line+"\n"+line, 1)
				v := lintJSON(t, exampleText(t, "queueing", "start.prom"), s)
				if x := evidence.TreeNumber(v.Targets[0].Evidence, "cond.kv_capacity_tokens"); x != 27000*16 {
					t.Errorf("KV capacity %v, want %v", x, 27000*16)
				}
			}},
		robustCase{Area: "window", Input: "one engine stating two KV cache configurations in a window (reconfigured, or two servers blended)",
			Want: "KV capacity is withheld and named, never the sum of both",
			Test: func(t *testing.T) {
				s := exampleText(t, "queueing", "end.prom")
				line := regexp.MustCompile(`(?m)^vllm:cache_config_info\{.*$`).FindString(s)
				s = strings.Replace(s, line, line+"\n"+strings.Replace(line, `num_gpu_blocks="27000"`, `num_gpu_blocks="9000"`, 1), 1)
				tg := lintJSON(t, s).Targets[0]
				if x := evidence.TreeNumber(tg.Evidence, "cond.kv_capacity_tokens"); x == x {
					t.Errorf("KV capacity %v from two configurations", x)
				}
				found := false
				for _, in := range tg.Inconsistencies {
					found = found || strings.Contains(in.Note, "two configurations for one engine")
				}
				if !found {
					t.Errorf("not named: %+v", tg.Inconsistencies)
				}
			}},
		robustCase{Area: "exposition", Input: "an OpenMetrics backfill file (several timestamped readings) as --snapshot",
			Want: "read as the readings it holds, each at its own time, never added up: the same verdict and counts as the snapshots of that window",
			Test: func(t *testing.T) {
				sc, err := sim.Load("queue-bound")
				if err != nil {
					t.Fatal(err)
				}
				var om, start, end bytes.Buffer
				if err := (sim.Offline{OpenMetrics: &om, Start: &start, End: &end, Step: time.Minute}).Run(sc); err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				p := filepath.Join(dir, "window.om")
				if err := os.WriteFile(p, om.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				a := diagnoseInto[lintView](t, "--snapshot", p)
				b := lintJSON(t, start.String(), end.String())
				for _, f := range []string{"service.finished", "stage.ttft.count", "stage.queue.mean", "cond.window_seconds"} {
					x, y := evidence.TreeNumber(a.Targets[0].Evidence, f), evidence.TreeNumber(b.Targets[0].Evidence, f)
					if !(x > 0) || x != y {
						t.Errorf("%s: backfill file %v, its end snapshots %v", f, x, y)
					}
				}
				if a.Targets[0].Primary.Bottleneck != "queueing" {
					t.Errorf("verdict %+v", a.Targets[0].Primary)
				}
				if code, _, errOut := runCLI(t, "diagnose", "--snapshot", p, "--snapshot-interval", "15m"); code != 2 || !strings.Contains(errOut, "leave out --snapshot-interval") {
					t.Errorf("with an interval: exit %d %q", code, errOut)
				}
			}},
		robustCase{Area: "exposition", Input: "NaN, ±Inf or a negative value in a gauge",
			Want: "the family is withheld and named, not averaged over the engines that look fine",
			Test: func(t *testing.T) {
				for _, bad := range []string{"NaN", "+Inf", "-0.3"} {
					end := edit(t, exampleText(t, "queueing", "end.prom"), `(?m)^(vllm:kv_cache_usage_perc\{[^}]*\}) .*$`, "${1} "+bad)
					withheld(t, lintJSON(t, exampleText(t, "queueing", "start.prom"), end), "vllm:kv_cache_usage_perc", "resource.kv_usage", "not a count or a level")
				}
			}},
		robustCase{Area: "exposition", Input: "a negative counter",
			Want: "the family is withheld and named",
			Test: func(t *testing.T) {
				end := edit(t, exampleText(t, "queueing", "end.prom"), `(?m)^(vllm:generation_tokens_total\{[^}]*\}) .*$`, "${1} -5")
				withheld(t, lintJSON(t, exampleText(t, "queueing", "start.prom"), end), "vllm:generation_tokens_total", "service.generation_tps", "not a count")
			}},
		robustCase{Area: "exposition", Input: "NaN in a histogram's _sum",
			Want: "the histogram is withheld and named: no mean is computed from it",
			Test: func(t *testing.T) {
				end := edit(t, exampleText(t, "queueing", "end.prom"), `(?m)^`+ttftSum+`$`, `vllm:time_to_first_token_seconds_sum{model_name="meta-llama/Llama-3.1-8B-Instruct",engine="0"} NaN`)
				withheld(t, lintJSON(t, exampleText(t, "queueing", "start.prom"), end), "vllm:time_to_first_token_seconds", "stage.ttft", "_sum is NaN")
			}},
		robustCase{Area: "exposition", Input: "histogram buckets that are not cumulative",
			Want: "the histogram is withheld and named",
			Test: func(t *testing.T) {
				end := edit(t, exampleText(t, "queueing", "end.prom"), `(?m)^(vllm:request_queue_time_seconds_bucket\{[^}]*le="2.5"[^}]*\}) .*$`, "${1} 3.0")
				withheld(t, lintJSON(t, exampleText(t, "queueing", "start.prom"), end), "vllm:request_queue_time_seconds", "stage.queue", "must be cumulative")
			}},
		robustCase{Area: "exposition", Input: "a histogram whose _count differs from its +Inf bucket",
			Want: "the histogram is withheld and named",
			Test: func(t *testing.T) {
				end := edit(t, exampleText(t, "queueing", "end.prom"), `(?m)^(vllm:request_queue_time_seconds_count\{[^}]*\}) .*$`, "${1} 14000.0")
				withheld(t, lintJSON(t, exampleText(t, "queueing", "start.prom"), end), "vllm:request_queue_time_seconds", "stage.queue", "differs from the +Inf bucket")
			}},
		robustCase{Area: "window", Input: "a family in the first snapshot and missing from the last (a truncated file)",
			Want: "withheld and named, never its since-start total presented as the window",
			Test: func(t *testing.T) {
				end := exampleText(t, "queueing", "end.prom")
				end = regexp.MustCompile(`(?m)^(# (HELP|TYPE) )?vllm:request_queue_time_seconds.*\n`).ReplaceAllString(end, "")
				withheld(t, lintJSON(t, exampleText(t, "queueing", "start.prom"), end), "vllm:request_queue_time_seconds", "stage.queue", "missing at its end")
			}},
		robustCase{Area: "window", Input: "a first snapshot cut short (families and gauges missing that the last has)",
			Want: "the families missing from it are withheld and named: their totals since start cannot stand for the window",
			Test: func(t *testing.T) {
				start := exampleText(t, "queueing", "start.prom")
				start = regexp.MustCompile(`(?m)^(# (HELP|TYPE) )?vllm:(request_prefill_time_seconds|num_requests_running).*\n`).ReplaceAllString(start, "")
				withheld(t, lintJSON(t, start, exampleText(t, "queueing", "end.prom")), "vllm:request_prefill_time_seconds", "stage.prefill", "missing at the start")
			}},
		robustCase{Area: "window", Input: "a labelled family that first appears during the window (no request had yet finished that way)",
			Want: "counted from zero, as the server creates such series on first use",
			Test: func(t *testing.T) {
				start := exampleText(t, "queueing", "start.prom")
				start = regexp.MustCompile(`(?m)^(# (HELP|TYPE) )?vllm:request_success_total.*\n`).ReplaceAllString(start, "")
				v := lintJSON(t, start, exampleText(t, "queueing", "end.prom"))
				if x := evidence.TreeNumber(v.Targets[0].Evidence, "service.finished"); !(x > 0) {
					t.Errorf("finished %v", x)
				}
			}},
		robustCase{Area: "exposition", Input: "a histogram pasted without its TYPE line",
			Want: "its _bucket, _sum and _count samples are read as the histogram, with a note; never \"No vLLM metrics found\"",
			Test: func(t *testing.T) {
				s := exampleText(t, "queueing", "end.prom")
				s = regexp.MustCompile(`(?m)^# (HELP|TYPE) vllm:time_to_first_token_seconds .*\n`).ReplaceAllString(s, "")
				v := lintJSON(t, s)
				if !strings.Contains(strings.Join(v.Notes, "\n"), "vllm:time_to_first_token_seconds has no TYPE line") {
					t.Errorf("notes %v", v.Notes)
				}
				if x := evidence.TreeNumber(v.Targets[0].Evidence, "stage.ttft.count"); x != 14800 {
					t.Errorf("TTFT count %v, want 14800", x)
				}
			}},
		robustCase{Area: "exposition", Input: "a histogram cut before _sum and _count, +Inf bucket present",
			Want: "the +Inf bucket is the count and the quantiles are read; the mean, which needs _sum, is missing",
			Test: func(t *testing.T) {
				s := exampleText(t, "queueing", "end.prom")
				s = regexp.MustCompile(`(?m)^vllm:time_to_first_token_seconds_(sum|count)\{.*\n`).ReplaceAllString(s, "")
				ev := lintJSON(t, s).Targets[0].Evidence
				if c, p99, m := evidence.TreeNumber(ev, "stage.ttft.count"), evidence.TreeNumber(ev, "stage.ttft.p99"), evidence.TreeNumber(ev, "stage.ttft.mean"); c != 14800 || !(p99 > 0) || m == m {
					t.Errorf("count %v p99 %v mean %v", c, p99, m)
				}
			}},
		robustCase{Area: "exposition", Input: "a histogram cut before its +Inf bucket and _count",
			Want: "its count is unknown, not zero, and its quantiles cannot be computed (named)",
			Test: func(t *testing.T) {
				s := exampleText(t, "queueing", "end.prom")
				s = regexp.MustCompile(`(?m)^vllm:time_to_first_token_seconds_(sum|count)\{.*\n|^vllm:time_to_first_token_seconds_bucket\{[^}]*le="\+Inf"[^}]*\}.*\n`).ReplaceAllString(s, "")
				v := lintJSON(t, s)
				if c := evidence.TreeNumber(v.Targets[0].Evidence, "stage.ttft.count"); c == 0 {
					t.Errorf("count 0 from a cut histogram")
				}
				if !strings.Contains(strings.Join(v.Notes, "\n"), "vllm:time_to_first_token_seconds has no +Inf bucket") {
					t.Errorf("notes %v", v.Notes)
				}
			}},
		robustCase{Area: "window", Input: "a counter that falls inside the window (a restart)",
			Want: "counted across the restart as Prometheus does, and the report names the families that reset",
			Test: func(t *testing.T) {
				mid := edit(t, exampleText(t, "queueing", "end.prom"), `(?m)^(vllm:generation_tokens_total\{[^}]*\}) .*$`, "${1} 10.0")
				end := edit(t, exampleText(t, "queueing", "end.prom"), `(?m)^(vllm:generation_tokens_total\{[^}]*\}) .*$`, "${1} 500.0")
				v := lintJSON(t, exampleText(t, "queueing", "start.prom"), mid, end)
				if !strings.Contains(strings.Join(v.Notes, "\n"), "vllm:generation_tokens_total (1)") {
					t.Errorf("notes %v", v.Notes)
				}
			}},
		robustCase{Area: "window", Input: "two snapshots given newest first",
			Want: "refused with one line (exit 2): give the oldest first, whatever --snapshot-interval says",
			Test: func(t *testing.T) {
				code, _, errOut := snapshotRun(t, "text", exampleText(t, "queueing", "end.prom"), exampleText(t, "queueing", "start.prom"))
				if code != 2 || !strings.Contains(errOut, "oldest first") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
					t.Fatalf("exit %d: %q", code, errOut)
				}
			}},
		robustCase{Area: "window", Input: "two snapshots of differently configured servers (cache_config_info changed)",
			Want: "refused with one line (exit 2): a window across them would blend two servers",
			Test: func(t *testing.T) {
				end := edit(t, exampleText(t, "queueing", "end.prom"), `num_gpu_blocks="27000"`, `num_gpu_blocks="9000"`)
				code, _, errOut := snapshotRun(t, "text", exampleText(t, "queueing", "start.prom"), end)
				if code != 2 || !strings.Contains(errOut, "configured differently") {
					t.Fatalf("exit %d: %q", code, errOut)
				}
			}},
		robustCase{Area: "exposition", Input: "a --snapshot file larger than 64 MiB",
			Want: "refused with one line naming the limit, read no further",
			Test: func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "big.prom")
				f, _ := os.Create(p)
				if err := f.Truncate(65 << 20); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				code, _, errOut := runCLI(t, "diagnose", "--snapshot", p)
				if code != 2 || !strings.Contains(errOut, "larger than 64 MiB") {
					t.Fatalf("exit %d: %q", code, errOut)
				}
			}},
	)
}

func init() {
	robustCases = append(robustCases,
		robustCase{Area: "exposition", Input: "a histogram series repeated (the parser folds it into one)",
			Want: "withheld and named: its buckets come twice, and which copy is right cannot be told",
			Test: func(t *testing.T) {
				end := exampleText(t, "queueing", "end.prom")
				block := regexp.MustCompile(`(?m)^vllm:time_to_first_token_seconds_(bucket|count|sum)\{.*\n`).FindAllString(end, -1)
				end = strings.Replace(end, block[len(block)-1], block[len(block)-1]+strings.Join(block, ""), 1)
				withheld(t, lintJSON(t, exampleText(t, "queueing", "start.prom"), end), "vllm:time_to_first_token_seconds", "stage.ttft", "appears twice")
			}},
		robustCase{Area: "exposition", Input: "a federation dump: each series once, at slightly different times",
			Want: "one reading, not a window of a few seconds",
			Test: func(t *testing.T) {
				s := exampleText(t, "queueing", "end.prom")
				n := 0
				s = regexp.MustCompile(`(?m)^(vllm:[a-z_:]+\{[^}]*\} [0-9.e+-]+)$`).ReplaceAllStringFunc(s, func(line string) string {
					n++
					return line + " " + strconv.Itoa(1753795000000+n*37)
				})
				v := lintJSON(t, s)
				if x := evidence.TreeNumber(v.Targets[0].Evidence, "cond.window_seconds"); x == x {
					t.Errorf("window of %v s from one dump", x)
				}
			}},
		robustCase{Area: "window", Input: "a series in the first snapshot and missing from the last (a file cut inside a family)",
			Want: "the family is withheld and named, never the series' since-start total counted as the window",
			Test: func(t *testing.T) {
				end := exampleText(t, "queueing", "end.prom")
				end = regexp.MustCompile(`(?m)^vllm:request_prefill_time_seconds_(bucket|count|sum)\{.*\n`).ReplaceAllString(end, "")
				withheld(t, lintJSON(t, exampleText(t, "queueing", "start.prom"), end), "vllm:request_prefill_time_seconds", "stage.prefill", "missing")
			}},
		robustCase{Area: "window", Input: "two snapshot files written moments apart, no timestamps, no --snapshot-interval",
			Want: "exit 2, one line: cannot tell how far apart they were taken, pass --snapshot-interval; never a window of milliseconds",
			Test: func(t *testing.T) {
				dir := t.TempDir()
				a, b := filepath.Join(dir, "a.prom"), filepath.Join(dir, "b.prom")
				if err := os.WriteFile(a, []byte(exampleText(t, "queueing", "start.prom")), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(b, []byte(exampleText(t, "queueing", "end.prom")), 0o644); err != nil {
					t.Fatal(err)
				}
				now := time.Now()
				if err := os.Chtimes(a, now, now); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(b, now.Add(4*time.Millisecond), now.Add(4*time.Millisecond)); err != nil {
					t.Fatal(err)
				}
				oneLine2(t, "pass --snapshot-interval", "diagnose", "--snapshot", a, "--snapshot", b)
			}},
		robustCase{Area: "exposition", Input: "V0's prefix cache hit rate of -1 (prefix caching off)",
			Want: "read as no number, not as a contradiction",
			Test: func(t *testing.T) {
				s := edit(t, exampleText(t, "v0-healthy", "end.prom"), `(?m)^(vllm:gpu_prefix_cache_hit_rate\{[^}]*\}) .*$`, "${1} -1.0")
				v := lintJSON(t, s)
				for _, in := range v.Targets[0].Inconsistencies {
					t.Errorf("named as inconsistent: %+v", in)
				}
				if x := evidence.TreeNumber(v.Targets[0].Evidence, "resource.prefix_hit_rate"); x == x {
					t.Errorf("hit rate %v from -1", x)
				}
			}},
	)
}
