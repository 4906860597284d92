package engine_test

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/llmdoctor/llmdoctor/collectors/dcgm" // an exporter beside the engines
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	_ "github.com/llmdoctor/llmdoctor/collectors/sglang"
	_ "github.com/llmdoctor/llmdoctor/collectors/vllm"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// The registry must hold every engine this repository ships: the engine
// packages under collectors/ are imported above.
func TestEnginesRegistered(t *testing.T) {
	got := "," + strings.Join(engine.Names(), ",") + ","
	if !strings.Contains(got, ",sglang,") || !strings.Contains(got, ",vllm,") || !sort.StringsAreSorted(engine.Names()) {
		t.Fatalf("registered engines %q", got)
	}
	for _, n := range engine.Names() {
		if e, ok := engine.Lookup(n); !ok || e.Name != n || e.Title == "" {
			t.Errorf("Lookup(%q) = %+v, %v", n, e, ok)
		}
	}
	if _, ok := engine.Lookup("tgi"); ok {
		t.Error("an unregistered engine was found")
	}
}

// Adding an engine is one package plus tests: every package under
// collectors/ that registers an engine has test files, is imported by this
// test (so the registry checks here cover it), and is named after it.
func TestEveryEnginePackageHasTests(t *testing.T) {
	registered := map[string]bool{}
	for _, n := range engine.Names() {
		registered[n] = true
		tests, _ := filepath.Glob(filepath.Join("..", n, "*_test.go"))
		if len(tests) == 0 {
			t.Errorf("engine %s has no tests in collectors/%s: add some (see collectors/sglang/sglang_test.go)", n, n)
		}
	}
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	registers := regexp.MustCompile(`\bengine\.Register\(`)
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		srcs, _ := filepath.Glob(filepath.Join("..", d.Name(), "*.go"))
		for _, src := range srcs {
			if strings.HasSuffix(src, "_test.go") {
				continue
			}
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if registers.Match(data) && !registered[d.Name()] {
				t.Errorf("collectors/%s registers an engine this test does not see: import it here and name the engine after its package", d.Name())
			}
		}
	}
}

// Every metric says what one observation is in its engine and how a user
// gets it when it is missing.
func TestMetricsDocumented(t *testing.T) {
	for _, e := range engine.Engines() {
		if len(e.Catalogue) == 0 {
			t.Errorf("%s: empty catalogue", e.Name)
		}
		for _, m := range e.Catalogue {
			if m.Key == "" || len(m.Names) == 0 {
				t.Errorf("%s: metric %+v has no key or names", e.Name, m)
			}
			if strings.TrimSpace(m.Meaning) == "" || strings.TrimSpace(m.Obtain) == "" {
				t.Errorf("%s %s: Meaning %q, Obtain %q", e.Name, m.Key, m.Meaning, m.Obtain)
			}
			if len(m.Match)%2 != 0 || len(m.Exclude)%2 != 0 {
				t.Errorf("%s %s: Match and Exclude are label/value pairs", e.Name, m.Key)
			}
			if got, ok := e.ByKey(m.Key); !ok || got.Names[0] != m.Names[0] {
				t.Errorf("%s: ByKey(%s) = %v, %v", e.Name, m.Key, got.Names, ok)
			}
		}
	}
}

