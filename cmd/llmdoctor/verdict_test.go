package main

import (
	"github.com/llmdoctor/llmdoctor/sim/simtest"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
)

// verdictJSON is the part of the JSON contract these tests read.
type verdictJSON struct {
	Targets []struct {
		Primary struct {
			Bottleneck, Rule, Status, Summary string
			Impact                            *float64
			Unchecked                         []string
			Bounded                           []struct{ Rule, Why string }
		} `json:"primary"`
		Findings []struct {
			Rule, Severity, Stage, Capped string
			ExplainedBy                   string `json:"explained_by"`
			Impact                        *float64
			Tentative                     bool
		} `json:"findings"`
		Next []struct{ Do string }
		Gaps []struct {
			Rule, Bounded string
			Missing       []string
		} `json:"gaps"`
		Inconsistencies []struct{ Check, Note string } `json:"inconsistencies"`
		LatencyMap      struct {
			TTFT              *float64 `json:"ttft_mean"`
			Queue             *float64 `json:"queue_mean"`
			Prefill           *float64 `json:"prefill_mean"`
			Front             *float64 `json:"front_mean"`
			TTFTExcludesQueue bool     `json:"ttft_excludes_queue"`
		} `json:"latency_map"`
	} `json:"targets"`
}

func verdictOf(t *testing.T, args ...string) verdictJSON {
	t.Helper()
	return diagnoseInto[verdictJSON](t, args...)
}

// A long-context window: the batch sits at its cap of 12 with a request or
// two waiting at each end, so queue/batch-full fires, and prefix caching
// reuses almost nothing; yet queue wait is 2% of TTFT and prefill 98%. The
// verdict is prefill through snapshots and through Prometheus alike; the
// queueing symptom is capped, the low hit rate a lead beside the verdict.
func TestLongContextVerdictIsPrefillOnEveryTransport(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, d verdictJSON) {
		tg := d.Targets[0]
		if tg.Primary.Bottleneck != "prefill" || tg.Primary.Rule != "prefill/ttft-dominated" ||
			tg.Primary.Impact == nil || *tg.Primary.Impact < 0.95 {
			t.Fatalf("primary %+v", tg.Primary)
		}
		seen := map[string]bool{}
		for _, f := range tg.Findings {
			seen[f.Rule] = true
			switch f.Rule {
			case "queue/batch-full":
				if f.Severity != "warning" || !strings.Contains(f.Capped, "lowered from critical") || f.Impact == nil || *f.Impact > 0.05 {
					t.Errorf("batch-full %+v", f)
				}
			case "prefix/low-hit-rate":
				if f.ExplainedBy != "" || f.Stage != "prefill" {
					t.Errorf("prefix lead %+v", f)
				}
			}
			if f.Rule != "prefill/ttft-dominated" && f.Severity == "critical" {
				t.Errorf("%s is critical beside the verdict", f.Rule)
			}
		}
		if !seen["queue/batch-full"] || !seen["prefix/low-hit-rate"] {
			t.Errorf("the symptom and the lead should still be listed: %v", seen)
		}
		steps := ""
		for _, s := range tg.Next {
			steps += s.Do + "\n"
		}
		if !strings.Contains(steps, "byte-identical") || strings.Contains(steps, "max-num-seqs") {
			t.Errorf("next steps should carry the prefix lead and not the capped queue advice:\n%s", steps)
		}
	}
	t.Run("snapshot", func(t *testing.T) { check(t, verdictOf(t, example("long-context")...)) })
	t.Run("prom", func(t *testing.T) {
		end := time.Date(2026, 11, 2, 12, 15, 0, 0, time.UTC)
		url := promOverSnapshots(t, filepath.Join("..", "..", "examples", "long-context"), end.Add(-15*time.Minute), end)
		check(t, verdictOf(t, "--prom", url, "--window", "15m", "--end", strconv.FormatInt(end.Unix(), 10)))
	})
}

// promOverSnapshots backfills an example's two snapshots, taken at start and
// end, into a Prometheus of its own and returns its URL.
func promOverSnapshots(t *testing.T, dir string, start, end time.Time) string {
	t.Helper()
	promtest.Need(t)
	var snaps [][]byte
	for _, f := range []string{"start.prom", "end.prom"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, b)
	}
	om, err := simtest.OpenMetricsFromSnapshots(snaps, []time.Time{start, end})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	omFile := filepath.Join(tmp, "window.om")
	if err := os.WriteFile(omFile, om, 0o644); err != nil {
		t.Fatal(err)
	}
	tsdb := filepath.Join(tmp, "tsdb")
	promtest.Backfill(t, omFile, tsdb)
	return promtest.Start(t, tsdb, "").URL
}

