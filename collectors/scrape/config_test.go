package scrape

import (
	"strings"
	"testing"
)

// Readings of one server whose LoRA adapters in use changed are one
// server: only the cache configuration's info series tell servers apart.
func TestLoRAStateIsNotConfiguration(t *testing.T) {
	page := func(running, blocks string) *Snapshot {
		t.Helper()
		s, err := Parse([]byte(`# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="`+blocks+`"} 1
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="2",running_lora_adapters="`+running+`",waiting_lora_adapters=""} 1.7e+09
`), "text/plain")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := SameConfig([]*Snapshot{page("a", "1000"), page("a,b", "1000")}, nil); err != nil {
		t.Errorf("the adapters in use changed: %v", err)
	}
	if err := SameConfig([]*Snapshot{page("a", "1000"), page("a", "2000")}, nil); err == nil || !strings.Contains(err.Error(), "configured differently") {
		t.Errorf("the KV cache changed: %v, want servers configured differently", err)
	}
}
