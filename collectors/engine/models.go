package engine

import (
	"math"
	"regexp"
)

// Weight sizes of well-known models in their usual 16-bit form, matched on
// the served model name. Quantized names (FP8, AWQ, GPTQ, INT4) are left out
// on purpose: guessing their size would put a wrong floor under decode.
var modelWeights = []struct {
	re    *regexp.Regexp
	bytes float64
}{
	{regexp.MustCompile(`(?i)(fp8|awq|gptq|int4|int8|w4a16|w8a8|nvfp4)`), math.NaN()},
	{regexp.MustCompile(`(?i)llama-3(\.\d)?-8b`), 16.06e9},
	{regexp.MustCompile(`(?i)llama-3(\.\d)?-70b`), 141.1e9},
	{regexp.MustCompile(`(?i)llama-3\.1-405b`), 810e9},
	{regexp.MustCompile(`(?i)qwen2\.5-1\.5b`), 3.09e9},
	{regexp.MustCompile(`(?i)qwen2\.5-7b`), 15.23e9},
	{regexp.MustCompile(`(?i)qwen2\.5-72b`), 145.4e9},
	{regexp.MustCompile(`(?i)mistral-7b`), 14.48e9},
}

// WeightBytes returns the weight size for a served model name, or NaN.
func WeightBytes(model string) float64 {
	for _, m := range modelWeights {
		if m.re.MatchString(model) {
			return m.bytes
		}
	}
	return math.NaN()
}

// Mixture-of-experts or dense, for well-known model families, matched on
// the served model name; the first match decides. A name matching none is
// unknown, and steps only for MoE models stay, worded as conditional.
var modelMoE = []struct {
	re  *regexp.Regexp
	moe float64
}{
	// Distilled models take the architecture of their student (dense Llama
	// or Qwen), not of the teacher named first.
	{regexp.MustCompile(`(?i)distill`), math.NaN()},
	{regexp.MustCompile(`(?i)(mixtral|deepseek-(v2|v3|r1|coder-v2)|qwen1\.5-moe|qwen\d(\.\d)?-(coder-|next-)?\d+b-a\d+(\.\d+)?b|gpt-oss|llama-4-(scout|maverick)|dbrx|phi-3\.5-moe|olmoe|kimi-k2|glm-4\.5)`), 1},
	{regexp.MustCompile(`(?i)(llama-2|llama-3(\.\d)?-\d+b|qwen2\.5-\d+(\.\d+)?b|mistral-7b|gemma-\d|qwen3-(0\.6|1\.7|4|8|14|32)b)`), 0},
}

// MoE returns 1 when a served model name is a known mixture-of-experts
// model, 0 when a known dense one, else NaN.
func MoE(model string) float64 {
	for _, m := range modelMoE {
		if m.re.MatchString(model) {
			return m.moe
		}
	}
	return math.NaN()
}
