package prom

import (
	"context"
	"errors"
	"fmt"
	"github.com/llmdoctor/llmdoctor/sim/simtest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/dcgm"
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
	"github.com/llmdoctor/llmdoctor/sim"
)

func TestParseSelector(t *testing.T) {
	for sel, want := range map[string][]string{
		`model_name="a"`: {`model_name="a"`},
		` model_name = "a,b" , namespace=~'p.*',`:    {`model_name="a,b"`, `namespace=~"p.*"`},
		"instance!=`x\"y`,job!~\"a\\\"b\"":           {`instance!="x\"y"`, `job!~"a\"b"`},
		`__name__=~"vllm:.*"`:                        {`__name__=~"vllm:.*"`},
		`model_name="a"} or vector(1) or up{job="x"`: nil,
		`model_name`:                    nil,
		`model_name="a`:                 nil,
		`{model_name="a"}`:              nil,
		`model_name="a" namespace="b"`:  nil,
		`9x="a"`:                        nil,
		`model_name=a`:                  nil,
		`model_name="a",,namespace="b"`: nil,
		`model_name="a\"`:               nil,
		`model_name=~"a|b",namespace!="kube-system"`:    {`model_name=~"a|b"`, `namespace!="kube-system"`},
		`model_name="meta-llama/Llama-3.1-8B-Instruct"`: {`model_name="meta-llama/Llama-3.1-8B-Instruct"`},
	} {
		ms, ok := ParseSelector(sel)
		var got []string
		for _, m := range ms {
			got = append(got, m.Text)
		}
		if ok != (want != nil) || !slices.Equal(got, want) {
			t.Errorf("%s: %v %q, want %q", sel, ok, got, want)
		}
	}
}

// ParseMatchers says what is wrong with a selector it refuses, and takes
// what Prometheus takes between braces.
func TestParseMatchersErrors(t *testing.T) {
	for _, ok := range []string{"", `a="b"`, ` a = "b" , c!~'d.*', e=~` + "`x|y`" + `,`, `model_name="we\"ird"`, `__name__!="x"`} {
		if _, err := ParseMatchers(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		`a`:                  "needs an operator",
		`a=b`:                "must be quoted",
		`{a="b"}`:            "want label matchers like",
		`a="b"}`:             "separated by commas",
		`a="b" or vector(1)`: "separated by commas",
		`1a="b"`:             "want label matchers like",
		`a=="b"`:             "must be quoted",
		`a="b`:               "not closed",
		`a="b\"`:             "not closed",
		`a="b";c="d"`:        "separated by commas",
		`a=~"(x"`:            "not a regular expression",
		`a="\q"`:             "not a valid string",
	} {
		_, err := ParseMatchers(bad)
		var se *SelectorError
		if !errors.As(err, &se) || se.Selector != bad || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want a *SelectorError saying %q", bad, err, why)
		}
	}
}

// Model names of the scenarios the tests below deploy.
const (
	small = "meta-llama/Llama-3.1-8B-Instruct"  // queue-bound: one GPU
	large = "meta-llama/Llama-3.1-70B-Instruct" // decode-bound: eight
)

// selected is what a selector read, built into evidence as a diagnosis does.
type selected struct {
	w      *window.Window
	evs    []*evidence.Evidence
	notes  []string
	scopes []Scope
}

func readSelected(t *testing.T, url string, end time.Time, selector string) selected {
	t.Helper()
	c, err := New(Connection{URL: url}, Options{Window: 15 * time.Minute, Step: time.Minute, End: end, Selector: selector})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	evs := engine.Build(w, engine.Options{})
	notes := dcgm.Attach(w, evs, nil)
	return selected{w, evs, append(w.Notes, notes...), c.Scopes()}
}

