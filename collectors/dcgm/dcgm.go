// Package dcgm knows dcgm-exporter's GPU metric names (before and after the
// 4.9.0 renames) and attaches GPU evidence to vLLM targets.
package dcgm

import (
	"math"
	"net"
	"regexp"
	"sort"
	"strings"

	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
)

// Metric is one GPU gauge with every exposed name, newest first, and the
// factor that turns its value into a ratio 0..1.
type Metric struct {
	Key    string
	Names  []string
	Scales []float64
	How    string
}

// Catalogue lists the GPU gauges llmdoctor reads (reference/dcgm.md §1.2, §1.5).
var Catalogue = []Metric{
	{"dram_active", []string{"DCGM_FI_PROF_DRAM_UTIL_RATIO", "DCGM_FI_PROF_DRAM_ACTIVE"}, []float64{1, 1},
		"enable profiling metrics (DCP) in dcgm-exporter"},
	{"gr_active", []string{"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}, []float64{1, 1},
		"enable profiling metrics (DCP) in dcgm-exporter"},
	{"tensor_active", []string{"DCGM_FI_PROF_TENSOR_UTIL_RATIO", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"}, []float64{1, 1},
		"enable profiling metrics (DCP) in dcgm-exporter"},
	{"sm_active", []string{"DCGM_FI_PROF_SM_ACTIVE"}, []float64{1},
		"DCGM_FI_PROF_SM_ACTIVE is off by default: add it to the exporter's counters CSV"},
	{"gpu_util", []string{"DCGM_FI_DEV_GPU_UTIL_RATIO", "DCGM_FI_DEV_GPU_UTIL"}, []float64{1, 0.01},
		"dcgm-exporter default counters"},
	{"fb_used_ratio", []string{"DCGM_FI_DEV_FB_USED_RATIO"}, []float64{1}, "dcgm-exporter 4.9+"},
	{"fb_used", []string{"DCGM_FI_DEV_FB_USED"}, []float64{1}, "dcgm-exporter default counters"},
	{"fb_free", []string{"DCGM_FI_DEV_FB_FREE"}, []float64{1}, "dcgm-exporter default counters"},
}

// Known reports whether name is a GPU metric llmdoctor reads.
func Known(name string) bool {
	for _, m := range Catalogue {
		for _, n := range m.Names {
			if n == name {
				return true
			}
		}
	}
	return false
}

// Peak HBM bandwidth by dcgm-exporter modelName (reference/dcgm.md §1.8).
var peakBandwidth = []struct {
	re  *regexp.Regexp
	bps float64
}{
	{regexp.MustCompile(`(?i)A100.*PCIE.*80`), 1.935e12},
	{regexp.MustCompile(`(?i)A100.*80`), 2.039e12},
	{regexp.MustCompile(`(?i)A100`), 1.555e12},
	{regexp.MustCompile(`(?i)H100.*PCIE`), 2.0e12},
	{regexp.MustCompile(`(?i)H100`), 3.35e12},
	{regexp.MustCompile(`(?i)H200`), 4.8e12},
	{regexp.MustCompile(`(?i)B200`), 8.0e12},
	{regexp.MustCompile(`(?i)L40S`), 864e9},
	{regexp.MustCompile(`(?i)A10G`), 600e9},
	{regexp.MustCompile(`(?i)\bL4\b`), 300e9},
	{regexp.MustCompile(`(?i)MI300X`), 5.3e12},
}

// PeakBandwidth returns a GPU model's peak HBM bandwidth in bytes/s, or NaN.
func PeakBandwidth(model string) float64 {
	for _, p := range peakBandwidth {
		if p.re.MatchString(model) {
			return p.bps
		}
	}
	return math.NaN()
}

// Attach adds GPU evidence to targets. With one target every GPU series is
// its; with several, a GPU joins the target whose pod and namespace labels it
// shares (grouping by pod puts them on targets), else the target whose
// instance host matches its Hostname label. peaks overrides the bandwidth
// table by exact modelName. It returns one note per GPU it could not join.
func Attach(w *window.Window, evs []*evidence.Evidence, peaks map[string]float64) []string {
	if len(evs) == 0 {
		return nil
	}
	var notes []string
	gpus := map[string]window.Labels{} // gpu key → labels
	for _, m := range Catalogue {
		for _, n := range m.Names {
			for _, g := range w.Gauges[n] {
				gpus[gpuKey(g.Labels)] = g.Labels
			}
		}
	}
	if len(gpus) == 0 {
		return nil
	}
	owner := map[string]*evidence.Evidence{}
	for k, l := range gpus {
		if len(evs) == 1 {
			owner[k] = evs[0]
			continue
		}
		if e := join(l, evs); e != nil {
			owner[k] = e
		} else {
			notes = append(notes, "GPU "+k+" could not be joined to a vLLM target (no matching pod/namespace or hostname)")
		}
	}
	sort.Strings(notes)
	for _, e := range evs {
		attachOne(w, e, owner, peaks)
	}
	return notes
}

func gpuKey(l window.Labels) string {
	host := l["Hostname"]
	if host == "" {
		host = l["hostname"]
	}
	id := l["UUID"]
	if id == "" {
		id = l["uuid"]
	}
	if id == "" {
		id = l["gpu"]
	}
	return host + "/" + id + "/" + l["GPU_I_ID"]
}

func join(l window.Labels, evs []*evidence.Evidence) *evidence.Evidence {
	if pod := l["pod"]; pod != "" {
		for _, e := range evs {
			if e.Target.Labels["pod"] == pod && e.Target.Labels["namespace"] == l["namespace"] {
				return e
			}
		}
	}
	host := l["Hostname"]
	if host == "" {
		host = l["hostname"]
	}
	for _, e := range evs {
		inst := e.Target.Instance
		if h, _, err := net.SplitHostPort(inst); err == nil {
			inst = h
		}
		if host != "" && inst != "" && strings.EqualFold(host, inst) {
			return e
		}
	}
	return nil
}

func attachOne(w *window.Window, e *evidence.Evidence, owner map[string]*evidence.Evidence, peaks map[string]float64) {
	r := &e.Values.Resource
	mine := func(l window.Labels) bool { return owner[gpuKey(l)] == e }
	series := map[string]evidence.Series{}
	for _, m := range Catalogue {
		for i, n := range m.Names {
			gs := w.Gauges[n]
			var pts [][]float64
			for _, g := range gs {
				if mine(g.Labels) {
					pts = append(pts, scaled(g.Points, m.Scales[i]))
				}
			}
			if len(pts) == 0 {
				continue
			}
			series[m.Key] = evidence.Summarise(mean(pts))
			e.Cite("resource."+m.Key, evidence.Source{Metric: n, From: w.From})
			break
		}
	}
	set := func(key string, dst *evidence.Series, path string) {
		if s, ok := series[key]; ok {
			*dst = s
			if src, ok := e.Sources["resource."+key]; ok {
				e.Cite(path, src)
			}
		}
	}
	set("dram_active", &r.DRAMActive, "resource.dram_active")
	set("gr_active", &r.GRActive, "resource.gr_active")
	set("tensor_active", &r.TensorActive, "resource.tensor_active")
	set("sm_active", &r.SMActive, "resource.sm_active")
	set("gpu_util", &r.GPUUtil, "resource.gpu_util")
	if s, ok := series["fb_used_ratio"]; ok {
		r.FBUsed = s
		e.Cite("resource.fb_used", e.Sources["resource.fb_used_ratio"])
	} else if ratio := fbRatio(w, mine); ratio != nil {
		r.FBUsed = evidence.Summarise(ratio)
		e.Cite("resource.fb_used", evidence.Source{Metric: "derived", From: w.From, Note: "DCGM_FI_DEV_FB_USED ÷ (FB_USED + FB_FREE)"})
	}
	// Count this target's GPUs and look up their peak bandwidth.
	n, peak := 0, math.NaN()
	seen := map[string]bool{}
	for _, m := range Catalogue {
		for _, name := range m.Names {
			for _, g := range w.Gauges[name] {
				k := gpuKey(g.Labels)
				if !mine(g.Labels) || seen[k] {
					continue
				}
				seen[k] = true
				n++
				if p, ok := peaks[g.Labels["modelName"]]; ok && p > 0 {
					peak = p
				} else if p := PeakBandwidth(g.Labels["modelName"]); evidence.Present(p) {
					peak = p
				}
			}
		}
	}
	if n > 0 {
		r.GPUProfiling = 0
		if evidence.Present(r.DRAMActive.Mean) || evidence.Present(r.GRActive.Mean) || evidence.Present(r.TensorActive.Mean) {
			r.GPUProfiling = 1
		}
		e.Cite("resource.gpu_profiling", evidence.Source{Metric: "derived", From: w.From, Note: "whether DCGM_FI_PROF_* series exist"})
		r.GPUs = float64(n)
		e.Cite("resource.gpus", evidence.Source{Metric: "derived", From: w.From, Note: "distinct GPUs in DCGM series"})
	}
	if evidence.Present(peak) {
		r.PeakBandwidth = peak
		e.Cite("resource.peak_bandwidth", evidence.Source{Metric: "derived", Note: "GPU model (modelName label) → peak HBM bandwidth table"})
		if wb := e.Values.Cond.WeightBytes; evidence.Present(wb) && n > 0 {
			e.Values.Stage.DecodeFloor = wb / (peak * float64(n))
			e.Cite("stage.decode_floor", evidence.Source{Metric: "derived", Note: "weight bytes ÷ (peak bandwidth × GPUs)"})
		}
		if evidence.Present(r.DRAMActive.Mean) {
			r.AchievedBandwidth = r.DRAMActive.Mean * peak
			e.Cite("resource.achieved_bandwidth", evidence.Source{Metric: "derived", Note: "DRAM_ACTIVE × peak bandwidth"})
		}
	}
}

// fbRatio is used ÷ (used + free) per GPU and point, averaged over GPUs; the
// ratio does not depend on the unit (MiB before exporter 4.9, bytes after).
func fbRatio(w *window.Window, mine func(window.Labels) bool) []float64 {
	free := map[string][]float64{}
	for _, g := range w.Gauges["DCGM_FI_DEV_FB_FREE"] {
		if mine(g.Labels) {
			free[gpuKey(g.Labels)] = g.Points
		}
	}
	var pts [][]float64
	for _, g := range w.Gauges["DCGM_FI_DEV_FB_USED"] {
		f, ok := free[gpuKey(g.Labels)]
		if !mine(g.Labels) || !ok {
			continue
		}
		r := make([]float64, len(g.Points))
		for i, u := range g.Points {
			r[i] = math.NaN()
			if i < len(f) && u+f[i] > 0 {
				r[i] = u / (u + f[i])
			}
		}
		pts = append(pts, r)
	}
	if len(pts) == 0 {
		return nil
	}
	return mean(pts)
}

func scaled(p []float64, f float64) []float64 {
	out := make([]float64, len(p))
	for i, x := range p {
		out[i] = x * f
	}
	return out
}

// mean averages aligned points across GPUs, skipping NaN.
func mean(pts [][]float64) []float64 {
	n := 0
	for _, p := range pts {
		n = max(n, len(p))
	}
	out := make([]float64, n)
	for i := range out {
		var s, c float64
		for _, p := range pts {
			if i < len(p) && !math.IsNaN(p[i]) && !math.IsInf(p[i], 0) {
				s += p[i]
				c++
			}
		}
		out[i] = math.NaN()
		if c > 0 {
			out[i] = s / c
		}
	}
	return out
}
