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
// known (request files alone): each engine's setting, without parentheses,
// as steps often put a knob inside their own.
var DefaultKnobs = map[string]string{
	"max_num_seqs":           "vLLM max-num-seqs / SGLang max-running-requests",
	"max_num_batched_tokens": "vLLM max-num-batched-tokens / SGLang chunked-prefill-size",
	"kv_cache_fp8":           "vLLM kv-cache-dtype fp8 / SGLang kv-cache-dtype fp8_e4m3",
	"gpu_memory_utilization": "vLLM gpu-memory-utilization / SGLang mem-fraction-static",
	"max_model_len":          "vLLM max-model-len / SGLang context-length",
	"long_prefill_limits":    "vLLM max-num-partial-prefills, max-long-partial-prefills and long-prefill-token-threshold / a smaller SGLang chunked-prefill-size",
	"enable_prefix_caching":  "vLLM enable-prefix-caching / SGLang without disable-radix-cache",
	"mixed_chunked_prefill":  "vLLM enable-chunked-prefill / SGLang enable-mixed-chunk",
	"api_server_count":       "vLLM api-server-count / SGLang tokenizer-worker-num",
	"speculative_decoding":   "vLLM speculative-config / SGLang speculative-algorithm",
	"max_loras":              "vLLM max-loras / SGLang max-loras-per-batch",
	"num_speculative_tokens": "vLLM num_speculative_tokens / SGLang speculative-num-steps and speculative-num-draft-tokens",
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
