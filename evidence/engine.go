package evidence

import (
	"sort"
	"strings"
	"sync"
)

// Engine is what the serving engine behind a target calls things: how its
// users obtain each field and its flag for each knob a next step names. The
// collector that built the evidence sets it; rules stay engine-neutral.
type Engine struct {
	Name, Title string
	How         map[string]string
	Knobs       map[string]string
}

// How says how to obtain the value at path from this target's engine,
// falling back to the engine-neutral catalogue text.
func (e *Evidence) How(path string) string {
	if e.Engine != nil {
		for p := path; p != ""; p = parent(p) {
			if h, ok := e.Engine.How[p]; ok {
				return h
			}
		}
	}
	f, _ := Lookup(path)
	return f.How
}

// Knob renders a knob named in a next step as the engine's flag; a knob the
// engine lacks is named in words, and without an engine the knob is named
// generically.
func (e *Evidence) Knob(k string) string {
	if e.Engine != nil {
		if f, ok := e.Engine.Knobs[k]; ok {
			if f != "" {
				return f
			}
			return strings.ReplaceAll(k, "_", " ") + " (no " + e.Engine.Title + " flag)"
		}
	}
	if f, ok := DefaultKnobs[k]; ok {
		return f
	}
	return strings.ReplaceAll(k, "_", " ")
}

// DefaultKnobs name each knob a next step may use when the engine is not
// known (request files alone): the setting in words.
var DefaultKnobs = map[string]string{
	"max_num_seqs":                 "the cap on running requests (max-num-seqs in vLLM, max-running-requests in SGLang)",
	"max_num_batched_tokens":       "the per-step token budget (max-num-batched-tokens in vLLM, chunked-prefill-size in SGLang)",
	"kv_cache_dtype":               "the KV cache dtype (kv-cache-dtype)",
	"gpu_memory_utilization":       "the GPU memory fraction (gpu-memory-utilization in vLLM, mem-fraction-static in SGLang)",
	"max_model_len":                "the context length (max-model-len in vLLM, context-length in SGLang)",
	"max_num_partial_prefills":     "the number of prompts prefilled at once (vLLM's max-num-partial-prefills)",
	"max_long_partial_prefills":    "the number of long prompts prefilled at once (vLLM's max-long-partial-prefills)",
	"long_prefill_token_threshold": "the length above which a prompt counts as long (vLLM's long-prefill-token-threshold)",
	"enable_prefix_caching":        "prefix caching (enable-prefix-caching in vLLM; SGLang's radix cache)",
	"enable_chunked_prefill":       "chunked prefill",
	"api_server_count":             "the number of API server processes (api-server-count in vLLM, tokenizer-worker-num in SGLang)",
}

var (
	vocabMu sync.RWMutex
	vocabs  []*Engine
)

// RegisterEngine records an engine's vocabulary, for documentation that
// says how each engine's users obtain a field.
func RegisterEngine(v *Engine) {
	vocabMu.Lock()
	defer vocabMu.Unlock()
	vocabs = append(vocabs, v)
	sort.Slice(vocabs, func(i, j int) bool { return vocabs[i].Name < vocabs[j].Name })
}

// Engines lists the registered vocabularies by name.
func Engines() []*Engine {
	vocabMu.RLock()
	defer vocabMu.RUnlock()
	return append([]*Engine(nil), vocabs...)
}

// HowByEngine says how to obtain a field from each registered engine that
// has its own text; empty when none has.
func HowByEngine(path string) []string {
	var out []string
	for _, v := range Engines() {
		for p := path; p != ""; p = parent(p) {
			if h, ok := v.How[p]; ok {
				out = append(out, v.Title+": "+h)
				break
			}
		}
	}
	return out
}
