package logs

import (
	"math"
	"strings"
	"testing"
)

// One test per form a log arrives in: each engine's lines across versions
// (formats from the engines' source and its history), and the ways pasted
// lines are mangled. Each checks the numbers read, not only that something was.
func TestLogForms(t *testing.T) {
	v0 := "INFO 06-16 21:24:15 metrics.py:341] Avg prompt throughput: 2706.1 tokens/s, Avg generation throughput: 13395.4 tokens/s, Running: 34 reqs, Swapped: 100 reqs, Pending: 9832 reqs, GPU KV cache usage: 99.2%, CPU KV cache usage: 70.4%."
	v0b := "INFO 06-16 21:24:20 metrics.py:341] Avg prompt throughput: 3737.0 tokens/s, Avg generation throughput: 8906.6 tokens/s, Running: 37 reqs, Swapped: 137 reqs, Pending: 9779 reqs, GPU KV cache usage: 76.6%, CPU KV cache usage: 77.9%."
	v1 := "(APIServer pid=11574) INFO 03-17 15:38:10 [loggers.py:259] Engine 000: Avg prompt throughput: 23998.2 tokens/s, Avg generation throughput: 18.1 tokens/s, Running: 10 reqs, Waiting: 90 reqs, GPU KV cache usage: 19.3%, Prefix cache hit rate: 0.0%"
	v1b := "(APIServer pid=11574) INFO 03-17 15:38:20 [loggers.py:259] Engine 000: Avg prompt throughput: 23999.9 tokens/s, Avg generation throughput: 35.4 tokens/s, Running: 16 reqs, Waiting: 84 reqs, GPU KV cache usage: 30.9%, Prefix cache hit rate: 0.0%"
	type want struct {
		engine                        string
		readings, joined, skipped     int
		running, waiting, kv, swapped float64 // of the first reading; NaN: absent
		preemptions                   float64 // NaN: unknown
		seconds                       float64 // window length; 0: not checked
	}
	nan := math.NaN()
	cases := []struct {
		name, log string
		want      want
	}{
		{"V0 without the trailing period (llm_engine.py, before 0.4.3)",
			"INFO 11-20 14:03:11 llm_engine.py:624] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 243.9 tokens/s, Running: 9 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 4.8%, CPU KV cache usage: 0.0%\n",
			want{engine: "vllm", readings: 1, running: 9, waiting: 0, kv: 0.048, swapped: 0, preemptions: nan}},
		{"V0 with swaps and the preemption warning",
			v0 + "\nWARNING 06-16 21:24:15 scheduler.py:1089] Sequence group 165 is preempted by PreemptionMode.SWAP mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=151\n" + v0b + "\n",
			want{engine: "vllm", readings: 2, running: 34, waiting: 9832, kv: 0.992, swapped: 100, preemptions: 1, seconds: 10}},
		{"V0 warnings stand for every preemption between them",
			v0 + "\nWARNING 06-16 21:24:16 scheduler.py:1089] Sequence group 1 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. total_num_cumulative_preemption=1\nWARNING 06-16 21:24:19 scheduler.py:1089] Sequence group 9 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. total_num_cumulative_preemption=101\n" + v0b + "\n",
			want{engine: "vllm", readings: 2, running: 34, waiting: 9832, kv: 0.992, swapped: 100, preemptions: 101}},
		{"V1 0.7.1–0.7.2: no comma before GPU KV cache usage, a trailing period",
			"INFO 02-03 09:15:27 loggers.py:72] Avg prompt throughput: 1520.3 tokens/s, Avg generation throughput: 402.8 tokens/s, Running: 24 reqs, Waiting: 0 reqs GPU KV cache usage: 18.4%.\n",
			want{engine: "vllm", readings: 1, running: 24, waiting: 0, kv: 0.184, swapped: nan, preemptions: nan}},
		{"V1 with Preemptions and aggregated engines",
			"(APIServer pid=1) INFO 02-20 10:00:05 [loggers.py:257] 4 Engines Aggregated: Avg prompt throughput: 820.4 tokens/s, Avg generation throughput: 2210.7 tokens/s, Running: 128 reqs, Waiting: 41 reqs, Preemptions: 6, GPU KV cache usage: 100.0%, Prefix cache hit rate: 62.3%, External prefix cache hit rate: 18.0%\n",
			want{engine: "vllm", readings: 1, running: 128, waiting: 41, kv: 1, swapped: nan, preemptions: 6}},
		{"colour codes, real and with the escape lost in a paste",
			"\x1b[1;36m(APIServer pid=7)\x1b[0;0m INFO 08-20 03:11:09 loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 41.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.4%, Prefix cache hit rate: 0.0%\n" +
				"[1;36m(APIServer pid=7)[0;0m INFO 08-20 03:11:19 loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 41.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.5%, Prefix cache hit rate: 0.0%\n",
			want{engine: "vllm", readings: 2, running: 1, waiting: 0, kv: 0.004, swapped: nan, preemptions: nan, seconds: 20}},
		{"docker compose, kubectl, journald and Ray prefixes",
			"vllm-1  | " + v1 + "\n2025-03-17T15:38:20.123456789Z " + v1b + "\n" +
				"Mar 17 15:38:30 gpu-node vllm[812]: INFO 03-17 15:38:30 [loggers.py:259] Engine 000: Avg prompt throughput: 23999.8 tokens/s, Avg generation throughput: 52.6 tokens/s, Running: 22 reqs, Waiting: 78 reqs, GPU KV cache usage: 42.5%, Prefix cache hit rate: 0.0%\n" +
				"(RayWorkerWrapper pid=4242, ip=10.0.0.7) INFO 03-17 15:38:40 [loggers.py:259] Engine 000: Avg prompt throughput: 23998.3 tokens/s, Avg generation throughput: 69.6 tokens/s, Running: 28 reqs, Waiting: 72 reqs, GPU KV cache usage: 54.2%, Prefix cache hit rate: 0.0%\n",
			want{engine: "vllm", readings: 4, running: 10, waiting: 90, kv: 0.193, swapped: nan, preemptions: nan, seconds: 40}},
		{"a tqdm bar glued in front, CRLF line ends",
			"Processed prompts:   0%|  | 34/10000 [00:29<3:36:54,  1.31s/it, est. speed input: 407.31 toks/s, output: 7561.83 toks/s]" + v0 + "\r\n" +
				"Processed prompts:   0%|    | 47/10000 [00:35<42:17,  3.92it/s, est. speed input: 473.45 toks/s, output: 8904.44 toks/s]" + v0b + "\r\n",
			want{engine: "vllm", readings: 2, running: 34, waiting: 9832, kv: 0.992, swapped: 100, preemptions: nan}},
		{"a progress bar redrawn with carriage returns before the line",
			"Processed prompts: 10%|#\rProcessed prompts: 20%|##\r" + v0 + "\n",
			want{engine: "vllm", readings: 1, running: 34, waiting: 9832, kv: 0.992, swapped: 100, preemptions: nan}},
		{"records glued without a newline",
			v1 + v1b + "\n",
			want{engine: "vllm", readings: 2, running: 10, waiting: 90, kv: 0.193, swapped: nan, preemptions: nan}},
		{"hard-wrapped at 80 columns, mid-word, with unrelated and blank lines between",
			wrap(v0, 80) + "\nINFO:     10.0.0.1:5000 - \"POST /v1/completions HTTP/1.1\" 200 OK\n\n" + wrap(v0b, 80) + "\n",
			want{engine: "vllm", readings: 2, joined: 2, running: 34, waiting: 9832, kv: 0.992, swapped: 100, preemptions: nan}},
		{"hard-wrapped at 61 columns with trailing spaces trimmed",
			trimWrap(v1, 61) + "\n" + trimWrap(v1b, 61) + "\n",
			want{engine: "vllm", readings: 2, joined: 2, running: 10, waiting: 90, kv: 0.193, swapped: nan, preemptions: nan}},
		{"two pieces of one log with a gap between",
			v1 + "\n" + v1b + "\n... (trimmed) ...\n" + strings.Replace(v1, "15:38:10", "15:58:10", 1) + "\n",
			want{engine: "vllm", readings: 3, running: 10, waiting: 90, kv: 0.193, swapped: nan, preemptions: nan}},
		{"SGLang v0.2.5: [gpu=0] tag, no timestamp, period after the head",
			"[gpu=0] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0, cache hit rate: 0.00%, #running-req: 0, #queue-req: 0\n[gpu=0] Decode batch. #running-req: 1, #token: 552, token usage: 0.00, gen throughput (token/s): 80.12, #queue-req: 0\n",
			want{engine: "sglang", readings: 2, running: 0, waiting: 0, kv: 0, swapped: nan, preemptions: nan}},
		{"SGLang v0.3: time of day only, TP tag",
			"[10:01:02 TP0] Prefill batch. #new-seq: 8, #new-token: 4096, #cached-token: 512, cache hit rate: 10.53%, #running-req: 24, #queue-req: 3\n[10:01:04 TP0] Decode batch. #running-req: 32, #token: 70123, token usage: 0.43, gen throughput (token/s): 2890.55, #queue-req: 12\n",
			want{engine: "sglang", readings: 2, running: 24, waiting: 3, kv: 0.43, swapped: nan, preemptions: nan, seconds: 4}},
		{"SGLang v0.4: dated, retraction (old wording), DP ranks",
			"[2024-12-05 10:01:02 DP0 TP0] Decode batch. #running-req: 64, #token: 70123, token usage: 0.97, gen throughput (token/s): 2890.55, #queue-req: 12\n" +
				"[2024-12-05 10:01:02 DP1 TP0] Decode batch. #running-req: 60, #token: 70000, token usage: 0.95, gen throughput (token/s): 2800.00, #queue-req: 10\n" +
				"[2024-12-05 10:01:03 DP0 TP0] Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: 0.3121 -> 0.5000\n",
			want{engine: "sglang", readings: 2, running: 64, waiting: 12, kv: 0.97, swapped: nan, preemptions: 2}},
		{"SGLang v0.5.5: commas, trailing comma, spec accept rate, KV pool full on two TP ranks",
			"[2025-11-20 12:00:00 TP0] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 1024, token usage: 0.35, #running-req: 40, #queue-req: 6, \n" +
				"[2025-11-20 12:00:01 TP0] Decode batch, #running-req: 42, #token: 150112, token usage: 0.36, accept len: 2.84, accept rate: 0.71, cuda graph: True, gen throughput (token/s): 3307.90, #queue-req: 6, \n" +
				"[2025-11-20 12:00:02 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.4213 -> 0.7000\n" +
				"[2025-11-20 12:00:02 TP1] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.4213 -> 0.7000\n",
			want{engine: "sglang", readings: 2, running: 40, waiting: 6, kv: 0.35, swapped: nan, preemptions: 3}},
		{"SGLang v0.5.4 and later: iteration in the head, no rank tag, full token usage",
			"[2025-10-23 09:00:00] Decode batch [1200], #running-req: 12, #token: 9000, token usage: 0.10, cuda graph: True, gen throughput (token/s): 900.00, #queue-req: 0\n" +
				"[2026-08-23 09:09:50 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0, full token usage: 0.01, swa token usage: 0.01, #running-req: 0, #queue-req: 1, #pending-token: 46401, cuda graph: False, input throughput (token/s): 8072.80\n",
			want{engine: "sglang", readings: 2, running: 12, waiting: 0, kv: 0.10, swapped: nan, preemptions: nan}},
		{"SGLang mixed chunk prefill",
			"[2024-10-20 10:01:02 TP0] Prefill batch(mixed #running-req: 5). #new-seq: 1, #new-token: 1024, #cached-token: 0, cache hit rate: 0.00%, token usage: 0.20, #queue-req: 2\n",
			want{engine: "sglang", readings: 1, running: 5, waiting: 2, kv: 0.20, swapped: nan, preemptions: nan}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Read(strings.NewReader(c.log), "", 2025, "f")
			if err != nil {
				t.Fatal(err)
			}
			w := c.want
			if r.Engine != w.engine || r.StatsLines != w.readings || r.Joined != w.joined || r.Skipped != w.skipped {
				t.Fatalf("engine %s readings %d joined %d skipped %d, want %s %d %d %d; notes %q",
					r.Engine, r.StatsLines, r.Joined, r.Skipped, w.engine, w.readings, w.joined, w.skipped, r.Window.Notes)
			}
			first := func(key string) float64 {
				n := name(r.Engine, key)
				gs := r.Window.Gauges[n]
				if len(gs) == 0 {
					return nan
				}
				for _, x := range gs[0].Points {
					if !math.IsNaN(x) {
						return x
					}
				}
				return nan
			}
			for _, g := range []struct {
				key       string
				got, want float64
			}{{"running", first("running"), w.running}, {"waiting", first("waiting"), w.waiting},
				{"kv", first("kv_usage"), w.kv}, {"swapped", first("swapped"), w.swapped}} {
				if !same(g.got, g.want) {
					t.Errorf("%s %v, want %v", g.key, g.got, g.want)
				}
			}
			pre := nan
			if cs := r.Window.Counters[name(r.Engine, "preemptions")]; len(cs) > 0 {
				pre = 0
				for _, c := range cs {
					pre += c.Increase
				}
			}
			if !same(pre, w.preemptions) {
				t.Errorf("preemptions %v, want %v", pre, w.preemptions)
			}
			if w.seconds > 0 && r.Window.End.Sub(r.Window.Start).Seconds() != w.seconds {
				t.Errorf("window %v, want %vs", r.Window.End.Sub(r.Window.Start), w.seconds)
			}
		})
	}
}

