package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/compare"
	"github.com/llmdoctor/llmdoctor/sim"
)

// simWindows runs a scenario offline and diagnoses the windows between the
// given fractions of its last Duration (0 its start, 1 its end), each saved
// as --format json; it returns their paths.
func simWindows(t *testing.T, sc *sim.Scenario, spans ...[2]float64) []string {
	t.Helper()
	dir := t.TempDir()
	type point struct {
		at   time.Time
		path string
	}
	var pts []point
	err := sim.Offline{OpenMetrics: io.Discard, Points: func(at time.Time, text []byte) error {
		p := filepath.Join(dir, fmt.Sprintf("%04d.prom", len(pts)))
		pts = append(pts, point{at, p})
		return os.WriteFile(p, text, 0o644)
	}}.Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	end := pts[len(pts)-1].at
	nearest := func(at time.Time) point {
		best := pts[0]
		for _, p := range pts {
			if p.at.Sub(at).Abs() < best.at.Sub(at).Abs() {
				best = p
			}
		}
		return best
	}
	var out []string
	for i, s := range spans {
		a := nearest(end.Add(-time.Duration((1 - s[0]) * float64(sc.Duration))))
		b := nearest(end.Add(-time.Duration((1 - s[1]) * float64(sc.Duration))))
		code, js, errOut := runCLI(t, "diagnose", "--format", "json", "--snapshot", a.path, "--snapshot", b.path,
			"--snapshot-interval", b.at.Sub(a.at).String())
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		p := filepath.Join(dir, fmt.Sprintf("window-%d.json", i))
		if err := os.WriteFile(p, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func compareJSON(t *testing.T, args ...string) (int, compare.Comparison) {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"compare", "--format", "json"}, args...)...)
	var c compare.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil || len(c.Targets) != 1 {
		t.Fatalf("exit %d, %v: %s\n%s", code, err, out, errOut)
	}
	return code, c
}

// The two halves of one steady window saw the same traffic and the same
// latency: no change. (Scenarios whose queue grows through the window, or
// whose interference comes in bursts, are not steady: their halves differ.)
func TestCompareSteadyHalvesIsNoChange(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"healthy", "decode-bound", "moe-bandwidth", "cpu-overhead", "long-prompt", "prefix-cache-miss"} {
		sc, err := sim.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		w := simWindows(t, sc, [2]float64{0, 0.5}, [2]float64{0.5, 1})
		_, c := compareJSON(t, w[0], w[1])
		if tg := c.Targets[0]; tg.Verdict != compare.NoChange {
			t.Errorf("%s: %s: %s", name, tg.Verdict, tg.Why)
		}
	}
}

// When the prompts of the second run are twice as long, the runs are not
// comparable, whatever their latency did; --strict fails them.
func TestCompareLongerPromptsIsNotComparable(t *testing.T) {
	t.Parallel()
	sc, _ := sim.Load("healthy")
	a := simWindows(t, sc, [2]float64{0, 1})
	sc2, _ := sim.Load("healthy")
	sc2.Workload.Prompt.Mean *= 2
	b := simWindows(t, sc2, [2]float64{0, 1})
	code, c := compareJSON(t, a[0], b[0])
	tg := c.Targets[0]
	if tg.Verdict != compare.NotComparable || !strings.Contains(tg.Why, "prompt tokens p90 ×2") || code != 0 {
		t.Errorf("exit %d, %s: %s", code, tg.Verdict, tg.Why)
	}
	if code, _, _ := runCLI(t, "compare", "--strict", a[0], b[0]); code != 1 {
		t.Errorf("--strict: exit %d, want 1", code)
	}
}

// Raising max_num_seqs on a queue-bound server, the same traffic: the queue
// wait falls, with the numbers, and the bottleneck moves; a gate on TTFT
// p99 does not fail an improvement, and fails the reverse.
func TestCompareRaisedMaxNumSeqs(t *testing.T) {
	t.Parallel()
	sc, _ := sim.Load("queue-bound")
	before := simWindows(t, sc, [2]float64{0, 1})
	sc2, _ := sim.Load("queue-bound")
	sc2.Engine.MaxNumSeqs = 128
	after := simWindows(t, sc2, [2]float64{0, 1})
	code, c := compareJSON(t, "--fail-on-regression", "ttft_p99=10%", before[0], after[0])
	tg := c.Targets[0]
	if tg.Verdict != compare.Changed || code != 0 {
		t.Fatalf("exit %d, %s: %s; unevaluated %v regressions %+v", code, tg.Verdict, tg.Why, c.Unevaluated, c.Regressions)
	}
	var queue *compare.Delta
	for i := range tg.Latency {
		if tg.Latency[i].Path == "stage.queue.mean" {
			queue = &tg.Latency[i]
		}
	}
	if queue == nil || !queue.Significant || *queue.Change > -0.5 {
		t.Errorf("queue wait: %+v", queue)
	}
	if tg.Bottleneck[0] != "queueing" || tg.Bottleneck[1] == "queueing" {
		t.Errorf("bottleneck %v", tg.Bottleneck)
	}
	code, c = compareJSON(t, "--fail-on-regression", "ttft_p99=10%", after[0], before[0])
	if code != 1 || len(c.Regressions) != 1 || c.Regressions[0].Gate != "ttft_p99" {
		t.Errorf("the reverse: exit %d, regressions %+v", code, c.Regressions)
	}
}
