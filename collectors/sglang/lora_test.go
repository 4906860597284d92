package sglang

import (
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// SGLang does not say which adapter a queued request wants: at the
// readings where every adapter slot is in use, its queue waits for one.
func TestLoRAPool(t *testing.T) {
	w := window.New()
	w.Start, w.End, w.Points = time.Unix(0, 0), time.Unix(300, 0), 3
	l := window.Labels{"model_name": "m", "engine_type": "unified", "tp_rank": "0"}
	g := func(name string, pts ...float64) {
		w.Gauges[name] = []window.Gauge{{Labels: l, Points: pts}}
	}
	g("sglang:num_running_reqs", 30, 30, 30)
	g("sglang:num_queue_reqs", 6, 4, 2)
	g("sglang:lora_pool_slots_total", 2, 2, 2)
	g("sglang:lora_pool_slots_used", 2, 1, 2)
	v := engine.Build(w, engine.Options{})[0].Values
	if v.Cond.LoRA != 1 || v.Cond.MaxLoRAs != 2 || v.Service.LoRAHeld.Mean != 8.0/3 || v.Service.LoRAHeld.Max != 6 {
		t.Fatalf("lora %v, slots %v, held %+v: want 1, 2, and the queue at the two full readings (6, 0, 2)",
			v.Cond.LoRA, v.Cond.MaxLoRAs, v.Service.LoRAHeld)
	}
}
