package main

import (
	"github.com/llmdoctor/llmdoctor/sim/simtest"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
)

// Windows where each step was principled and the verdict still wrong, each
// read from the independent simulator's recordings: they failed before the
// latency budget, earned health and the evidence policy.

func peerDir(name string) string {
	return filepath.Join("..", "..", "diagnosis", "testdata", "peersim", name)
}

func peerSnapshots(t *testing.T, name string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(peerDir(name), "snap-*.prom"))
	if err != nil || len(paths) < 2 {
		t.Fatalf("%s: %v %v", name, paths, err)
	}
	sort.Strings(paths)
	return paths
}

// Two snapshots a minute apart, as a user would save them.
func peerTwoArgs(t *testing.T, name string) []string {
	p := peerSnapshots(t, name)
	return []string{"--snapshot", p[0], "--snapshot", p[len(p)-1], "--snapshot-interval", "60s"}
}

// A queue histogram that counts only the requests that waited (absent in
// the first snapshot: nobody had waited yet) is used, not withheld; the
// queue bound that assumed queue wait inside TTFT no longer "proves" the
// queue rule quiet. It was healthy.
func TestQueueCountedOnlyForWaitersIsNotHealthy(t *testing.T) {
	t.Parallel()
	tg := verdictOf(t, peerTwoArgs(t, "burst")...).Targets[0]
	if tg.Primary.Bottleneck != "queueing" {
		t.Fatalf("primary %+v", tg.Primary)
	}
}

// Decode 99% of end-to-end at 90 ms per token, over the 50 ms target: a
// decode lead, not healthy with no finding.
func TestDecodeOverItsTargetIsNotHealthy(t *testing.T) {
	t.Parallel()
	tg := verdictOf(t, peerTwoArgs(t, "slow-decode")...).Targets[0]
	if tg.Primary.Bottleneck != "decode" || tg.Primary.Rule != "decode/over-target" {
		t.Fatalf("primary %+v", tg.Primary)
	}
}

// A streaming benchmark of a queue-bound server, every request with its
// per-token gaps: queue wait makes TTFT 90% of end-to-end, and that is no
// sign the client does not stream.
func TestQueuedStreamingBenchStreams(t *testing.T) {
	t.Parallel()
	d := verdictOf(t, "--bench", filepath.Join(peerDir("queue-at-cap"), "bench.json"))
	for _, f := range d.Targets[0].Findings {
		if f.Rule == "measurement/non-streaming" {
			t.Fatalf("a streaming benchmark called non-streaming: %+v", d.Targets[0].Primary)
		}
	}
}

// A 15-minute window over one minute of data in Prometheus: the request
// rate is over the minute the data covers, as two snapshots of that minute
// give it, and the report says the window was mostly empty.
func TestWindowLongerThanItsDataIsNamed(t *testing.T) {
	t.Parallel()
	promtest.Need(t)
	paths := peerSnapshots(t, "queue-moderate")
	end := time.Date(2026, 11, 2, 12, 15, 0, 0, time.UTC)
	var snaps [][]byte
	var at []time.Time
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, b)
		at = append(at, end.Add(time.Duration(i-len(paths)+1)*5*time.Second))
	}
	om, err := simtest.OpenMetricsFromSnapshots(snaps, at)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	omFile := filepath.Join(tmp, "window.om")
	if err := os.WriteFile(omFile, om, 0o644); err != nil {
		t.Fatal(err)
	}
	promtest.Backfill(t, omFile, filepath.Join(tmp, "tsdb"))
	url := promtest.Start(t, filepath.Join(tmp, "tsdb"), "").URL
	type out struct {
		Notes  []string
		Window struct {
			Covered float64 `json:"covered_seconds"`
		}
		Targets []struct {
			Evidence map[string]any `json:"evidence"`
		}
	}
	got := diagnoseInto[out](t, "--prom", url, "--window", "15m", "--end", strconv.FormatInt(end.Unix(), 10))
	want := diagnoseInto[out](t, peerTwoArgs(t, "queue-moderate")...)
	rate := func(o out) float64 {
		sv, _ := o.Targets[0].Evidence["service"].(map[string]any)
		x, _ := sv["request_rate"].(float64)
		return x
	}
	if r, w := rate(got), rate(want); !(w > 0) || math.Abs(r-w) > 0.15*w {
		t.Errorf("request rate %.2f/s over a 15m window of one minute's data, %.2f/s from the minute itself", r, w)
	}
	// Slack messages (what serve, watch and Alertmanager post) say it too.
	code, slackOut, errs := runCLI(t, "diagnose", "--prom", url, "--window", "15m", "--end", strconv.FormatInt(end.Unix(), 10), "--format", "slack")
	if code != 0 || !strings.Contains(slackOut, "15m00s window (the data covers 1m00s)") {
		t.Errorf("slack (exit %d, %s): %.800s", code, errs, slackOut)
	}
	if !strings.Contains(strings.Join(got.Notes, "\n"), "the data covers") || !(got.Window.Covered > 50 && got.Window.Covered < 70) {
		t.Errorf("notes %q, covered %v s", got.Notes, got.Window.Covered)
	}
}
