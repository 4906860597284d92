package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/sim"
)

// transportView is what the transports must agree on: the window's shape,
// the verdict, the fired rules, the numbers each finding cites, and the
// evidence tree they come from.
type transportView struct {
	Window struct {
		Seconds float64 `json:"seconds"`
		Points  int     `json:"points"`
	} `json:"window"`
	Targets []struct {
		Primary  struct{ Bottleneck, Rule, Status string } `json:"primary"`
		Findings []struct {
			Rule     string         `json:"rule"`
			Severity string         `json:"severity"`
			Evidence map[string]any `json:"evidence"`
		} `json:"findings"`
		Evidence map[string]any `json:"evidence"`
	} `json:"targets"`
}

func diagnoseVia(t *testing.T, args ...string) transportView {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"diagnose", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("diagnose %s: exit %d: %s", args[0], code, errOut)
	}
	var v transportView
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Targets) < 1 {
		t.Fatalf("diagnose %s: %v: %.300s", args[0], err, out)
	}
	return v
}

// serveStepped serves the scenario's simulator in step mode on loopback,
// vLLM and DCGM families in one exposition as the snapshot files hold them:
// one URL adds no instance label, and no second scrape races for the clock.
func serveStepped(t *testing.T, sc *sim.Scenario) string {
	t.Helper()
	h := simHandler(t, sc, fixtureStep, 0)
	paths := []string{"/metrics", "/dcgm/metrics"}
	if sc.Router != nil || sc.Engine.Disaggregated != nil {
		// Several servers: all of them instance-labelled in one
		// exposition, as the snapshot files hold them (no GPUs).
		paths = []string{sim.AllPath}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i, path := range paths {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if i == 0 {
				w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
			}
			w.Write(rec.Body.Bytes())
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Transport agreement: one window gives one verdict and the same numbers
// through --snapshot (every sample point saved as a file), --vllm (live
// scrapes of the simulator in step mode) and --prom (the backfilled
// Prometheus). All three sample the scenario's window at the same 15 s
// instants: Offline's points, the step server's fixed grid from the warm-up
// on, and range queries at --step 15s ending at the last point.
func TestTransportsAgree(t *testing.T) {
	t.Parallel()
	fx := backfilledProm(t)
	for _, name := range promScenarios {
		t.Run(name, func(t *testing.T) {
			sc, err := sim.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			steps := int(sc.Duration / fixtureStep)
			if len(fx.points[name]) != steps+1 {
				t.Fatalf("%s: %d saved points for %d steps", name, len(fx.points[name]), steps)
			}
			snap := []string{"--snapshot-interval", fixtureStep.String()}
			for _, p := range fx.points[name] {
				snap = append(snap, "--snapshot", p)
			}
			ref := diagnoseVia(t, snap...)
			others := map[string]transportView{
				"--vllm": diagnoseVia(t, "--vllm", serveStepped(t, sc), "--interval", "1ms", "--scrapes", strconv.Itoa(steps)),
				"--prom": diagnoseVia(t, "--prom", fx.url, "--window", sc.Duration.String(),
					"--end", strconv.FormatInt(fx.ends[name].Unix(), 10), "--step", fixtureStep.String()),
			}
			for _, other := range []string{"--vllm", "--prom"} {
				for _, d := range disagreements(ref, others[other]) {
					t.Errorf("%s: --snapshot vs %s: %s", name, other, d)
				}
			}
		})
	}
}

// sameNumber is the tolerance between transports. All three carry the same
// integer counter and bucket increases (no extrapolation: the range starts
// and ends on samples) and the same gauge samples, and quantiles are
// interpolated by the same code from those buckets, so counts, gauge
// summaries and quantiles agree exactly; a one-observation shift would move
// them by far more than 1e-9. Only _sum differs in rounding (last − first
// from PromQL, a sum of per-scrape differences from scrapes): about 1e-16
// relative in a mean, 1e-13 in a difference of means (stage.front_mean).
func sameNumber(x, y float64) bool {
	return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))+1e-12
}

// disagreements lists every difference between two diagnoses of one window.
func disagreements(a, b transportView) []string {
	var out []string
	if a.Window != b.Window {
		out = append(out, fmt.Sprintf("window of %v s in %d points vs %v s in %d points",
			a.Window.Seconds, a.Window.Points, b.Window.Seconds, b.Window.Points))
	}
	if len(a.Targets) != len(b.Targets) {
		out = append(out, fmt.Sprintf("%d targets vs %d", len(a.Targets), len(b.Targets)))
	}
	ta, tb := a.Targets[0], b.Targets[0]
	if ta.Primary != tb.Primary {
		out = append(out, fmt.Sprintf("verdict %s (%s, %s) vs %s (%s, %s)", ta.Primary.Bottleneck, ta.Primary.Rule,
			ta.Primary.Status, tb.Primary.Bottleneck, tb.Primary.Rule, tb.Primary.Status))
	}
	type finding struct {
		severity string
		evidence map[string]any
	}
	fa, fb := map[string]finding{}, map[string]finding{}
	for _, f := range ta.Findings {
		fa[f.Rule] = finding{f.Severity, f.Evidence}
	}
	for _, f := range tb.Findings {
		fb[f.Rule] = finding{f.Severity, f.Evidence}
	}
	for _, r := range unionKeys(fa, fb) {
		x, okx := fa[r]
		y, oky := fb[r]
		switch {
		case !oky:
			out = append(out, fmt.Sprintf("rule %s fired (%s) only on the first", r, x.severity))
			continue
		case !okx:
			out = append(out, fmt.Sprintf("rule %s fired (%s) only on the second", r, y.severity))
			continue
		case x.severity != y.severity:
			out = append(out, fmt.Sprintf("rule %s: severity %s vs %s", r, x.severity, y.severity))
		}
		out = append(out, compareNumbers("rule "+r+": ", x.evidence, y.evidence)...)
	}
	// The whole tree too: a rule that did not fire on this window may on the next.
	return append(out, compareNumbers("evidence ", flatten(ta.Evidence), flatten(tb.Evidence))...)
}

func compareNumbers(prefix string, a, b map[string]any) []string {
	var out []string
	for _, p := range unionKeys(a, b) {
		x, okx := a[p].(float64)
		y, oky := b[p].(float64)
		switch {
		case okx && oky:
			if !sameNumber(x, y) {
				out = append(out, fmt.Sprintf("%s%s = %v vs %v (relative difference %.2g)", prefix, p, x, y,
					math.Abs(x-y)/math.Max(math.Abs(x), math.Abs(y))))
			}
		case fmt.Sprint(a[p]) != fmt.Sprint(b[p]):
			out = append(out, fmt.Sprintf("%s%s = %v vs %v", prefix, p, a[p], b[p]))
		}
	}
	return out
}

// flatten turns the JSON evidence tree into path → leaf.
func flatten(tree map[string]any) map[string]any {
	out := map[string]any{}
	var walk func(string, any)
	walk = func(path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			out[path] = v
			return
		}
		for k, x := range m {
			walk(strings.TrimPrefix(path+"."+k, "."), x)
		}
	}
	walk("", tree)
	return out
}

func unionKeys[T any](a, b map[string]T) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
