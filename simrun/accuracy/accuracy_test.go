package accuracy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
	"github.com/llmdoctor/llmdoctor/simrun"
)

// The shares of the tuning set and of the held-out set the verdict must get
// right: a little under what they reach.
const (
	accuracyFloor = 0.96
	heldOutFloor  = 0.94
)

// The quick tier's sample of the tuning set (its first cases and two of
// its published misses) and of the held-out set on SGLang's names.
var (
	quickTuning  = []int{0, 1, 2, 3, 4, 5, 18, 39}
	quickHeldOut = []int{0, 1, 2, 3}
)

var accuracyPage = filepath.Join("..", "..", "docs", "accuracy.md")

func builtinRules(t *testing.T) (*rules.Set, *rules.Config) {
	t.Helper()
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	return set, &rules.Config{}
}

// checkCases holds what every case of every set must show: the ground truth
// reads the same window as the diagnosis, and nothing clearly healthy gets
// a critical finding.
func checkCases(t *testing.T, name string, cs []Case) {
	t.Helper()
	for _, c := range cs {
		if c.Skipped {
			continue
		}
		if c.Finished != float64(c.Truth.Finished) {
			t.Errorf("%s %s: the diagnosis counted %v finished requests, the ground truth %d: not the same window",
				name, c.Scenario.Name, c.Finished, c.Truth.Finished)
		}
	}
	if h, f := criticalOnHealthy(cs); f > 0 {
		t.Errorf("%s: %d of %d scenarios with nothing wrong got a critical finding", name, f, h)
	}
}

// publishedMisses are the indexes of the tuning set's misses that
// docs/accuracy.md lists.
func publishedMisses(t *testing.T) []int {
	t.Helper()
	doc, err := os.ReadFile(accuracyPage)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \| `).FindAllSubmatch(doc, -1) {
		i, _ := strconv.Atoi(string(m[1]))
		out = append(out, i)
	}
	if len(out) == 0 {
		t.Fatal("docs/accuracy.md lists no misses: its table changed, update this test")
	}
	return out
}

// Quick tier: a sample of the tuning set gets exactly the verdicts
// docs/accuracy.md publishes for it (right, except the misses it lists), a
// sample of the held-out set on SGLang's names stays above its floor, and
// every case reads the ground truth's window.
func TestAccuracySample(t *testing.T) {
	t.Parallel()
	set, cfg := builtinRules(t)
	cs, err := RunIndexes(set, cfg, Seed, quickTuning, "vllm")
	if err != nil {
		t.Fatal(err)
	}
	checkCases(t, "tuning", cs)
	misses := publishedMisses(t)
	listed := 0
	for _, c := range cs {
		published := slices.Contains(misses, c.Index)
		if published {
			listed++
		}
		if c.OK() == published {
			t.Errorf("case %d (%s): verdict %s (%s) against ground truth %s %v; docs/accuracy.md lists it as a miss: %v",
				c.Index, c.Scenario.Name, c.Primary.Bottleneck, c.Primary.Rule, c.Label.Cause, c.Label.Also, published)
		}
	}
	if listed == 0 {
		t.Errorf("no published miss in the sample %v: it no longer checks one", quickTuning)
	}
	// The held-out sample on SGLang's names reads the ground truth's
	// window and gets the verdicts vLLM's names give: the seam maps both.
	// (Whether they are right is the heavy tier's, over the whole set.)
	sg, err := RunIndexes(set, cfg, HeldOutSeed, quickHeldOut, "sglang")
	if err != nil {
		t.Fatal(err)
	}
	checkCases(t, "held-out on SGLang names", sg)
	vl, err := RunIndexes(set, cfg, HeldOutSeed, quickHeldOut, "vllm")
	if err != nil {
		t.Fatal(err)
	}
	for i := range sg {
		if a, b := sg[i].Primary.Bottleneck, vl[i].Primary.Bottleneck; a != b {
			t.Errorf("held-out case %d: %s on SGLang's names, %s on vLLM's", sg[i].Index, a, b)
		}
	}
}

// Heavy tier: the three random sets in full, diagnosed end to end. The
// verdicts agree with the simulator's ground truth at least as often as the
// floors, the labels are spread, and docs/accuracy.md is current (-update
// rewrites it, as go generate does).
func TestAccuracy(t *testing.T) {
	testkit.NeedHeavy(t, "diagnoses 3×240 simulated scenarios")
	set, cfg := builtinRules(t)
	cs, err := Run(set, cfg, Seed, Count, "vllm")
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]int{}
	for _, c := range cs {
		labels[c.Label.Cause]++
	}
	if len(labels) < 6 {
		t.Errorf("ground-truth labels %v: too few kinds", labels)
	}
	for l, n := range labels {
		if n > len(cs)*2/5 {
			t.Errorf("ground truth %s on %d of %d scenarios: the draw is lopsided", l, n, len(cs))
		}
	}
	if a := accuracyOf(cs); a < accuracyFloor {
		t.Errorf("accuracy %.3f fell below the floor %.2f; see the misses in docs/accuracy.md", a, accuracyFloor)
	}
	held, err := Run(set, cfg, HeldOutSeed, Count, "vllm")
	if err != nil {
		t.Fatal(err)
	}
	if a := accuracyOf(held); a < heldOutFloor {
		t.Errorf("held-out accuracy %.3f fell below the floor %.2f", a, heldOutFloor)
	}
	// The held-out set again, with SGLang's names: never tuned on.
	sg, err := Run(set, cfg, HeldOutSeed, Count, "sglang")
	if err != nil {
		t.Fatal(err)
	}
	if a := accuracyOf(sg); a < heldOutFloor {
		t.Errorf("held-out accuracy on SGLang names %.3f fell below the floor %.2f", a, heldOutFloor)
	}
	checkCases(t, "tuning", cs)
	checkCases(t, "held-out", held)
	checkCases(t, "held-out on SGLang names", sg)
	want, err := page(set, cfg, cs, held, sg)
	if err != nil {
		t.Fatal(err)
	}
	fresh(t, accuracyPage, want)
}

// fresh compares a generated page with the file, or rewrites the file under
// -update.
func fresh(t *testing.T, path, want string) {
	t.Helper()
	if *testkit.Update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Errorf("%s is stale: run go generate ./simrun/accuracy (or this test with -update)", filepath.Base(path))
	}
}

// A scenario of the accuracy set written as a file (what gen -draw does for
// demo --scenario) runs the same scenario read back.
func TestScenarioYAML(t *testing.T) {
	t.Parallel()
	for _, i := range []int{0} {
		sc, gt, err := Scenario(Seed, i)
		if err != nil {
			t.Fatal(err)
		}
		data, err := sc.YAML()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), sc.Name+".yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := sim.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if g, err := sim.WindowTruth(back, simrun.Scrapes); err != nil || g != gt {
			t.Errorf("%s read back from YAML ran differently: %v", sc.Name, err)
		}
	}
}
