package engine

import (
	"math"
	"testing"
)

// Served names of well-known families say whether the model is a mixture
// of experts; a name the presets do not know says nothing.
func TestMoEPresets(t *testing.T) {
	for name, want := range map[string]float64{
		"mistralai/Mixtral-8x7B-Instruct-v0.1":      1,
		"Qwen/Qwen3-30B-A3B":                        1,
		"Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8":   1,
		"deepseek-ai/DeepSeek-V3":                   1,
		"openai/gpt-oss-120b":                       1,
		"meta-llama/Llama-4-Scout-17B-16E-Instruct": 1,
		"meta-llama/Llama-3.1-8B-Instruct":          0,
		"meta-llama/Meta-Llama-3-70B-Instruct":      0,
		"Qwen/Qwen2.5-7B-Instruct":                  0,
		"Qwen/Qwen3-8B":                             0,
		"deepseek-ai/DeepSeek-R1-Distill-Llama-8B":  math.NaN(),
		"my-finetune":                               math.NaN(),
	} {
		if got := MoE(name); !(got == want || math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("%s: moe %v, want %v", name, got, want)
		}
	}
}
