package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/promtest"
	"github.com/llmdoctor/llmdoctor/sim"
)

// promScenarios are diagnosed both from a Prometheus holding the backfilled
// window and from the same window's first and last /metrics snapshots.
var promScenarios = []string{"queue-bound", "long-prompt", "kv-capacity", "decode-bound", "healthy", "moe-bandwidth"}

type promFixture struct {
	url  string
	dir  string
	ends map[string]time.Time
}

var sharedProm *promFixture

// backfilledProm writes every scenario an hour apart into one TSDB, with its
// snapshots beside it, and starts Prometheus over it (once per test binary).
func backfilledProm(t *testing.T) *promFixture {
	t.Helper()
	if sharedProm != nil {
		return sharedProm
	}
	promtest.Need(t)
	dir, err := os.MkdirTemp("", "llmdoctor-prom")
	if err != nil {
		t.Fatal(err)
	}
	fx := &promFixture{dir: dir, ends: map[string]time.Time{}}
	tsdb := filepath.Join(dir, "tsdb")
	for i, name := range promScenarios {
		sc, err := sim.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		epoch := sim.Epoch.Add(time.Duration(i) * time.Hour)
		files := map[string]*os.File{}
		for _, f := range []string{"om", "start.prom", "end.prom"} {
			files[f], _ = os.Create(filepath.Join(dir, name+"."+f))
		}
		err = sim.Offline{OpenMetrics: files["om"], Start: files["start.prom"], End: files["end.prom"], Epoch: epoch}.Run(sc)
		for _, f := range files {
			f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		promtest.Backfill(t, filepath.Join(dir, name+".om"), tsdb)
		fx.ends[name] = epoch.Add(sc.Warmup + sc.Duration)
	}
	fx.url = promtest.Start(t, tsdb, "").URL
	sharedProm = fx
	return fx
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedProm != nil {
		os.RemoveAll(sharedProm.dir)
	}
	os.Exit(code)
}

type evidenceJSON struct {
	Sources []struct {
		Kind    string
		Queries int
	} `json:"sources"`
	Targets []struct {
		Primary  struct{ Bottleneck, Rule string } `json:"primary"`
		Evidence map[string]any                    `json:"evidence"`
	} `json:"targets"`
}

func runJSON(t *testing.T, args ...string) evidenceJSON {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"diagnose", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d evidenceJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Targets) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	return d
}

func num(m map[string]any, path ...string) float64 {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return math.NaN()
		}
		cur = mm[p]
	}
	f, ok := cur.(float64)
	if !ok {
		return math.NaN()
	}
	return f
}

// --prom and --snapshot agree on the same data: same verdict, same counts,
// quantiles within interpolation tolerance.
func TestPromMatchesSnapshots(t *testing.T) {
	fx := backfilledProm(t)
	for _, name := range promScenarios {
		t.Run(name, func(t *testing.T) {
			end := strconv.FormatInt(fx.ends[name].Unix(), 10)
			p := runJSON(t, "--prom", fx.url, "--window", "15m", "--end", end)
			s := runJSON(t, "--snapshot", filepath.Join(fx.dir, name+".start.prom"),
				"--snapshot", filepath.Join(fx.dir, name+".end.prom"), "--snapshot-interval", "15m")
			pt, st := p.Targets[0], s.Targets[0]
			if n := num(pt.Evidence, "service", "finished"); !(n > 100) || math.IsNaN(num(pt.Evidence, "stage", "ttft", "p99")) {
				t.Fatalf("--prom read too little: finished %v", n)
			}
			if pt.Primary.Bottleneck != st.Primary.Bottleneck {
				t.Errorf("--prom says %s (%s), --snapshot says %s (%s)", pt.Primary.Bottleneck, pt.Primary.Rule,
					st.Primary.Bottleneck, st.Primary.Rule)
			}
			sc, _ := sim.Load(name)
			if want := sc.Expect; pt.Primary.Bottleneck != want && !contains(sc.Also, pt.Primary.Bottleneck) {
				t.Errorf("--prom verdict %s, scenario expects %s", pt.Primary.Bottleneck, want)
			}
			for _, path := range [][]string{{"service", "finished"}, {"service", "preemptions"}, {"stage", "ttft", "count"},
				{"stage", "queue", "mean"}, {"stage", "ttft", "p50"}, {"stage", "ttft", "p99"}, {"stage", "itl", "p99"},
				{"cond", "prompt_tokens", "p90"}, {"resource", "prefix_hit_rate"}, {"cond", "kv_capacity_tokens"},
				{"service", "running", "last"}, {"resource", "kv_usage", "last"}} {
				a, b := num(pt.Evidence, path...), num(st.Evidence, path...)
				if math.IsNaN(a) != math.IsNaN(b) || math.Abs(a-b) > 1e-6*math.Max(1, math.Abs(b)) {
					t.Errorf("%v: --prom %v, --snapshot %v", path, a, b)
				}
			}
			if p.Sources[0].Kind != "prometheus" || p.Sources[0].Queries == 0 {
				t.Errorf("sources %+v", p.Sources)
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
