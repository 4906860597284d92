package dcgm

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
)

func gpuWin() *window.Window {
	w := window.New()
	w.Start, w.End = time.Unix(0, 0), time.Unix(900, 0)
	add := func(name string, v float64, l window.Labels) {
		w.Gauges[name] = append(w.Gauges[name], window.Gauge{Labels: l, Points: []float64{v, v}})
	}
	a := window.Labels{"gpu": "0", "UUID": "GPU-a", "Hostname": "node-a", "modelName": "NVIDIA H100 80GB HBM3"}
	b := window.Labels{"gpu": "0", "UUID": "GPU-b", "Hostname": "node-b", "modelName": "NVIDIA H100 80GB HBM3", "pod": "vllm-1", "namespace": "prod"}
	add("DCGM_FI_PROF_DRAM_ACTIVE", 0.8, a)
	add("DCGM_FI_PROF_DRAM_ACTIVE", 0.2, b)
	add("DCGM_FI_DEV_GPU_UTIL", 100, a) // a percentage before exporter 4.9
	add("DCGM_FI_DEV_FB_USED", 70000, a)
	add("DCGM_FI_DEV_FB_FREE", 10000, a)
	return w
}

func TestJoinByHostAndByPod(t *testing.T) {
	onA := evidence.New(evidence.Target{Model: "m", Instance: "node-a:8000"})
	onB := evidence.New(evidence.Target{Model: "m", Instance: "10.1.2.3:8000", Labels: map[string]string{"pod": "vllm-1", "namespace": "prod"}})
	notes := Attach(gpuWin(), []*evidence.Evidence{onA, onB}, nil)
	if len(notes) != 0 {
		t.Fatalf("notes %v", notes)
	}
	ra, rb := onA.Values.Resource, onB.Values.Resource
	if ra.DRAMActive.Mean != 0.8 || rb.DRAMActive.Mean != 0.2 || ra.GPUs != 1 || rb.GPUs != 1 {
		t.Fatalf("dram %v/%v gpus %v/%v", ra.DRAMActive.Mean, rb.DRAMActive.Mean, ra.GPUs, rb.GPUs)
	}
	if ra.GPUUtil.Mean != 1 || math.Abs(ra.FBUsed.Mean-0.875) > 1e-9 || ra.PeakBandwidth != 3.35e12 || ra.AchievedBandwidth != 0.8*3.35e12 {
		t.Fatalf("util %v fb %v peak %v", ra.GPUUtil.Mean, ra.FBUsed.Mean, ra.PeakBandwidth)
	}
	if ra.GPUProfiling != 1 {
		t.Fatal("profiling metrics present")
	}
}

func TestUnjoinedGPUsAreNoted(t *testing.T) {
	x := evidence.New(evidence.Target{Model: "m", Instance: "elsewhere:8000"})
	y := evidence.New(evidence.Target{Model: "n", Instance: "other:8000"})
	notes := Attach(gpuWin(), []*evidence.Evidence{x, y}, nil)
	if len(notes) != 2 || !strings.Contains(notes[0], "could not be joined") || evidence.Present(x.Values.Resource.DRAMActive.Mean) {
		t.Fatalf("notes %v", notes)
	}
}

func TestNewExporterNamesAndBandwidthOverride(t *testing.T) {
	w := window.New()
	l := window.Labels{"gpu": "0", "UUID": "GPU-a", "modelName": "NVIDIA H100 NVL"}
	w.Gauges["DCGM_FI_PROF_DRAM_UTIL_RATIO"] = []window.Gauge{{Labels: l, Points: []float64{0.5}}}
	w.Gauges["DCGM_FI_DEV_GPU_UTIL_RATIO"] = []window.Gauge{{Labels: l, Points: []float64{0.9}}}
	e := evidence.New(evidence.Target{Model: "m"})
	Attach(w, []*evidence.Evidence{e}, map[string]float64{"NVIDIA H100 NVL": 3.9e12})
	r := e.Values.Resource
	if r.DRAMActive.Mean != 0.5 || r.GPUUtil.Mean != 0.9 || r.PeakBandwidth != 3.9e12 {
		t.Fatalf("dram %v util %v peak %v", r.DRAMActive.Mean, r.GPUUtil.Mean, r.PeakBandwidth)
	}
}

func TestOnlyGPUUtilMeansNoProfiling(t *testing.T) {
	w := window.New()
	w.Gauges["DCGM_FI_DEV_GPU_UTIL"] = []window.Gauge{{Labels: window.Labels{"gpu": "0"}, Points: []float64{99}}}
	e := evidence.New(evidence.Target{Model: "m"})
	Attach(w, []*evidence.Evidence{e}, nil)
	if e.Values.Resource.GPUProfiling != 0 || e.Values.Resource.GPUUtil.Mean != 0.99 {
		t.Fatalf("profiling %v util %v", e.Values.Resource.GPUProfiling, e.Values.Resource.GPUUtil.Mean)
	}
}
