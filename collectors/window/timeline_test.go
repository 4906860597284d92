package window

import (
	"math"
	"testing"
	"time"
)

func TestTimeline(t *testing.T) {
	w := New()
	w.Start = time.Unix(0, 0)
	w.End = w.Start.Add(100 * time.Second)
	got := w.Timeline([]float64{1, math.NaN(), 3, math.Inf(1), 5})
	want := [][2]float64{{0, 1}, {50, 3}, {100, 5}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	// Many points merge to their maximum: a one-point spike survives.
	pts := make([]float64, 10*MaxTimelinePoints)
	pts[1234] = 99
	got = w.Timeline(pts)
	if len(got) > MaxTimelinePoints {
		t.Fatalf("%d points, want at most %d", len(got), MaxTimelinePoints)
	}
	peak := 0.0
	for _, p := range got {
		peak = math.Max(peak, p[1])
	}
	if peak != 99 {
		t.Errorf("spike lost: peak %v", peak)
	}
	if w.Timeline([]float64{1}) != nil {
		t.Error("one point makes no timeline")
	}
	w.Cumulative = true
	if w.Timeline([]float64{1, 2}) != nil {
		t.Error("a cumulative window has no time axis")
	}
}
