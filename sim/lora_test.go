package sim

import "testing"

// Requests for an adapter with no slot are passed over and wait: with two
// slots for eight adapters the queue is the adapters', and the ground
// truth says so; with a slot for each adapter nothing waits for one.
func TestLoRASlots(t *testing.T) {
	sc, err := Load("lora-slots")
	if err != nil {
		t.Fatal(err)
	}
	g, err := WindowTruth(sc, 30)
	if err != nil {
		t.Fatal(err)
	}
	if l := g.Label(); l.Cause != "lora" || g.WaitLoRA < 0.5*g.Queue {
		t.Errorf("two slots: ground truth %s (%s), %.2fs of %.2fs queue held by slots", l.Cause, l.Why, g.WaitLoRA, g.Queue)
	}
	wide := *sc
	wide.Engine.MaxLoRAs = 8
	g, err = WindowTruth(&wide, 30)
	if err != nil {
		t.Fatal(err)
	}
	if l := g.Label(); l.Cause == "lora" || g.WaitLoRA != 0 {
		t.Errorf("a slot for each adapter: ground truth %s, %.2fs held by slots", l.Cause, g.WaitLoRA)
	}
}
