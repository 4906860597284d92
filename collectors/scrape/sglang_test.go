package scrape

import (
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	// SGLang's families are registered for every test here, the fuzz test
	// included.
	_ "github.com/llmdoctor/llmdoctor/collectors/sglang"
)

// sglangText is a small SGLang v0.5.18 exposition in classic text format,
// the way /metrics serves it on the HTTP port. Values are made up.
const sglangText = `# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",tp_rank="0"} 21.0
sglang:num_running_reqs{engine_type="unified",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="0",tp_rank="0"} 21.0
# HELP sglang:num_retracted_reqs The number of retracted requests.
# TYPE sglang:num_retracted_reqs gauge
sglang:num_retracted_reqs{engine_type="unified",model_name="qwen3-8b",moe_ep_rank="0",pid="40711",pp_rank="0",priority="",tp_rank="0"} 0.0
# HELP sglang:routing_key_running_req_count Running requests per routing key.
# TYPE sglang:routing_key_running_req_count gauge
sglang:routing_key_running_req_count{engine_type="unified",gt="0",le="1",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",tp_rank="0"} 3.0
# HELP sglang:num_requests_total Number of requests processed.
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{engine_type="unified",is_streaming="true",model_name="qwen3-8b"} 812.0
sglang:num_requests_total{engine_type="unified",is_streaming="false",model_name="qwen3-8b"} 37.0
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_sum{engine_type="unified",is_streaming="true",model_name="qwen3-8b"} 203.5
sglang:time_to_first_token_seconds_bucket{engine_type="unified",is_streaming="true",le="0.1",model_name="qwen3-8b"} 95.0
sglang:time_to_first_token_seconds_bucket{engine_type="unified",is_streaming="true",le="0.2",model_name="qwen3-8b"} 610.0
sglang:time_to_first_token_seconds_bucket{engine_type="unified",is_streaming="true",le="0.4",model_name="qwen3-8b"} 780.0
sglang:time_to_first_token_seconds_bucket{engine_type="unified",is_streaming="true",le="+Inf",model_name="qwen3-8b"} 812.0
sglang:time_to_first_token_seconds_count{engine_type="unified",is_streaming="true",model_name="qwen3-8b"} 812.0
# HELP sglang:per_stage_req_latency_seconds The latency of each stage of requests.
# TYPE sglang:per_stage_req_latency_seconds histogram
sglang:per_stage_req_latency_seconds_sum{engine_type="unified",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",stage="prefill_forward",tp_rank="0"} 70.25
sglang:per_stage_req_latency_seconds_bucket{engine_type="unified",le="0.001",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",stage="prefill_forward",tp_rank="0"} 0.0
sglang:per_stage_req_latency_seconds_bucket{engine_type="unified",le="0.11019960576",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",stage="prefill_forward",tp_rank="0"} 801.0
sglang:per_stage_req_latency_seconds_bucket{engine_type="unified",le="+Inf",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",stage="prefill_forward",tp_rank="0"} 849.0
sglang:per_stage_req_latency_seconds_count{engine_type="unified",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",stage="prefill_forward",tp_rank="0"} 849.0
`

// sglangOpenMetrics is the same reading as the gRPC sidecar serves it:
// always OpenMetrics, counters named without _total in TYPE lines.
const sglangOpenMetrics = `# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",tp_rank="0"} 21.0
sglang:num_running_reqs{engine_type="unified",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="0",tp_rank="0"} 21.0
# HELP sglang:num_requests Number of requests processed.
# TYPE sglang:num_requests counter
sglang:num_requests_total{engine_type="unified",is_streaming="true",model_name="qwen3-8b"} 812.0
sglang:num_requests_total{engine_type="unified",is_streaming="false",model_name="qwen3-8b"} 37.0
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{engine_type="unified",is_streaming="true",le="0.1",model_name="qwen3-8b"} 95.0
sglang:time_to_first_token_seconds_bucket{engine_type="unified",is_streaming="true",le="0.2",model_name="qwen3-8b"} 610.0
sglang:time_to_first_token_seconds_bucket{engine_type="unified",is_streaming="true",le="0.4",model_name="qwen3-8b"} 780.0
sglang:time_to_first_token_seconds_bucket{engine_type="unified",is_streaming="true",le="+Inf",model_name="qwen3-8b"} 812.0
sglang:time_to_first_token_seconds_count{engine_type="unified",is_streaming="true",model_name="qwen3-8b"} 812.0
sglang:time_to_first_token_seconds_sum{engine_type="unified",is_streaming="true",model_name="qwen3-8b"} 203.5
# HELP sglang:per_stage_req_latency_seconds The latency of each stage of requests.
# TYPE sglang:per_stage_req_latency_seconds histogram
sglang:per_stage_req_latency_seconds_bucket{engine_type="unified",le="0.001",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",stage="prefill_forward",tp_rank="0"} 0.0
sglang:per_stage_req_latency_seconds_bucket{engine_type="unified",le="0.11019960576",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",stage="prefill_forward",tp_rank="0"} 801.0
sglang:per_stage_req_latency_seconds_bucket{engine_type="unified",le="+Inf",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",stage="prefill_forward",tp_rank="0"} 849.0
sglang:per_stage_req_latency_seconds_count{engine_type="unified",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",stage="prefill_forward",tp_rank="0"} 849.0
sglang:per_stage_req_latency_seconds_sum{engine_type="unified",model_name="qwen3-8b",moe_ep_rank="0",pp_rank="0",priority="",stage="prefill_forward",tp_rank="0"} 70.25
# EOF
`

