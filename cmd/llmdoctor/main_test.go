package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit/expogen"
)

// runCLI runs the command in-process with an empty standard input and
// returns its exit code, stdout and stderr. Runs share no state, so tests
// that call it may run in parallel.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIIn(t, nil, args...)
}

// runCLIIn is runCLI with stdin as the command's standard input.
func runCLIIn(t *testing.T, stdin []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, bytes.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// Runs share no state: command lines run at once, each with its own
// standard input, print exactly what they print one at a time.
func TestRunsInParallel(t *testing.T) {
	t.Parallel()
	bench := readFixture(t, benchFile("bench-detailed.json"))
	cfg := []byte("rules:\n  queue/ttft-dominated: {enabled: false}\n")
	lines := []struct {
		stdin []byte
		args  []string
	}{
		{nil, append([]string{"diagnose", "--format", "json"}, example("queueing")...)},
		{nil, append([]string{"diagnose", "--color", "never"}, example("kv-capacity")...)},
		{cfg, append([]string{"diagnose", "--format", "json", "--config", "-"}, example("queueing")...)},
		{bench, []string{"diagnose", "--format", "json", "--bench", "-"}},
		{bench, []string{"checklist", "--format", "junit", "--bench", "-", "--slo", "ttft_p99=1s"}},
		{nil, []string{"rules", "list"}},
		{nil, []string{"diagnose", "--nope"}},
	}
	result := func(i int) string {
		l := lines[i%len(lines)]
		var out, errOut bytes.Buffer
		code := run(l.args, bytes.NewReader(l.stdin), &out, &errOut)
		return fmt.Sprintf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	want := make([]string, len(lines))
	for i := range lines {
		want[i] = result(i)
	}
	got := make([]string, 3*len(lines))
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = result(i) })
	}
	wg.Wait()
	for i, g := range got {
		if w := want[i%len(lines)]; g != w {
			t.Errorf("llmdoctor %s, run alongside others, printed\n%.400s\nwhere alone it printed\n%.400s",
				strings.Join(lines[i%len(lines)].args, " "), g, w)
		}
	}
}

func example(name string) []string {
	dir := filepath.Join("..", "..", "examples", name)
	return []string{"--snapshot", filepath.Join(dir, "start.prom"), "--snapshot", filepath.Join(dir, "end.prom"),
		"--snapshot-interval", "15m"}
}

type diagnosisView struct {
	Schema  string `json:"schema"`
	Targets []struct {
		Primary struct {
			Bottleneck, Rule, Status string
			Unchecked                []string
		} `json:"primary"`
		Findings []struct {
			Rule, Severity string
			ExplainedBy    string `json:"explained_by"`
			Evidence       map[string]float64
		} `json:"findings"`
		Gaps []struct {
			Rule    string
			Missing []string
		} `json:"gaps"`
	} `json:"targets"`
}

func diagnoseJSON(t *testing.T, args ...string) diagnosisView {
	t.Helper()
	return diagnoseInto[diagnosisView](t, args...)
}

// diagnoseInto runs diagnose --format json, checks it ran and gave one target
// under the v1 schema, and decodes the diagnosis into the test's own view.
func diagnoseInto[T any](t *testing.T, args ...string) T {
	t.Helper()
	return diagnoseTargets[T](t, 1, args...)
}

// diagnoseTargets is diagnoseInto for a diagnosis of n targets.
func diagnoseTargets[T any](t *testing.T, n int, args ...string) T {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"diagnose", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var head struct {
		Schema  string            `json:"schema"`
		Targets []json.RawMessage `json:"targets"`
	}
	var d T
	if err := json.Unmarshal([]byte(out), &head); err != nil || head.Schema != "llmdoctor.diagnosis/v1" || len(head.Targets) != n {
		t.Fatalf("schema %q, %d targets, %v:\n%s", head.Schema, len(head.Targets), err, out)
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	return d
}

// The primary bottleneck of each example window, from V1 exposition.
func TestExamplePrimaries(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"queueing":          "queueing",
		"prefill":           "prefill",
		"kv-capacity":       "kv-capacity",
		"decode":            "decode",
		"healthy":           "none",
		"v0.10-kv-capacity": "kv-capacity",
	}
	for ex, want := range cases {
		t.Run(ex, func(t *testing.T) {
			t.Parallel()
			d := diagnoseJSON(t, example(ex)...)
			tg := d.Targets[0]
			if tg.Primary.Bottleneck != want {
				t.Fatalf("primary %q (%s), want %q", tg.Primary.Bottleneck, tg.Primary.Rule, want)
			}
			for _, f := range tg.Findings {
				if want == "none" && f.Severity == "critical" {
					t.Errorf("healthy window has critical finding %s", f.Rule)
				}
				if len(f.Evidence) == 0 {
					t.Errorf("finding %s cites no numbers", f.Rule)
				}
			}
		})
	}
}

