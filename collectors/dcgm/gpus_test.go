package dcgm

import (
	"math"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/sim"
)

// Where the modelName strings below were seen. dcgm-exporter copies the
// label from NVML, which is also what nvidia-smi prints as Name, so either
// output is a real sample.
const (
	driverREADME = "NVIDIA/open-gpu-kernel-modules README.md @015742d, product-name table"
	b200Sample   = "NVIDIA/TensorRT-LLM#10278, nvidia-smi"
)

// TestModelNames matches modelName strings as dcgm-exporter prints them.
func TestModelNames(t *testing.T) {
	for _, c := range []struct {
		model string
		want  float64 // NaN: unknown, named in a note
		seen  string
	}{
		{"NVIDIA H100 80GB HBM3", 3.35e12, "NVIDIA/dcgm-exporter#418, modelName label"},
		{"NVIDIA H100 NVL", 3.9e12, "akash-network/provider-configs#91, nvidia-smi --query-gpu=name"},
		{"NVIDIA H100 PCIe", 2.0e12, driverREADME},
		{"NVIDIA H100", 3.35e12, driverREADME},
		{"NVIDIA H800", 3.35e12, "NVIDIA/DCGM#120, nvidia-smi -q"},
		{"NVIDIA H800 PCIe", 2.0e12, driverREADME},
		{"NVIDIA H800 NVL", math.NaN(), driverREADME},
		{"NVIDIA H20", 4.0e12, "zzc0721/torch-performance-test-data#77, torch device name"},
		{"NVIDIA H20-3e", math.NaN(), driverREADME},
		{"NVIDIA H200", 4.8e12, "NVIDIA/mig-parted#120, nvidia-smi -q"},
		{"NVIDIA H200 NVL", 4.8e12, "NVIDIA/mig-parted#146 (title)"},
		{"NVIDIA GH200 480GB", 4.0e12, driverREADME},
		{"NVIDIA GH200 120GB", 4.0e12, driverREADME},
		{"NVIDIA GH200 144G HBM3e", 4.9e12, "NVIDIA/mig-parted#139 (title)"},
		{"NVIDIA B200", 8.0e12, b200Sample},
		{"NVIDIA GB200", 8.0e12, "sgl-project/sglang#11208, torch device name"},
		{"NVIDIA A100-SXM4-80GB", 2.039e12, "NVIDIA/CUDALibrarySamples#104, nvidia-smi -a"},
		{"NVIDIA A100-SXM4-40GB", 1.555e12, "bottlerocket-os/bottlerocket-core-kit#834, nvidia-smi"},
		{"NVIDIA A100-PCIE-40GB", 1.555e12, driverREADME},
		{"NVIDIA A100 80GB PCIe", 1.935e12, driverREADME + "; also as a modelName label in a public dcgm-exporter fork's README"},
		{"NVIDIA A100-SXM-64GB", math.NaN(), driverREADME},
		{"NVIDIA A800-SXM4-80GB", math.NaN(), "dexmal/dexbotic#41, nvidia-smi"},
		{"NVIDIA A10G", 600e9, "NVIDIA/DCGM#232, nvidia-smi"},
		{"NVIDIA A10", 600e9, "mayooot/detect-gpu#3, NVML name"},
		{"NVIDIA A10M", math.NaN(), driverREADME},
		{"NVIDIA A30", 933e9, "NVIDIA/dcgm-exporter#317, modelName label"},
		{"NVIDIA A40", 696e9, driverREADME},
		{"NVIDIA RTX A6000", 768e9, driverREADME},
		{"NVIDIA L40S", 864e9, "isaac-sim/IsaacSim#228, nvidia-smi -q"},
		{"NVIDIA L40", 864e9, driverREADME},
		{"NVIDIA L20", 864e9, driverREADME},
		{"NVIDIA L4", 300e9, driverREADME},
		{"NVIDIA L2", math.NaN(), driverREADME},
		{"NVIDIA RTX 6000 Ada Generation", 960e9, driverREADME},
		{"NVIDIA RTX 5000 Ada Generation", math.NaN(), driverREADME},
		{"NVIDIA RTX 2000 Ada Generation", math.NaN(), "NVIDIA/dcgm-exporter#736, modelName label"},
		{"NVIDIA RTX 6000D", math.NaN(), "aikitoria/open-gpu-kernel-modules#20, nvidia-smi"},
		{"Quadro RTX 6000", math.NaN(), driverREADME},
		{"NVIDIA GeForce RTX 4090", 1.008e12, "RLinf/RLinf#255, nvidia-smi"},
		{"NVIDIA GeForce RTX 4090 D", 1.008e12, driverREADME},
		{"NVIDIA GeForce RTX 4090 Laptop GPU", math.NaN(), "ollama/ollama#10393, nvidia-smi -q"},
		{"NVIDIA GeForce RTX 5090", math.NaN(), "noonghunna/club-3090#617, nvidia-smi"},
		{"Tesla T4", 320e9, "NVIDIA/dcgm-exporter#98 (Tesla T4 node); driver product name"},
		{"Tesla V100-SXM2-32GB", 900e9, "NVIDIA/dcgm-exporter#250, modelName label"},
		{"Tesla V100S-PCIE-32GB", 1.134e12, "TensorFlow device lists and nvidia-smi notes in public repositories (find_string)"},
		{"NVIDIA B100", 8.0e12, "assumed from the B200 pattern; not seen verbatim"},
	} {
		got := PeakBandwidth(c.model)
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			g, _ := Lookup(c.model)
			t.Errorf("%q (seen in %s): %g from %q, want %g", c.model, c.seen, got, g.Name, c.want)
		}
	}
}

