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