// uuids are the GPUs a window's DCGM series name.
func uuids(w *window.Window) []string {
	set := map[string]bool{}
	for name, gs := range w.Gauges {
		if strings.HasPrefix(name, "DCGM_") {
			for _, g := range gs {
				set[g.Labels["UUID"]] = true
			}
		}
	}
	var out []string
	for u := range set {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

func scopeOf(ss []Scope, families string) (Scope, bool) {
	for _, s := range ss {
		if s.Families == families {
			return s, true
		}
	}
	return Scope{}, false
}

// A selector on model_name, the label every alert and slash command
// selects by, keeps the series that lack it: dcgm-exporter's GPUs and
// vLLM's cache_config_info are joined to the model's engine series
// through the instance, pod or host they share, and each model of two
// gets its own GPUs and cache configuration only. Where a host serves both
// models and no pod tells their GPUs apart, or no key links them at all,
// the GPUs are left out and the scope says why.
func TestSelectorJoinsSeriesWithoutItsLabels(t *testing.T) {
	promtest.Need(t)
	t.Parallel()
	dir := t.TempDir()
	tsdb := filepath.Join(dir, "tsdb")
	// Each layout a day apart, so that no block holds two.
	layouts := []struct {
		name string
		ds   []simtest.Deployment
	}{
		// Kubernetes: both models' pods on one node; dcgm-exporter says the
		// pod that uses each GPU.
		{"pods", []simtest.Deployment{
			{Scenario: "queue-bound",
				Labels:    map[string]string{"instance": "10.1.0.11:8000", "job": "vllm", "pod": "llama-8b-0", "namespace": "inference"},
				GPULabels: map[string]string{"instance": "10.0.0.1:9400", "job": "dcgm", "Hostname": "gpu-node-1", "pod": "llama-8b-0", "namespace": "inference", "container": "vllm"}},
			{Scenario: "decode-bound",
				Labels:    map[string]string{"instance": "10.1.0.12:8000", "job": "vllm", "pod": "llama-70b-0", "namespace": "inference"},
				GPULabels: map[string]string{"instance": "10.0.0.1:9400", "job": "dcgm", "Hostname": "gpu-node-1", "pod": "llama-70b-0", "namespace": "inference", "container": "vllm"}},
		}},
		// Bare metal: one host each, dcgm-exporter beside the engine.
		{"hosts", []simtest.Deployment{
			{Scenario: "queue-bound", Labels: map[string]string{"instance": "gpu-a:8000", "job": "vllm"},
				GPULabels: map[string]string{"instance": "gpu-a:9400", "job": "dcgm", "Hostname": "GPU-A"}},
			{Scenario: "decode-bound", Labels: map[string]string{"instance": "gpu-b:8000", "job": "vllm"},
				GPULabels: map[string]string{"instance": "gpu-b:9400", "job": "dcgm", "Hostname": "gpu-b"}},
		}},
		// Both models on one host, and nothing says which GPU is whose.
		{"shared", []simtest.Deployment{
			{Scenario: "queue-bound", Labels: map[string]string{"instance": "gpu-c:8000", "job": "vllm"},
				GPULabels: map[string]string{"instance": "gpu-c:9400", "job": "dcgm", "Hostname": "gpu-c"}},
			{Scenario: "decode-bound", Labels: map[string]string{"instance": "gpu-c:8001", "job": "vllm"},
				GPULabels: map[string]string{"instance": "gpu-c:9400", "job": "dcgm", "Hostname": "gpu-c"}},
		}},
		// No key at all: engine series with no instance, pod or node.
		{"unlinked", []simtest.Deployment{{Scenario: "queue-bound"}}},
	}
	ends := map[string]time.Time{}
	for i, l := range layouts {
		om, end := simtest.Deployments(t, dir, l.name, sim.Epoch.Add(time.Duration(i)*24*time.Hour), time.Minute, l.ds)
		promtest.Backfill(t, om, tsdb)
		ends[l.name] = end
	}
	url := promtest.Start(t, tsdb, "").URL
	sel := func(model string) string { return fmt.Sprintf("model_name=%q", model) }

	// gpus: how many GPUs each model's target gets and the key they were
	// joined through; cacheBy: cache_config_info's key.
	for _, tc := range []struct{ layout, gpusBy, cacheBy string }{
		{"pods", "pod", "instance"},
		{"hosts", "host", "instance"},
	} {
		t.Run(tc.layout, func(t *testing.T) {
			t.Parallel()
			end := ends[tc.layout]
			all := readSelected(t, url, end, "")
			if got := uuids(all.w); len(got) != 9 {
				t.Fatalf("without a selector %d GPUs were read, want 9", len(got))
			}
			var ds []simtest.Deployment
			for _, l := range layouts {
				if l.name == tc.layout {
					ds = l.ds
				}
			}
			// Without a selector too, each model's KV configuration is its
			// own server's.
			own := map[string]string{}
			for _, in := range all.w.Infos["vllm:cache_config_info"] {
				own[in.Labels["instance"]] = in.Labels["num_gpu_blocks"]
			}
			instance := map[string]string{small: ds[0].Labels["instance"], large: ds[1].Labels["instance"]}
			for _, e := range all.evs {
				if got, want := fmt.Sprint(e.Values.Cond.GPUBlocks), own[instance[e.Target.Model]]; got != want {
					t.Errorf("without a selector %s has %s GPU blocks, want %s", e.Target.Model, got, want)
				}
			}
			for i, model := range []string{small, large} {
				want, inst := []int{1, 8}[i], ds[i].Labels["instance"]
				r := readSelected(t, url, end, sel(model))
				if len(r.evs) != 1 || r.evs[0].Target.Model != model {
					t.Fatalf("%s: targets %v", model, r.evs)
				}
				e := r.evs[0]
				if got := e.Values.Resource.GPUs; got != float64(want) || len(uuids(r.w)) != want {
					t.Errorf("%s: %v GPUs on the target, %d read, want %d (notes %q)", model, got, len(uuids(r.w)), want, r.notes)
				}
				if !evidence.Present(e.Values.Resource.DRAMActive.Mean) {
					t.Errorf("%s: no DRAM activity", model)
				}
				infos := r.w.Infos["vllm:cache_config_info"]
				if len(infos) != 1 || infos[0].Labels["instance"] != inst {
					t.Errorf("%s: cache_config_info %v, want %s's only", model, infos, inst)
				} else if got, want := e.Values.Cond.GPUBlocks, infos[0].Labels["num_gpu_blocks"]; fmt.Sprint(got) != want {
					t.Errorf("%s: %v GPU blocks, want %s", model, got, want)
				}
				for fam, through := range map[string]string{"dcgm": tc.gpusBy, "vllm:cache_config_info": tc.cacheBy} {
					s, ok := scopeOf(r.scopes, fam)
					if !ok || !s.Read || s.Through != through || !slices.Equal(s.JoinedTo, []string{sel(model)}) || s.Note != "" {
						t.Errorf("%s: scope of %s %+v, want joined to %s through %s", model, fam, s, sel(model), through)
					}
				}
				if s, ok := scopeOf(r.scopes, "vllm"); !ok || !s.Read || !slices.Equal(s.Matched, []string{sel(model)}) || s.JoinedTo != nil {
					t.Errorf("%s: scope of vllm %+v", model, s)
				}
				for _, n := range r.notes {
					if strings.Contains(n, "GPU") {
						t.Errorf("%s: note %q", model, n)
					}
				}
			}
			// A matcher the GPU series pass for lacking its label selects
			// engine series all the same: the other model's GPUs stay out.
			r := readSelected(t, url, end, fmt.Sprintf("model_name!=%q", large))
			if len(r.evs) != 1 || r.evs[0].Values.Resource.GPUs != 1 || len(uuids(r.w)) != 1 {
				t.Errorf("model_name!=%q: %d targets, GPUs %v", large, len(r.evs), uuids(r.w))
			}
		})
	}

	t.Run("shared", func(t *testing.T) {
		t.Parallel()
		r := readSelected(t, url, ends["shared"], sel(small))
		if len(r.evs) != 1 || len(uuids(r.w)) != 0 || evidence.Present(r.evs[0].Values.Resource.GPUs) {
			t.Fatalf("the other model's GPUs on a shared host were read: %v", uuids(r.w))
		}
		s, ok := scopeOf(r.scopes, "dcgm")
		if !ok || s.Read || s.Through != "host" || !strings.Contains(s.Note, "gpu-c") || !strings.Contains(s.Note, "outside the selector") {
			t.Errorf("scope of dcgm %+v", s)
		}
		// The engine's own series join through their instance still.
		if s, ok := scopeOf(r.scopes, "vllm:cache_config_info"); !ok || !s.Read || s.Through != "instance" {
			t.Errorf("scope of cache_config_info %+v", s)
		}
	})

	t.Run("unlinked", func(t *testing.T) {
		t.Parallel()
		r := readSelected(t, url, ends["unlinked"], sel(small))
		if len(uuids(r.w)) != 0 {
			t.Fatalf("GPUs joined through nothing: %v", uuids(r.w))
		}
		for _, fam := range []string{"dcgm", "vllm:cache_config_info"} {
			s, ok := scopeOf(r.scopes, fam)
			if !ok || s.Read || s.Through != "" || !strings.Contains(s.Note, "share no instance, pod, node or host") || !strings.Contains(s.Note, sel(small)) {
				t.Errorf("scope of %s %+v", fam, s)
			}
		}
		// A selector on a label the GPU series carry is applied to them as
		// given.
		r = readSelected(t, url, ends["unlinked"], sel(small)+`,Hostname!="elsewhere"`)
		if s, ok := scopeOf(r.scopes, "dcgm"); !ok || !slices.Equal(s.Matched, []string{`Hostname!="elsewhere"`}) {
			t.Errorf("scope of dcgm %+v", s)
		}
	})
}
