package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withConfig writes an llmdoctor.yaml and returns its path.
func withConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "llmdoctor.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// configRefused runs diagnose on the queueing example with the config and
// wants exit 2 with one line naming the file (and the line, where the value
// sits in it) and holding want.
func configRefused(yaml string, want ...string) func(t *testing.T) {
	return func(t *testing.T) {
		cfg := withConfig(t, yaml)
		refusedWith(append([]string{"llmdoctor.yaml:"}, want...), nil,
			append([]string{"diagnose", "--config", cfg}, example("queueing")...)...)(t)
	}
}

// scenarioRefused runs demo on a scenario file naming gpu and model.
func scenarioRefused(gpu, model string, want ...string) func(t *testing.T) {
	return func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "s.yaml")
		src := "name: x\nmodel: " + model + "\ngpu: " + gpu + "\nworkload: {rate: 1, prompt: {mean: 10}, output: {mean: 10}}\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		refusedWith(want, nil, "demo", "--scenario", p)(t)
	}
}

func init() {
	robustCases = append(robustCases,
		robustCase{Area: "config", Input: "min_samples: 0",
			Want: "refused, exit 2: min_samples: 0 is out of range: want at least 1 (left out, it is 20)",
			Test: configRefused("min_samples: 0\n", "min_samples: 0 is out of range")},
		robustCase{Area: "config", Input: "min_samples: -3",
			Want: "refused, exit 2: min_samples: -3 is out of range",
			Test: configRefused("min_samples: -3\n", "min_samples: -3 is out of range")},
		robustCase{Area: "config", Input: "min_gauge_samples: 0.5",
			Want: "refused, exit 2: out of range, want at least 1",
			Test: configRefused("min_gauge_samples: 0.5\n", "min_gauge_samples: 0.5 is out of range")},
		robustCase{Area: "config", Input: "min_share: 1.5",
			Want: "refused, exit 2: out of range, want a share above 0 and at most 1",
			Test: configRefused("min_share: 1.5\n", "min_share: 1.5 is out of range", "at most 1")},
		robustCase{Area: "config", Input: "a negative rule param (decode/tpot-high tpot_slow: -0.05)",
			Want: "refused, exit 2: rules.decode/tpot-high.params.tpot_slow: -0.05 is not above 0 (the rule's default is 0.1)",
			Test: configRefused("rules:\n  decode/tpot-high: {params: {tpot_slow: -0.05}}\n",
				"rules.decode/tpot-high.params.tpot_slow: -0.05 is not above 0 (the rule's default is 0.1)")},
		robustCase{Area: "config", Input: "a zero rule param (queue/ttft-dominated queue_share: 0)",
			Want: "refused, exit 2: a threshold of 0 would fire on any queue at all; not above 0 (the rule's default is 0.3)",
			Test: configRefused("rules:\n  queue/ttft-dominated: {params: {queue_share: 0}}\n",
				"rules.queue/ttft-dominated.params.queue_share: 0 is not above 0")},
		robustCase{Area: "config", Input: "an unknown rule param",
			Want: "refused, exit 2: the rule has no such param, with the params it has",
			Test: configRefused("rules:\n  decode/tpot-high: {params: {tpot: 0.05}}\n",
				"rules.decode/tpot-high.params.tpot: the rule has no such param (it has [decode_share tpot_slow])")},
		robustCase{Area: "config", Input: "an unknown rule id",
			Want: "refused, exit 2: no such rule (see llmdoctor rules list)",
			Test: configRefused("rules:\n  queue/nope: {enabled: false}\n", "rules.queue/nope: no such rule (see llmdoctor rules list)")},
		robustCase{Area: "config", Input: "a bad severity (fatal)",
			Want: "refused, exit 2: unknown severity, want info, warning or critical",
			Test: configRefused("rules:\n  queue/batch-full: {severity: fatal}\n", `rules.queue/batch-full: unknown severity "fatal"`)},
		robustCase{Area: "config", Input: "gpus: an entry without peak_bandwidth (or 0)",
			Want: "refused, exit 2: missing or not above 0: want the GPU's peak HBM bandwidth in bytes per second",
			Test: configRefused("gpus:\n  NVIDIA H100 NVL: {peak_bandwidth: 0}\n", "gpus.NVIDIA H100 NVL.peak_bandwidth: missing or not above 0")},
		robustCase{Area: "config", Input: "gpus: peak_bandwidth: 3.35 (TB/s written for bytes/s)",
			Want: "refused, exit 2: 3.35 is in bytes per second: write 3.35e12 for 3.35 TB/s",
			Test: configRefused("gpus:\n  NVIDIA H100 NVL: {peak_bandwidth: 3.35}\n", "write 3.35e12 for 3.35 TB/s")},
		robustCase{Area: "config", Input: "gpus: a modelName the bandwidth table does not know",
			Want: "accepted: the entry adds that GPU (see the gpu section)",
			Test: func(t *testing.T) {
				cfg := withConfig(t, "gpus:\n  NVIDIA RTX PRO 6000 Blackwell Server Edition: {peak_bandwidth: 1.6e12}\n")
				if code, _, errOut := runCLI(t, append([]string{"diagnose", "--config", cfg}, example("queueing")...)...); code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
			}},
		robustCase{Area: "config", Input: "models: weight_bytes: 16 (GB written for bytes)",
			Want: "refused, exit 2: 16 is in bytes: write 16e9 for 16 GB",
			Test: configRefused("models:\n  meta-llama/Llama-3.1-8B-Instruct: {weight_bytes: 16}\n", "write 16e9 for 16 GB")},
		robustCase{Area: "config", Input: "models: weight_bytes: -1",
			Want: "refused, exit 2: missing or not above 0: want the size of the weights as loaded, in bytes",
			Test: configRefused("models:\n  meta-llama/Llama-3.1-8B-Instruct: {weight_bytes: -1}\n",
				"models.meta-llama/Llama-3.1-8B-Instruct.weight_bytes: missing or not above 0")},
		robustCase{Area: "config", Input: "a checklist item's id under rules: or suppress:",
			Want: "accepted by every command; checklist applies its params (check/kv-headroom max: 0.1 fails a window whose KV peaked at 21%)",
			Test: func(t *testing.T) {
				cfg := withConfig(t, "rules:\n  check/kv-headroom: {params: {max: 0.1}}\nsuppress:\n  - {rule: check/no-preemptions, reason: tested elsewhere}\n")
				if code, _, errOut := runCLI(t, append([]string{"diagnose", "--config", cfg}, example("healthy")...)...); code != 0 {
					t.Fatalf("diagnose: exit %d: %s", code, errOut)
				}
				code, out, errOut := runCLI(t, append([]string{"checklist", "--color", "never", "--config", cfg}, example("healthy")...)...)
				if code != 1 || !strings.Contains(out, "FAIL KV cache peak") {
					t.Fatalf("checklist: exit %d: %s\n%s", code, errOut, out)
				}
			}},
		robustCase{Area: "config", Input: "a scenario file naming an unknown GPU",
			Want: `refused, exit 2: unknown GPU "B9000"; known: the simulator's GPUs`,
			Test: scenarioRefused("B9000", "llama-8b", `unknown GPU "B9000"; known: A100-80GB, H100-SXM`)},
		robustCase{Area: "config", Input: "a scenario file naming an unknown model",
			Want: `refused, exit 2: unknown model "llama-9b"; known: the simulator's models`,
			Test: scenarioRefused("L4", "llama-9b", `unknown model "llama-9b"; known: llama-70b, llama-8b`)},
	)
}