// Queue wait is high in the KV window too, but the KV finding is the cause.
func TestKVExplainsQueueing(t *testing.T) {
	t.Parallel()
	d := diagnoseJSON(t, example("kv-capacity")...)
	found := false
	for _, f := range d.Targets[0].Findings {
		if f.Rule == "queue/ttft-dominated" {
			found = true
			if !strings.HasPrefix(f.ExplainedBy, "kv/") {
				t.Fatalf("queueing finding explained by %q, want a kv rule", f.ExplainedBy)
			}
		}
	}
	if !found {
		t.Fatal("the queueing symptom should still be listed")
	}
}

// A V0 server has no queue/prefill histograms: gaps name them and the verdict
// says what could not be checked instead of calling the server healthy.
func TestV0IsInconclusiveNotHealthy(t *testing.T) {
	t.Parallel()
	d := diagnoseJSON(t, example("v0-healthy")...)
	tg := d.Targets[0]
	if tg.Primary.Status != "inconclusive" || tg.Primary.Bottleneck == "none" {
		t.Fatalf("V0 verdict %+v", tg.Primary)
	}
	var missing []string
	for _, g := range tg.Gaps {
		missing = append(missing, g.Missing...)
	}
	all := strings.Join(missing, " ")
	for _, want := range []string{"stage.queue", "stage.prefill"} {
		if !strings.Contains(all, want) {
			t.Errorf("gaps do not name %s: %v", want, all)
		}
	}
}

// The example snapshots are what the generator writes.
func TestExamplesAreFresh(t *testing.T) {
	t.Parallel()
	for rel, want := range expogen.Files() {
		got, err := os.ReadFile(filepath.Join("..", "..", "examples", rel))
		if err != nil || string(got) != want {
			t.Errorf("examples/%s is stale: run go run ./internal/testkit/expogen/write examples", rel)
		}
	}
}

// From periodic stats lines alone: a full KV cache with waiting requests is
// kv-capacity; a long queue with room in the cache and prompts dwarfing
// generation is queueing or prefill, never KV. V0 and V1 forms, and a log of
// three lines, whose thinness the report states.
func TestLogVerdicts(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "collectors", "logs", "testdata")
	for _, c := range []struct {
		file string
		want []string
	}{
		{"v1-kv-full.log", []string{"kv-capacity"}},
		{"v0-kv-full.log", []string{"kv-capacity"}},
		{"v1-kv-full-short.log", []string{"kv-capacity"}},
		{"v1-prefill-queue.log", []string{"queueing", "prefill"}},
		{"v0-prefill-queue.log", []string{"queueing", "prefill"}},
		{"v0-swap-preempt.log", []string{"kv-capacity"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, "diagnose", "--format", "json", "--log", filepath.Join(dir, c.file))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var d struct {
				Notes   []string
				Targets []struct {
					Primary struct{ Bottleneck, Rule, Status string }
					Next    []struct{ Do string }
				}
			}
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatal(err)
			}
			got := d.Targets[0].Primary.Bottleneck
			if !contains(c.want, got) {
				t.Fatalf("verdict %s (%s), want one of %v", got, d.Targets[0].Primary.Rule, c.want)
			}
			// KV pressure is never read as a batch cap.
			for _, s := range d.Targets[0].Next {
				if got == "kv-capacity" && strings.Contains(s.Do, "raise --max-num-seqs") {
					t.Errorf("a KV-capacity verdict with the step %q", s.Do)
				}
			}
			if strings.Contains(c.file, "short") && !strings.Contains(strings.Join(d.Notes, " "), "only 3 stats lines") {
				t.Fatalf("a three-line log must say its evidence is thin: %v", d.Notes)
			}
		})
	}
}
