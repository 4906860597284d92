package rules

// Rule pages say how each registered engine's users obtain a field, so the
// docs test sees the engines the binary registers.
import (
	_ "github.com/llmdoctor/llmdoctor/collectors/sglang"
	_ "github.com/llmdoctor/llmdoctor/collectors/vllm"
)
