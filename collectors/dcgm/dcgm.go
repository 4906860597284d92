// Package dcgm knows dcgm-exporter's GPU metric names (before and after the
// 4.9.0 renames) and attaches GPU evidence to the serving engines' targets.
package dcgm

import (
	"fmt"
	"math"
	"net"
	"sort"
	"strings"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
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

// Catalogue lists the GPU gauges llmdoctor reads, with their names in dcgm-exporter before and after 4.9 (etc/default-counters.csv in NVIDIA/dcgm-exporter).
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

func init() {
	x := &engine.Exporter{Name: "dcgm", Keep: []string{"gpu", "UUID", "uuid", "Hostname", "hostname", "modelName", "pod", "namespace", "instance", "GPU_I_ID"}}
	for _, m := range Catalogue {
		x.Gauges = append(x.Gauges, m.Names)
	}
	engine.RegisterExporter(x)
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

// GPU is one row of the peak-bandwidth table.
type GPU struct {
	// Name is the product as sold.
	Name string
	// Match lists words that must all appear in dcgm-exporter's modelName
	// (upper-cased, with "-" and "_" read as spaces); Not, words that must not.
	Match, Not []string
	// Bandwidth is peak memory bandwidth in bytes/s.
	Bandwidth float64
	// Source is where Bandwidth comes from.
	Source string
}

// GPUs is the peak-bandwidth table, matched against the modelName label that
// dcgm-exporter copies from NVML (what nvidia-smi prints as Name). The first
// row that matches wins, so a variant comes before its family: "H100 NVL"
// and "H100 PCIe" before "H100", whose other names ("H100 80GB HBM3") are
// the SXM part. Words match whole, so "L40" is not "L40S" and "A10" is not
// "A100". AMD Instinct GPUs (MI210…MI325X) are left out: dcgm-exporter is
// NVIDIA-only and llmdoctor reads no AMD exporter, so no AMD modelName
// reaches this table or the gpus: section of llmdoctor.yaml. Variants with
// no published figure (H20-3e, H800 NVL, A100-SXM-64GB) are kept out by Not
// so that they are named as unknown rather than given a family's number.
var GPUs = []GPU{
	// Hopper.
	{"H100 NVL (94 GB)", []string{"H100", "NVL"}, nil, 3.9e12, "https://www.nvidia.com/en-us/data-center/h100/"},
	{"H100 PCIe (80 GB)", []string{"H100", "PCIE"}, nil, 2.0e12, "NVIDIA H100 PCIe product brief PB-11133-001 (\"greater than 2,000 GB/s\")"},
	{"H100 SXM (80 GB)", []string{"H100"}, nil, 3.35e12, "https://www.nvidia.com/en-us/data-center/h100/"},
	{"H800 PCIe (80 GB)", []string{"H800", "PCIE"}, nil, 2.0e12, "http://mfbz.cn/a/975234.html (no public NVIDIA spec page)"},
	{"H800 SXM (80 GB)", []string{"H800"}, []string{"NVL"}, 3.35e12, "http://mfbz.cn/a/975234.html; https://aiwiki.ai/wiki/nvidia_h800"},
	{"H200 SXM and NVL (141 GB)", []string{"H200"}, nil, 4.8e12, "https://www.nvidia.com/en-us/data-center/h200/"},
	{"H20 (96 GB)", []string{"H20"}, []string{"3E"}, 4.0e12, "http://mfbz.cn/a/975234.html; https://willitrunai.com/es/gpus/h20-96gb (no public NVIDIA spec page)"},
	{"GH200 (144 GB HBM3e)", []string{"GH200", "HBM3E"}, nil, 4.9e12, "https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/"},
	{"GH200 (96 GB HBM3)", []string{"GH200"}, nil, 4.0e12, "https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/"},
	// Blackwell: NVIDIA's system figures divided by GPUs. The driver reports
	// a 7680-bit bus on B200, 7.67 TB/s (github.com/pytorch/ao/pull/4002).
	{"GB200 (186 GB)", []string{"GB200"}, nil, 8.0e12, "https://www.nvidia.com/en-us/data-center/gb200-nvl72/ (576 TB/s over 72 GPUs)"},
	{"B200 (180 GB)", []string{"B200"}, nil, 8.0e12, "https://www.nvidia.com/en-us/data-center/dgx-b200/ (64 TB/s over 8 GPUs)"},
	{"B100 (192 GB)", []string{"B100"}, nil, 8.0e12, "https://achoenix.github.io/optical_io/nvidia_system.html"},
	// Ampere.
	{"A100 80GB PCIe", []string{"A100", "80GB", "PCIE"}, nil, 1.935e12, a100Datasheet},
	{"A100 80GB SXM", []string{"A100", "80GB"}, nil, 2.039e12, a100Datasheet},
	{"A100 40GB SXM and PCIe", []string{"A100"}, []string{"64GB"}, 1.555e12, a100Datasheet},
	{"A10G (24 GB)", []string{"A10G"}, nil, 600e9, "https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/ (AWS publishes no bandwidth)"},
	{"A10 (24 GB)", []string{"A10"}, nil, 600e9, "https://www.nvidia.com/en-us/data-center/products/a10-gpu/"},
	{"A30 (24 GB)", []string{"A30"}, nil, 933e9, "https://www.nvidia.com/en-us/data-center/products/a30-gpu/"},
	{"A40 (48 GB)", []string{"A40"}, nil, 696e9, "https://www.nvidia.com/en-us/data-center/a40/"},
	{"RTX A6000 (48 GB)", []string{"A6000"}, nil, 768e9, "https://www.nvidia.com/en-us/design-visualization/rtx-a6000/"},
	// Ada Lovelace.
	{"L40S (48 GB)", []string{"L40S"}, nil, 864e9, "https://www.nvidia.com/en-us/data-center/l40s/"},
	{"L40 (48 GB)", []string{"L40"}, nil, 864e9, "https://www.nvidia.com/en-us/data-center/l40/"},
	{"L20 (48 GB)", []string{"L20"}, nil, 864e9, "https://www.topcpu.net/en/gpu-c/a40-pcie-vs-l20 (no public NVIDIA spec page)"},
	{"L4 (24 GB)", []string{"L4"}, nil, 300e9, "https://www.nvidia.com/en-us/data-center/l4/"},
	{"RTX 6000 Ada Generation (48 GB)", []string{"6000", "ADA"}, nil, 960e9, "https://www.nvidia.com/en-us/design-visualization/rtx-6000/"},
	// The laptop part shares the name but not the memory (576 GB/s).
	{"GeForce RTX 4090 (24 GB)", []string{"4090"}, []string{"LAPTOP"}, 1.008e12, "https://www.techpowerup.com/gpu-specs/geforce-rtx-4090.c3889 (21 Gbps × 384 bit)"},
	// Turing and Volta.
	{"T4 (16 GB)", []string{"T4"}, nil, 320e9, "https://www.nvidia.com/en-us/data-center/tesla-t4/"},
	{"V100S PCIe (32 GB)", []string{"V100S"}, nil, 1.134e12, "https://www.nvidia.com/en-us/data-center/v100/"},
	{"V100 SXM2 and PCIe (16/32 GB)", []string{"V100"}, nil, 900e9, "https://www.nvidia.com/en-us/data-center/v100/"},
}

const a100Datasheet = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"

// Lookup returns the table row for a dcgm-exporter modelName.
func Lookup(model string) (GPU, bool) {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToUpper(model), func(r rune) bool {
		return r == ' ' || r == '-' || r == '_' || r == '\t'
	}) {
		words[w] = true
	}
	for _, g := range GPUs {
		if allOf(words, g.Match) && !anyOf(words, g.Not) {
			return g, true
		}
	}
	return GPU{}, false
}

func allOf(words map[string]bool, ws []string) bool {
	for _, w := range ws {
		if !words[w] {
			return false
		}
	}
	return true
}

func anyOf(words map[string]bool, ws []string) bool {
	for _, w := range ws {
		if words[w] {
			return true
		}
	}
	return false
}

// PeakBandwidth returns a GPU model's peak memory bandwidth in bytes/s, or NaN.
func PeakBandwidth(model string) float64 {
	if g, ok := Lookup(model); ok {
		return g.Bandwidth
	}
	return math.NaN()
}

// Attach adds GPU evidence to targets. When the window holds one target in
// all, every GPU series is its; otherwise (several targets, or targets an
// engine filter left out) a GPU joins the target whose pod and namespace
// labels it shares (grouping by pod puts them on targets), else the one
// target serving from its Hostname: the host of the target's instance or of
// its series' instance labels. A GPU on a host that serves only targets left
// out is theirs and is skipped. peaks overrides the bandwidth table by exact
// modelName. It returns one note per GPU it could not join and one per GPU
// model whose bandwidth it does not know.
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
	hosts, others := servingHosts(w, evs)
	// One target takes every GPU only when it is the window's only target:
	// with --engine, another engine's series in the window are targets too,
	// and their GPUs are not this one's.
	only := len(evs) == 1 && !othersServed(w, evs)
	owner := map[string]*evidence.Evidence{}
	for k, l := range gpus {
		if only {
			owner[k] = evs[0]
			continue
		}
		e, note := join(l, evs, hosts, others)
		if e != nil {
			owner[k] = e
		} else if note != "" {
			notes = append(notes, "GPU "+k+" "+note)
		}
	}
	sort.Strings(notes)
	unknown := map[string]bool{}
	for _, e := range evs {
		attachOne(w, e, owner, peaks, unknown)
	}
	models := make([]string, 0, len(unknown))
	for m := range unknown {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		notes = append(notes, UnknownNote(m))
	}
	return notes
}