// A server without the queue-time histogram or the preemption counter, whose
// TTFT is 57 ms with nothing waiting and the KV cache near empty: the missing
// numbers cannot matter, so the verdict is healthy with its gaps named.
func TestMissingNumbersBoundedToHealthy(t *testing.T) {
	t.Parallel()
	tg := verdictOf(t, example("no-queue-metrics")...).Targets[0]
	if tg.Primary.Status != "healthy" || tg.Primary.Bottleneck != "none" || len(tg.Primary.Unchecked) != 0 {
		t.Fatalf("primary %+v", tg.Primary)
	}
	why := map[string]string{}
	for _, b := range tg.Primary.Bounded {
		why[b.Rule] = b.Why
	}
	if !strings.Contains(why["queue/ttft-dominated"], "at most") || !strings.Contains(why["kv/preemption"], "kv_usage.max") {
		t.Fatalf("bounded %+v", tg.Primary.Bounded)
	}
	gaps := map[string]string{}
	for _, g := range tg.Gaps {
		gaps[g.Rule] = strings.Join(g.Missing, " ")
	}
	if !strings.Contains(gaps["queue/ttft-dominated"], "stage.queue") || !strings.Contains(gaps["kv/preemption"], "service.preemptions") {
		t.Fatalf("the missing numbers must still be named as gaps: %+v", gaps)
	}
	for _, f := range tg.Findings {
		if f.Severity == "critical" {
			t.Errorf("critical finding %s on a healthy window", f.Rule)
		}
	}
}

// A server whose TTFT leaves out queue wait: named, TTFT withheld, the map
// adds the parts, front is never a negative residual, and the verdict still
// follows the queue.
func TestTTFTExcludingQueueIsNamed(t *testing.T) {
	t.Parallel()
	tg := verdictOf(t, example("ttft-excludes-queue")...).Targets[0]
	if len(tg.Inconsistencies) != 1 || tg.Inconsistencies[0].Check != "ttft-excludes-queue" ||
		!strings.Contains(tg.Inconsistencies[0].Note, "excludes queue wait") {
		t.Fatalf("inconsistencies %+v", tg.Inconsistencies)
	}
	m := tg.LatencyMap
	if !m.TTFTExcludesQueue || m.TTFT == nil || m.Queue == nil || m.Prefill == nil || m.Front == nil || *m.Front < 0 ||
		math.Abs(*m.TTFT-(*m.Queue+*m.Prefill+*m.Front)) > 1e-9 {
		t.Fatalf("latency map %+v", m)
	}
	if tg.Primary.Bottleneck != "queueing" {
		t.Fatalf("primary %+v", tg.Primary)
	}
	// Rules that read the withheld TTFT could not run, and say why.
	found := false
	for _, g := range tg.Gaps {
		if g.Rule == "prefill/ttft-dominated" || g.Rule == "tail/under-load" {
			found = true
		}
	}
	if !found {
		t.Errorf("no rule reading TTFT was held back: %+v", tg.Gaps)
	}
	_, text, _ := runCLI(t, append([]string{"diagnose", "--color", "never"}, example("ttft-excludes-queue")...)...)
	if !strings.Contains(text, "Evidence withheld") || !strings.Contains(text, "which leaves queue out") {
		t.Errorf("text report does not name it:\n%s", text)
	}
}

// A one-second window holds one gauge sample (repeated at every step) and a
// handful of requests: it is refused before any query, so nothing can fire
// on it, let alone a critical finding. One scrape is one reading: a gauge
// rule fires on it only on what it plainly shows, and the verdict is then
// tentative, never found.
func TestOneSecondWindowFiresNothing(t *testing.T) {
	t.Parallel()
	fx := backfilledProm(t)
	end := strconv.FormatInt(fx.ends["queue-bound"].Unix(), 10)
	for _, step := range []string{"0s", "1s"} {
		code, out, errOut := runCLI(t, "diagnose", "--prom", fx.url, "--window", "1s", "--step", step, "--end", end)
		if code != 2 || out != "" || !strings.Contains(errOut, "shorter than 15s, one scrape interval") {
			t.Fatalf("--step %s: exit %d, stdout %q, stderr %q", step, code, out, errOut)
		}
	}
	// One scrape of a server whose batch is pinned and queue full: one
	// gauge sample is a moment; hundreds waiting beside a batch of 32 with
	// the cache at a few percent is plain, so the verdict is a tentative
	// queueing, and the window rules that read the gauges cannot judge it.
	one := verdictOf(t, "--vllm", serveScenario(t, "queue-bound", 1), "--duration", "0s")
	for _, f := range one.Targets[0].Findings {
		if (f.Rule == "queue/batch-full" || f.Rule == "kv/saturated") && !f.Tentative {
			t.Errorf("%s fired from one gauge sample, not tentatively", f.Rule)
		}
	}
	if p := one.Targets[0].Primary; p.Status != "tentative" || p.Bottleneck != "queueing" {
		t.Errorf("one scrape: verdict %s %s, want a tentative queueing", p.Status, p.Bottleneck)
	}
	gapped := false
	for _, g := range one.Targets[0].Gaps {
		gapped = gapped || g.Rule == "kv/full-waiting"
	}
	if !gapped {
		t.Errorf("kv/full-waiting, which has no plain reading, is not named as lacking samples: %+v", one.Targets[0].Gaps)
	}
	// The same server over 15 minutes is queue-bound.
	if full := verdictOf(t, "--prom", fx.url, "--window", "15m", "--end", end); full.Targets[0].Primary.Bottleneck != "queueing" {
		t.Fatalf("15m verdict %+v", full.Targets[0].Primary)
	}
}