// No family is registered under two kinds or by two engines; every name
// leads back to its engine; TTFT families keep per-step increases.
func TestFamilies(t *testing.T) {
	kind := map[string]engine.Kind{}
	owner := map[string]string{}
	for _, e := range engine.Engines() {
		for _, m := range e.Catalogue {
			for _, n := range m.Names {
				if k, ok := kind[n]; ok && k != m.Kind {
					t.Errorf("%s registered as %s and %s", n, k, m.Kind)
				}
				if o, ok := owner[n]; ok && o != e.Name {
					t.Errorf("%s registered by %s and %s", n, o, e.Name)
				}
				kind[n], owner[n] = m.Kind, e.Name
				if got := engine.Of(n); got != e {
					t.Errorf("Of(%s) = %v, want %s", n, got, e.Name)
				}
				if got, ok := engine.Known(n); !ok || got.Kind != m.Kind {
					t.Errorf("Known(%s) = %v, %v", n, got.Kind, ok)
				}
				if engine.StepFamily(n) != (m.Key == engine.TTFT) {
					t.Errorf("StepFamily(%s) = %v for key %s", n, engine.StepFamily(n), m.Key)
				}
			}
		}
		if m, ok := e.ByKey(engine.TTFT); !ok || !engine.StepFamily(m.Names[0]) {
			t.Errorf("%s: no TTFT step family", e.Name)
		}
	}
	for _, x := range engine.Exporters() {
		for _, names := range x.Gauges {
			for _, n := range names {
				if o, ok := owner[n]; ok {
					t.Errorf("exporter %s's %s is also %s's", x.Name, n, o)
				}
				if engine.Of(n) != nil {
					t.Errorf("Of(%s) names an engine for an exporter's gauge", n)
				}
				if m, ok := engine.Known(n); !ok || m.Kind != engine.Gauge {
					t.Errorf("exporter gauge %s known as %v, %v", n, m.Kind, ok)
				}
			}
		}
	}
	if engine.Of("process_start_time_seconds") != nil || engine.StepFamily("vllm:num_requests_running") {
		t.Error("unknown or gauge family taken for an engine's TTFT")
	}
	fams := engine.Families()
	if !sort.StringsAreSorted(fams) || len(fams) < len(kind) {
		t.Errorf("Families: %d names, sorted %v", len(fams), sort.StringsAreSorted(fams))
	}
}

// Every knob a next step may name has an entry per engine ("" when the
// engine has no such setting, which Knob then says in words).
func TestKnobs(t *testing.T) {
	for _, e := range engine.Engines() {
		for k := range evidence.DefaultKnobs {
			f, ok := e.Knobs[k]
			if !ok {
				t.Errorf("%s: no entry for knob %s", e.Name, k)
				continue
			}
			got := e.Knob(k)
			if f == "" && !strings.Contains(got, "no "+e.Title+" flag") {
				t.Errorf("%s: Knob(%s) = %q", e.Name, k, got)
			}
			if f != "" && got != f {
				t.Errorf("%s: Knob(%s) = %q, want %q", e.Name, k, got, f)
			}
		}
		for k := range e.Knobs {
			if _, ok := evidence.DefaultKnobs[k]; !ok {
				t.Errorf("%s: knob %s is not one next steps name (evidence.DefaultKnobs)", e.Name, k)
			}
		}
	}
}

// full is a window with one series of every family in an engine's
// catalogue, under its newest name.
func full(e *engine.Engine) *window.Window {
	w := window.New()
	w.Start, w.End, w.Points = time.Unix(0, 0), time.Unix(600, 0), 2
	for _, m := range e.Catalogue {
		l := window.Labels{"model_name": "m"}
		for i := 0; i+1 < len(m.Match); i += 2 {
			l[m.Match[i]] = m.Match[i+1]
		}
		if m.Key == engine.WaitingByReason {
			l["reason"] = "capacity"
		}
		if m.Key == engine.RequestSuccess && e.ReasonLabel != "" {
			l[e.ReasonLabel] = "stop"
		}
		n := m.Names[0]
		switch m.Kind {
		case engine.Counter:
			w.Counters[n] = append(w.Counters[n], window.Counter{Labels: l, Increase: 100, Last: 1000})
		case engine.Gauge:
			v := 4.0
			if m.Ratio() {
				v = 0.5
			}
			w.Gauges[n] = append(w.Gauges[n], window.Gauge{Labels: l, Points: []float64{v, v}})
		case engine.Histogram:
			w.Histograms[n] = append(w.Histograms[n], window.Histogram{Labels: l, Sum: 6, Count: 10,
				Buckets: []window.Bucket{{UpperBound: 0.5, Count: 5}, {UpperBound: 1, Count: 10}, {UpperBound: math.Inf(1), Count: 10}}})
		case engine.Info:
			w.Infos[n] = append(w.Infos[n], window.Info{Labels: window.Labels{"block_size": "16", "num_gpu_blocks": "1000",
				"enable_prefix_caching": "True", "gpu_memory_utilization": "0.9"}})
		}
	}
	return w
}