// othersServed reports whether the window holds series of a registered
// engine that serves none of the targets (one an engine filter left out).
func othersServed(w *window.Window, evs []*evidence.Evidence) bool {
	built := map[string]bool{}
	for _, e := range evs {
		built[e.Target.ServedBy] = true
	}
	for _, eng := range engine.Engines() {
		if !built[eng.Name] && eng.Has(w) {
			return true
		}
	}
	return false
}

// servingHosts gives the hosts each target serves from (its instance, its
// members' instances, the instance labels of its engine's series that match
// its labels), and the hosts of engine series that belong to no target.
func servingHosts(w *window.Window, evs []*evidence.Evidence) (map[*evidence.Evidence]map[string]bool, map[string]bool) {
	hosts := map[*evidence.Evidence]map[string]bool{}
	add := func(e *evidence.Evidence, inst string) {
		if h := hostOf(inst); h != "" {
			hosts[e][h] = true
		}
	}
	for _, e := range evs {
		hosts[e] = map[string]bool{}
		add(e, e.Target.Instance)
		for _, m := range e.Members {
			add(e, m.Target.Instance)
		}
	}
	others := map[string]bool{}
	for _, eng := range engine.Engines() {
		label := "instance"
		if len(eng.Members) > 0 {
			label = eng.Members[0]
		}
		eachSeries(w, eng, func(l window.Labels) {
			h := hostOf(l[label])
			if h == "" {
				return
			}
			claimed := false
			for _, e := range evs {
				if e.Target.ServedBy == eng.Name && len(e.Target.Labels) > 0 && window.Matches(window.Labels(e.Target.Labels), l, false) {
					hosts[e][h] = true
					claimed = true
				}
			}
			if !claimed {
				others[h] = true
			}
		})
	}
	return hosts, others
}

