package evidence

import (
	"encoding/json"
	"math"
	"testing"
)

// A bound that is not finite (a -Inf bucket, the +Inf one) is no
// resolution: JSON could not carry it.
func TestResolutionIsFinite(t *testing.T) {
	e := New(Target{})
	e.SetResolution("stage.ttft.p50", math.Inf(-1), 0.5)
	e.SetResolution("stage.ttft.max", 10, math.Inf(1))
	e.SetResolution("stage.ttft.p90", math.NaN(), 1)
	e.SetResolution("stage.ttft.p99", 5, 7.5)
	if len(e.Resolution) != 1 || e.Resolution["stage.ttft.p99"] != [2]float64{5, 7.5} {
		t.Fatalf("resolution %v", e.Resolution)
	}
	if _, err := json.Marshal(e.Resolution); err != nil {
		t.Fatal(err)
	}
}
