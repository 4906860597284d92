package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// gpuRun diagnoses the queueing example with one DCGM GPU of the given
// modelName added to both snapshots, and returns the target's peak
// bandwidth (NaN: missing) and the diagnosis notes.
func gpuRun(t *testing.T, model string, extra ...string) (peak float64, notes []string) {
	t.Helper()
	dir := t.TempDir()
	args := []string{"diagnose", "--format", "json", "--snapshot-interval", "15m"}
	for _, f := range []string{"start.prom", "end.prom"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "queueing", f))
		if err != nil {
			t.Fatal(err)
		}
		labels := `gpu="0",UUID="GPU-0",device="nvidia0",modelName="` + model + `",Hostname="node-0"`
		b = append(b, []byte("# TYPE DCGM_FI_PROF_DRAM_ACTIVE gauge\nDCGM_FI_PROF_DRAM_ACTIVE{"+labels+"} 0.6\n"+
			"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{"+labels+"} 90\n")...)
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--snapshot", p)
	}
	code, out, errOut := runCLI(t, append(args, extra...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d struct {
		Notes   []string `json:"notes"`
		Targets []struct {
			Evidence map[string]any `json:"evidence"`
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Targets) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	return evidence.TreeNumber(d.Targets[0].Evidence, "resource.peak_bandwidth"), d.Notes
}

func gpuPeakIs(model string, want float64) func(t *testing.T) {
	return func(t *testing.T) {
		peak, notes := gpuRun(t, model)
		if peak != want {
			t.Fatalf("peak bandwidth %g, want %g (notes %q)", peak, want, notes)
		}
		for _, n := range notes {
			if strings.Contains(n, "bandwidth table") {
				t.Fatalf("a known GPU is named as unknown: %q", n)
			}
		}
	}
}

func gpuUnknown(model string) func(t *testing.T) {
	return func(t *testing.T) {
		peak, notes := gpuRun(t, model)
		if !math.IsNaN(peak) {
			t.Fatalf("peak bandwidth %g for an unknown GPU", peak)
		}
		want := `gpus: {"` + model + `": {peak_bandwidth: 3.35e12}}`
		n := 0
		for _, x := range notes {
			if strings.Contains(x, "llmdoctor.yaml") && strings.Contains(x, want) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("want one note naming %q with %s: %q", model, want, notes)
		}
	}
}

func init() {
	robustCases = append(robustCases,
		robustCase{Area: "gpu", Input: `dcgm-exporter modelName "NVIDIA H100 NVL"`,
			Want: "peak bandwidth 3.9 TB/s, not the H100 SXM entry's 3.35 TB/s",
			Test: gpuPeakIs("NVIDIA H100 NVL", 3.9e12)},
		robustCase{Area: "gpu", Input: `dcgm-exporter modelName "NVIDIA H100 PCIe"`,
			Want: "peak bandwidth 2.0 TB/s, not the SXM entry's",
			Test: gpuPeakIs("NVIDIA H100 PCIe", 2.0e12)},
		robustCase{Area: "gpu", Input: `dcgm-exporter modelName "NVIDIA A100 80GB PCIe"`,
			Want: "peak bandwidth 1.935 TB/s, not the A100 80GB SXM's 2.039 TB/s",
			Test: gpuPeakIs("NVIDIA A100 80GB PCIe", 1.935e12)},
		robustCase{Area: "gpu", Input: `dcgm-exporter modelName "NVIDIA A10G" (not an A100)`,
			Want: "peak bandwidth 600 GB/s: names match by whole words",
			Test: gpuPeakIs("NVIDIA A10G", 600e9)},
		robustCase{Area: "gpu", Input: `dcgm-exporter modelName "NVIDIA GeForce RTX 4090 Laptop GPU"`,
			Want: "named as an unknown GPU, not given the desktop RTX 4090's 1,008 GB/s",
			Test: gpuUnknown("NVIDIA GeForce RTX 4090 Laptop GPU")},
		robustCase{Area: "gpu", Input: "a dcgm-exporter modelName missing from the bandwidth table",
			Want: `one note names the model with the llmdoctor.yaml line that sets it (gpus: {"<modelName>": {peak_bandwidth: 3.35e12}}); peak and achieved bandwidth and the decode floor stay missing, not guessed`,
			Test: gpuUnknown("NVIDIA RTX PRO 6000 Blackwell Server Edition")},
		robustCase{Area: "gpu", Input: "an unknown modelName given in llmdoctor.yaml gpus:",
			Want: "the configured peak bandwidth is used and the note is gone",
			Test: func(t *testing.T) {
				model := "NVIDIA RTX PRO 6000 Blackwell Server Edition"
				cfg := filepath.Join(t.TempDir(), "llmdoctor.yaml")
				if err := os.WriteFile(cfg, []byte(`gpus: {"`+model+`": {peak_bandwidth: 1.6e12}}`+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				peak, notes := gpuRun(t, model, "--config", cfg)
				if peak != 1.6e12 || strings.Contains(strings.Join(notes, " "), "bandwidth table") {
					t.Fatalf("peak %g notes %q", peak, notes)
				}
			}},
	)
}