// TestMostSpecificFirst checks that no row is hidden by an earlier, more
// general one: a row whose words are a subset of a later row's, and whose
// exclusions do not rule that row out, would always match first.
func TestMostSpecificFirst(t *testing.T) {
	has := func(ws []string, w string) bool {
		for _, x := range ws {
			if x == w {
				return true
			}
		}
		return false
	}
	for i, a := range GPUs {
		if a.Source == "" || a.Bandwidth <= 0 || len(a.Match) == 0 {
			t.Errorf("row %q lacks words, bandwidth or source", a.Name)
		}
		for _, b := range GPUs[i+1:] {
			covers := true
			for _, w := range a.Match {
				covers = covers && has(b.Match, w)
			}
			for _, w := range a.Not {
				covers = covers && !has(b.Match, w)
			}
			if covers {
				t.Errorf("%q comes before %q and matches every name of it", a.Name, b.Name)
			}
		}
	}
}

// TestSimulatorGPUsAreInTheTable keeps the simulator's presets and the table
// in step.
func TestSimulatorGPUsAreInTheTable(t *testing.T) {
	for name, g := range sim.GPUs {
		if got := PeakBandwidth(g.ModelName); got != g.Bandwidth {
			t.Errorf("sim preset %s (%q): table says %g, preset %g", name, g.ModelName, got, g.Bandwidth)
		}
	}
}

func TestUnknownModelIsNamedOnceWithHowToSetIt(t *testing.T) {
	w := window.New()
	for i, m := range []string{"NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA L40S"} {
		l := window.Labels{"gpu": string(rune('0' + i)), "UUID": "GPU-" + string(rune('a'+i)), "modelName": m}
		w.Gauges["DCGM_FI_PROF_DRAM_ACTIVE"] = append(w.Gauges["DCGM_FI_PROF_DRAM_ACTIVE"], window.Gauge{Labels: l, Points: []float64{0.5}})
	}
	e := evidence.New(evidence.Target{Model: "m"})
	notes := Attach(w, []*evidence.Evidence{e}, nil)
	want := `gpus: {"NVIDIA RTX PRO 6000 Blackwell Server Edition": {peak_bandwidth: 3.35e12}}`
	if len(notes) != 1 || !strings.Contains(notes[0], want) || !strings.Contains(notes[0], "llmdoctor.yaml") {
		t.Fatalf("notes %q", notes)
	}
	// The known GPU still gives a peak; the config silences the note.
	if e.Values.Resource.PeakBandwidth != 864e9 {
		t.Fatalf("peak %g", e.Values.Resource.PeakBandwidth)
	}
	e = evidence.New(evidence.Target{Model: "m"})
	notes = Attach(w, []*evidence.Evidence{e}, map[string]float64{"NVIDIA RTX PRO 6000 Blackwell Server Edition": 1.6e12})
	if len(notes) != 0 || e.Values.Resource.PeakBandwidth != 864e9 {
		t.Fatalf("notes %q peak %g: the slowest GPU bounds the target", notes, e.Values.Resource.PeakBandwidth)
	}
}