// how finds an engine's own text for a path or its node.
func how(e *engine.Engine, path string) string {
	for p := path; p != ""; {
		if h, ok := e.How[p]; ok {
			return h
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return ""
}

// Each engine says, in its own terms, how to obtain every evidence path its
// catalogue fills, and what it offers for every path another engine fills.
func TestHowCoversWhatCataloguesFill(t *testing.T) {
	filled := map[string][]string{} // path → engines whose families fill it
	for _, e := range engine.Engines() {
		own := map[string]bool{}
		for _, m := range e.Catalogue {
			for _, n := range m.Names {
				own[n] = true
			}
		}
		evs := e.Build(full(e), engine.Options{})
		if len(evs) != 1 {
			t.Fatalf("%s: %d targets from one model's series", e.Name, len(evs))
		}
		ev := evs[0]
		if ev.Target.ServedBy != e.Name || ev.Engine == nil || ev.Engine.Name != e.Name {
			t.Errorf("%s: target %+v, vocabulary %+v", e.Name, ev.Target, ev.Engine)
		}
		n := 0
		for path, src := range ev.Sources {
			if !own[src.Metric] {
				continue
			}
			n++
			filled[path] = append(filled[path], e.Name)
			if how(e, path) == "" {
				t.Errorf("%s fills %s from %s but has no How text for it", e.Name, path, src.Metric)
			}
			if h := ev.How(path); h != how(e, path) {
				t.Errorf("%s: evidence How(%s) = %q, not the engine's text", e.Name, path, h)
			}
		}
		if n < 10 {
			t.Errorf("%s: only %d paths filled from a window of every family", e.Name, n)
		}
		for path, h := range e.How {
			if strings.TrimSpace(h) == "" {
				t.Errorf("%s: empty How for %s", e.Name, path)
			}
			if !isPath(path) {
				t.Errorf("%s: How for %s, which is no evidence path", e.Name, path)
			}
		}
	}
	for path, by := range filled {
		for _, e := range engine.Engines() {
			if how(e, path) == "" {
				t.Errorf("%s fill %s; %s has no How text saying what it offers instead", strings.Join(by, ", "), path, e.Name)
			}
		}
	}
}

func isPath(p string) bool {
	if _, ok := evidence.Lookup(p); ok {
		return true
	}
	for _, f := range evidence.Fields() {
		if strings.HasPrefix(f.Path, p+".") {
			return true
		}
	}
	return false
}

// A refused registration changes nothing: a duplicate name, a key twice, a
// family under another kind than it is already known as.
func TestRegisterRefusals(t *testing.T) {
	before := strings.Join(engine.Names(), ",")
	nFams := len(engine.Families())
	refused := func(name string, e *engine.Engine) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: registered", name)
			}
		}()
		engine.Register(e)
	}
	fresh := engine.Metric{Key: engine.Running, Names: []string{"zz:fresh_running"}, Kind: engine.Gauge, Meaning: "x", Obtain: "x"}
	refused("name twice", &engine.Engine{Name: "vllm", Catalogue: []engine.Metric{fresh}})
	refused("key twice", &engine.Engine{Name: "zz", Catalogue: []engine.Metric{fresh,
		{Key: engine.Running, Names: []string{"zz:other"}, Kind: engine.Gauge}}})
	refused("kind clash", &engine.Engine{Name: "zz", Catalogue: []engine.Metric{fresh,
		{Key: engine.TTFT, Names: []string{"zz:ttft", "vllm:num_requests_running"}, Kind: engine.Histogram}}})
	refused("kind clash within", &engine.Engine{Name: "zz", Catalogue: []engine.Metric{fresh,
		{Key: engine.TTFT, Names: []string{"zz:fresh_running"}, Kind: engine.Histogram}}})
	if got := strings.Join(engine.Names(), ","); got != before {
		t.Errorf("engines %q after refusals, were %q", got, before)
	}
	if _, ok := engine.Known("zz:fresh_running"); ok || len(engine.Families()) != nFams || engine.StepFamily("zz:ttft") {
		t.Error("a refused engine's families were recorded")
	}
	for _, v := range evidence.Engines() {
		if v.Name == "zz" {
			t.Error("a refused engine's vocabulary was recorded")
		}
	}
}

// docs/engines.md is the registered catalogues, current: an engine without
// its page fails here.
func TestEnginesDoc(t *testing.T) {
	want := engine.Doc()
	path := filepath.Join("..", "..", "docs", "engines.md")
	if *testkit.Update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(path)
	if string(got) != want {
		t.Fatal("docs/engines.md is stale: run go test ./collectors/engine -update")
	}
	for _, e := range engine.Engines() {
		if !strings.Contains(want, "## "+e.Title+" (`"+e.Name+"`)") {
			t.Errorf("%s has no section", e.Name)
		}
	}
}
