package sim

import (
	"math"
	"testing"
	"time"
)

// A split deployment: every request is prefilled on the prefill instance
// (one token), handed over, pulled and decoded on the decode instance; the
// pull takes the link's time for the prompt's KV, and the ground truth
// counts it apart from the queue.
func TestSplitDeployment(t *testing.T) {
	sc, err := Load("kv-transfer")
	if err != nil {
		t.Fatal(err)
	}
	sc.Warmup, sc.Duration = time.Minute, 5*time.Minute
	e, err := New(sc, true)
	if err != nil {
		t.Fatal(err)
	}
	e.AdvanceTo(sc.Warmup.Seconds())
	e.MarkTruth()
	e.AdvanceTo((sc.Warmup + sc.Duration).Seconds())
	p := e.prefill
	if p == nil || len(e.Endpoints()) != 2 {
		t.Fatal("no prefill instance")
	}
	if p.m.genTokens != float64(p.m.finishedCount) {
		t.Errorf("the prefill instance gave %v tokens for %d requests, want one each", p.m.genTokens, p.m.finishedCount)
	}
	if e.m.nixlTime.n == 0 || e.m.nixlTime.n < uint64(e.m.finishedCount) {
		t.Errorf("%d pulls for %d finished on the decode instance", e.m.nixlTime.n, e.m.finishedCount)
	}
	d := sc.Engine.Disaggregated
	for _, r := range e.Records {
		if r.Output < 2 {
			t.Fatalf("a decoded request gave %d tokens", r.Output)
		}
	}
	// Mean pull = latency + mean bytes ÷ bandwidth.
	mean := e.m.nixlTime.sum / float64(e.m.nixlTime.n)
	bytes := e.m.nixlBytes.sum / float64(e.m.nixlBytes.n)
	if want := d.TransferLatency.Seconds() + bytes/(d.TransferGBps*1e9); math.Abs(mean-want) > 1e-9 {
		t.Errorf("mean pull %v s, want %v", mean, want)
	}
	g := e.Truth()
	// The client waits for the prefill side, the pull and the decode
	// side's first step.
	if !(g.Transfer > 0.2) || !(g.Upstream > 0) || g.TTFT < g.Upstream+g.Transfer+g.Queue {
		t.Errorf("truth %+v: TTFT does not hold the prefill side, the pull and the queue", g)
	}
	if l := g.Label(); l.Cause != "kv-transfer" {
		t.Errorf("label %+v", l)
	}
}