// Parse keeps SGLang's families with their kinds and leaves its others out:
// a gauge with an le label (routing_key_*) is no histogram, and the
// per-process retraction gauge is not read.
func TestParseSGLang(t *testing.T) {
	s := mustParse(t, sglangText)
	if len(s.Notes) > 0 || len(s.Withheld) > 0 {
		t.Fatalf("notes %q, withheld %v", s.Notes, s.Withheld)
	}
	if n := len(s.Gauges["sglang:num_running_reqs"]); n != 2 {
		t.Errorf("running: %d series, want the total and one priority", n)
	}
	if n := len(s.Counters["sglang:num_requests_total"]); n != 2 {
		t.Errorf("requests: %d series", n)
	}
	for _, n := range []string{"sglang:num_retracted_reqs", "sglang:routing_key_running_req_count"} {
		if _, ok := s.Gauges[n]; ok {
			t.Errorf("%s read though no engine registers it", n)
		}
		if _, ok := s.Histograms[n]; ok {
			t.Errorf("%s read as a histogram", n)
		}
	}
	h := s.Histograms["sglang:per_stage_req_latency_seconds"]
	if len(h) != 1 {
		t.Fatalf("stage histogram: %d series", len(h))
	}
	for _, x := range h {
		if x.count != 849 || x.sum != 70.25 || x.labels["stage"] != "prefill_forward" {
			t.Errorf("stage histogram %+v", x)
		}
	}

	om := mustParse(t, sglangOpenMetrics)
	for name, series := range s.Counters {
		for key, c := range series {
			if got, ok := om.Counters[name][key]; !ok || got.value != c.value {
				t.Errorf("OpenMetrics counter %s{%s}: %v, text %v", name, key, got.value, c.value)
			}
		}
	}
	for name, series := range s.Histograms {
		for key, x := range series {
			y := om.Histograms[name][key]
			if y.count != x.count || y.sum != x.sum || len(y.buckets) != len(x.buckets) {
				t.Errorf("OpenMetrics histogram %s{%s}: %+v, text %+v", name, key, y, x)
			}
		}
	}
	if len(om.Gauges["sglang:num_running_reqs"]) != 2 {
		t.Errorf("OpenMetrics gauges %v", om.Gauges)
	}
}

// Through the model gateway every ':' is '_' and samples carry worker_addr;
// the families are SGLang's all the same, and TTFT keeps per-step increases.
func TestParseSGLangGateway(t *testing.T) {
	gw := strings.ReplaceAll(sglangText, ":", "_")
	gw = strings.ReplaceAll(gw, `model_name="qwen3-8b"`, `model_name="qwen3-8b",worker_addr="http://10.1.2.3:30000"`)
	s := mustParse(t, gw)
	if len(s.Notes) > 0 || len(s.Withheld) > 0 {
		t.Fatalf("notes %q, withheld %v", s.Notes, s.Withheld)
	}
	if len(s.Gauges["sglang_num_running_reqs"]) != 2 || len(s.Counters["sglang_num_requests_total"]) != 2 ||
		len(s.Histograms["sglang_time_to_first_token_seconds"]) != 1 {
		t.Fatalf("gateway families not read: %v %v %v", s.Gauges, s.Counters, s.Histograms)
	}
	if !engine.StepFamily("sglang_time_to_first_token_seconds") {
		t.Fatal("gateway TTFT is not a step family")
	}
	snaps := []*Snapshot{s, s, s}
	for i, x := range snaps {
		c := *x
		c.Time = time.Unix(int64(60*i), 0)
		snaps[i] = &c
	}
	w := Window(snaps, "", "gw")
	if h := w.Histograms["sglang_time_to_first_token_seconds"]; len(h) != 1 || len(h[0].Steps) != 3 {
		t.Fatalf("TTFT steps not kept through the gateway: %+v", h)
	}
	for _, x := range w.Histograms["sglang_time_to_first_token_seconds"] {
		if x.Labels["worker_addr"] != "http://10.1.2.3:30000" || x.Resets != 0 {
			t.Errorf("labels %v resets %d", x.Labels, x.Resets)
		}
	}
}

// Histogram samples without a TYPE line (a paste, grep output) are read for
// SGLang's families too.
func TestUntypedSGLangHistogram(t *testing.T) {
	var lines []string
	for _, l := range strings.Split(sglangText, "\n") {
		if strings.HasPrefix(l, "sglang:time_to_first_token_seconds") {
			lines = append(lines, l)
		}
	}
	s := mustParse(t, strings.Join(lines, "\n")+"\n")
	h := s.Histograms["sglang:time_to_first_token_seconds"]
	if len(h) != 1 {
		t.Fatalf("untyped TTFT not read: %v (notes %q)", s.Histograms, s.Notes)
	}
	for _, x := range h {
		if x.count != 812 || x.sum != 203.5 || len(x.buckets) != 4 {
			t.Errorf("untyped TTFT %+v", x)
		}
	}
}