// eachSeries calls f with the labels of every counter, gauge and histogram
// series of an engine's families in the window.
func eachSeries(w *window.Window, eng *engine.Engine, f func(window.Labels)) {
	// Where the source summed targets, the instance labels are on the
	// per-member series.
	if w.Members != nil {
		eachSeries(w.Members, eng, f)
	}
	for _, m := range eng.Catalogue {
		for _, n := range m.Names {
			switch m.Kind {
			case engine.Counter:
				for _, c := range w.Counters[n] {
					f(c.Labels)
				}
			case engine.Gauge:
				for _, g := range w.Gauges[n] {
					f(g.Labels)
				}
			case engine.Histogram:
				for _, h := range w.Histograms[n] {
					f(h.Labels)
				}
			}
		}
	}
}

// hostOf is an instance's host, lower-cased: "node-a:8000" is "node-a".
func hostOf(inst string) string {
	if h, _, err := net.SplitHostPort(inst); err == nil {
		inst = h
	}
	return strings.ToLower(inst)
}

// UnknownNote says that a GPU model's peak bandwidth is unknown and how to
// give it.
func UnknownNote(model string) string {
	if strings.TrimSpace(model) == "" {
		return "DCGM series carry no modelName label, so the GPUs' peak memory bandwidth, achieved bandwidth and decode floor are unknown"
	}
	return fmt.Sprintf("GPU model %q is not in llmdoctor's bandwidth table, so its peak memory bandwidth, achieved bandwidth and decode floor are unknown: "+
		"give its peak in bytes/s in llmdoctor.yaml, e.g. gpus: {%q: {peak_bandwidth: 3.35e12}}", model, model)
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

// join finds the target a GPU belongs to, or says why there is none; a GPU
// on a host serving only targets left out gives neither.
func join(l window.Labels, evs []*evidence.Evidence, hosts map[*evidence.Evidence]map[string]bool, others map[string]bool) (*evidence.Evidence, string) {
	if pod := l["pod"]; pod != "" {
		for _, e := range evs {
			if e.Target.Labels["pod"] == pod && e.Target.Labels["namespace"] == l["namespace"] {
				return e, ""
			}
		}
	}
	host := l["Hostname"]
	if host == "" {
		host = l["hostname"]
	}
	host = hostOf(host)
	var on []*evidence.Evidence
	if host != "" {
		for _, e := range evs {
			if hosts[e][host] {
				on = append(on, e)
			}
		}
	}
	switch {
	case len(on) == 1 && !others[host]:
		return on[0], ""
	case len(on) == 0 && others[host]:
		return nil, ""
	case len(on) > 0:
		return nil, "could not be joined to one target: host " + host + " serves several (group by pod to tell their GPUs apart)"
	}
	return nil, "could not be joined to a target (no matching pod/namespace or hostname)"
}

func attachOne(w *window.Window, e *evidence.Evidence, owner map[string]*evidence.Evidence, peaks map[string]float64, unknown map[string]bool) {
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
			avg := mean(pts)
			series[m.Key] = evidence.Summarise(avg)
			e.Cite("resource."+m.Key, evidence.Source{Metric: n, From: w.From})
			if k := evidence.CurveOf("resource." + m.Key); k != "" {
				if tl := w.Timeline(avg); len(tl) > 0 {
					e.Curves[k] = tl
				}
			}
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
	// Count this target's GPUs and look up their peak bandwidth; with mixed
	// models the slowest bounds a tensor-parallel step.
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
				model := g.Labels["modelName"]
				p, ok := peaks[model]
				if !ok || p <= 0 {
					p = PeakBandwidth(model)
				}
				if !evidence.Present(p) {
					unknown[model] = true
				} else if !evidence.Present(peak) || p < peak {
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
