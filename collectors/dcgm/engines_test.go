package dcgm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	_ "github.com/llmdoctor/llmdoctor/collectors/sglang"
	_ "github.com/llmdoctor/llmdoctor/collectors/vllm"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// twoEngines is a window holding a vLLM server on vllmHost and an SGLang
// server on sglangHost, with DCGM series for four H100s on each host.
func twoEngines(vllmHost, sglangHost string) *window.Window {
	w := window.New()
	w.Start, w.End, w.Points = time.Unix(0, 0), time.Unix(900, 0), 2
	w.Gauges["vllm:num_requests_running"] = []window.Gauge{{Labels: window.Labels{"model_name": "m1", "instance": vllmHost + ":8000"}, Points: []float64{4, 4}}}
	w.Gauges["sglang:num_running_reqs"] = []window.Gauge{{Labels: window.Labels{"model_name": "m2", "instance": sglangHost + ":30000"}, Points: []float64{4, 4}}}
	for _, host := range []string{"node-a", "node-b"} {
		for i := range 4 {
			l := window.Labels{"gpu": fmt.Sprint(i), "UUID": fmt.Sprintf("GPU-%s-%d", host, i), "Hostname": host, "modelName": "NVIDIA H100 80GB HBM3"}
			w.Gauges["DCGM_FI_PROF_DRAM_ACTIVE"] = append(w.Gauges["DCGM_FI_PROF_DRAM_ACTIVE"], window.Gauge{Labels: l, Points: []float64{0.5, 0.5}})
		}
	}
	return w
}

// With --engine on a window holding two engines, the one target left is not
// the window's only target: it takes its host's GPUs, not every GPU, so the
// decode floor divides the weights over four GPUs, not eight.
func TestEngineFilterJoinsByHost(t *testing.T) {
	const weights = 1.6e10
	for _, filter := range []string{"sglang", ""} {
		w := twoEngines("node-a", "node-b")
		evs := engine.Build(w, engine.Options{Engine: filter, WeightBytes: map[string]float64{"m1": weights, "m2": weights}})
		if want := map[string]int{"sglang": 1, "": 2}[filter]; len(evs) != want {
			t.Fatalf("engine %q: %d targets, want %d", filter, len(evs), want)
		}
		if notes := Attach(w, evs, nil); len(notes) != 0 {
			t.Errorf("engine %q: notes %v", filter, notes)
		}
		for _, e := range evs {
			r := e.Values.Resource
			if r.GPUs != 4 {
				t.Errorf("engine %q: %s target has %v GPUs, want its host's 4", filter, e.Target.ServedBy, r.GPUs)
			}
			if want := weights / (3.35e12 * 4); e.Values.Stage.DecodeFloor != want {
				t.Errorf("engine %q: %s decode floor %v, want %v", filter, e.Target.ServedBy, e.Values.Stage.DecodeFloor, want)
			}
		}
	}
}

// A window with one engine and one target still gives it every GPU, joined
// or not.
func TestOnlyTargetTakesEveryGPU(t *testing.T) {
	w := twoEngines("node-a", "node-b")
	delete(w.Gauges, "vllm:num_requests_running")
	evs := engine.Build(w, engine.Options{})
	if len(evs) != 1 {
		t.Fatalf("%d targets", len(evs))
	}
	if notes := Attach(w, evs, nil); len(notes) != 0 || evs[0].Values.Resource.GPUs != 8 {
		t.Fatalf("GPUs %v, notes %v", evs[0].Values.Resource.GPUs, notes)
	}
}

// When the target left and one left out serve from the same host, its GPUs
// cannot be told apart by host: none is attached, and the notes say why in
// no engine's name. GPUs on a host serving nothing are noted as unjoined.
func TestSharedHostIsNotGuessed(t *testing.T) {
	w := twoEngines("node-b", "node-b")
	evs := engine.Build(w, engine.Options{Engine: "sglang"})
	notes := Attach(w, evs, nil)
	if len(evs) != 1 || evs[0].Values.Resource.GPUs > 0 {
		t.Fatalf("GPUs %v", evs[0].Values.Resource.GPUs)
	}
	if len(notes) != 8 {
		t.Fatalf("notes %v", notes)
	}
	for _, n := range notes {
		want := "could not be joined to a target (no matching pod/namespace or hostname)"
		if strings.HasPrefix(n, "GPU node-b/") {
			want = "could not be joined to one target: host node-b serves several"
		}
		if !strings.Contains(n, want) {
			t.Errorf("note %q, want %q", n, want)
		}
		if strings.Contains(n, "vLLM") || strings.Contains(n, "SGLang") {
			t.Errorf("note names an engine: %q", n)
		}
	}
}
