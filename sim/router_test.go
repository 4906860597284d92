package sim

import (
	"testing"
	"time"
)

// Behind a router, round robin gives every replica its turn, and prefix
// affinity sends each shared prompt to one replica: with skewed prompts the
// first replica takes the most. Every request is served by one replica, and
// the truth sees the queue wait where it fell.
func TestRouterPolicies(t *testing.T) {
	for _, policy := range []string{"round-robin", "prefix", "least-waiting"} {
		sc, err := Load("router-imbalance")
		if err != nil {
			t.Fatal(err)
		}
		sc.Router.Policy = policy
		sc.Warmup, sc.Duration = 30*time.Second, 2*time.Minute
		e, err := New(sc, false)
		if err != nil {
			t.Fatal(err)
		}
		e.AdvanceTo(sc.Warmup.Seconds())
		e.MarkTruth()
		e.AdvanceTo((sc.Warmup + sc.Duration).Seconds())
		rs := e.Replicas()
		if len(rs) != 4 || len(e.Endpoints()) != 5 {
			t.Fatalf("%s: %d replicas, %d endpoints", policy, len(rs), len(e.Endpoints()))
		}
		picked := e.router.picked
		var total, most float64
		for _, n := range picked {
			total, most = total+n, max(most, n)
		}
		if int(total) != e.nextID || total == 0 {
			t.Errorf("%s: routed %v, drawn %d", policy, total, e.nextID)
		}
		share := most / total
		switch policy {
		case "round-robin":
			if share > 0.26 {
				t.Errorf("round robin gave one replica %.2f of the requests", share)
			}
		case "prefix":
			if share < 0.4 {
				t.Errorf("prefix affinity with skewed prompts gave the busiest replica only %.2f", share)
			}
		}
		if g := e.Truth(); g.Replicas != 4 || policy == "prefix" && g.QueueTopShare < 0.6 {
			t.Errorf("%s: truth replicas %d, top queue share %.2f", policy, g.Replicas, g.QueueTopShare)
		}
	}
}
