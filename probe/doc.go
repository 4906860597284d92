// Package probe asks a serving engine directly what metrics cannot tell: it
// sends OpenAI-compatible streaming requests to a vLLM, SGLang or
// compatible server — a prompt-length sweep at concurrency 1 (prefill cost
// per token), then a load ladder (latency and throughput per load) — and
// finds the load past which latency rises faster than throughput and the
// highest load that meets the SLO. While the ladder runs it scrapes the
// engine's /metrics, so each step splits into queue, prefill and decode
// and goes through the same pipeline (package diagnosis) as any window.
// Every request counts against bounded limits; a probe stopped early
// reports what it measured.
package probe