func same(a, b float64) bool {
	return math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-9
}

// wrap cuts s every n bytes, as a terminal wraps a long line.
func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

// trimWrap wraps as wrap does and trims each piece's trailing spaces, as a
// copy from a terminal does.
func trimWrap(s string, n int) string {
	lines := strings.Split(wrap(s, n), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

// Lines that look like stats lines but cannot be read are counted, with
// why and one of them quoted, never "no stats lines".
func TestUnreadableLinesAreNamed(t *testing.T) {
	cut := "INFO 06-16 21:24:15 metrics.py:341] Avg prompt throughput: 2706.1 tokens/s, Avg generation throughput: 13395.4 tokens/s, Running: 34 reqs, Swa"
	_, err := Read(strings.NewReader(cut+"\n"+cut+"\nsomething else\n"), "", 2025, "f")
	if err == nil || !strings.Contains(err.Error(), "2 lines look like a stats line but could not be read (2 cut short)") ||
		!strings.Contains(err.Error(), "Running: 34 reqs") {
		t.Fatalf("err %v", err)
	}
	_, err = Read(strings.NewReader("hello\nworld\n"), "", 2025, "f")
	if err == nil || !strings.Contains(err.Error(), "no vLLM stats lines") {
		t.Fatalf("err %v", err)
	}
}

// Numbers no server could hold are not read: a KV cache 250% full, a
// throughput of 1e300 tokens/s.
func TestImpossibleValuesAreRefused(t *testing.T) {
	for _, line := range []string{
		"INFO 02-20 10:00:05 [loggers.py:257] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 10.0 tokens/s, Running: 8 reqs, Waiting: 2 reqs, GPU KV cache usage: 250.0%, Prefix cache hit rate: 0.0%",
		"INFO 02-20 10:00:05 [loggers.py:257] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 1e300 tokens/s, Running: 8 reqs, Waiting: 2 reqs, GPU KV cache usage: 25.0%, Prefix cache hit rate: 0.0%",
		"[2025-11-20 12:00:01 TP0] Decode batch, #running-req: 42, #token: 150112, token usage: 3.60, cuda graph: True, gen throughput (token/s): 3307.90, #queue-req: 6",
	} {
		_, err := Read(strings.NewReader(line+"\n"), "", 2025, "f")
		if err == nil || !strings.Contains(err.Error(), "with an impossible value") {
			t.Errorf("%q: %v", line, err)
		}
	}
}
