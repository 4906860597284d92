package window

import (
	"math"
	"strings"
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
	// Many points merge to their lowest and highest: a one-point spike and
	// a one-point dip both survive.
	pts := make([]float64, 10*MaxTimelinePoints)
	for i := range pts {
		pts[i] = 32
	}
	pts[1234], pts[2000] = 99, 0
	got = w.Timeline(pts)
	if len(got) > MaxTimelinePoints {
		t.Fatalf("%d points, want at most %d", len(got), MaxTimelinePoints)
	}
	peak, dip := 0.0, math.Inf(1)
	for i, p := range got {
		peak, dip = math.Max(peak, p[1]), math.Min(dip, p[1])
		if i > 0 && p[0] <= got[i-1][0] {
			t.Fatalf("points out of time order at %d: %v", i, got[i-1:i+1])
		}
	}
	if peak != 99 || dip != 0 {
		t.Errorf("spike or dip lost: max %v, min %v", peak, dip)
	}
	if w.Timeline([]float64{1}) != nil {
		t.Error("one point makes no timeline")
	}
	w.Cumulative = true
	if w.Timeline([]float64{1, 2}) != nil {
		t.Error("a cumulative window has no time axis")
	}
}

// Points taken at irregular times are drawn at those times; a pause much
// longer than the usual spacing stays a pause and is named in a note.
func TestTimelineRealTimes(t *testing.T) {
	w := New()
	w.Start = time.Unix(1000, 0)
	w.End = w.Start.Add(900 * time.Second)
	var pts []float64
	for _, s := range []int{0, 30, 60, 90, 120, 600, 630, 660, 900} {
		w.Times = append(w.Times, w.Start.Add(time.Duration(s)*time.Second))
		pts = append(pts, float64(s))
	}
	w.Points = len(w.Times)
	got := w.Timeline(pts)
	if len(got) != len(pts) {
		t.Fatalf("got %v", got)
	}
	for i, p := range got {
		if p[0] != pts[i] {
			t.Fatalf("point %d drawn at %v s, taken at %v s", i, p[0], pts[i])
		}
	}
	// A step value (index i covering point i−1 to i) sits at point i.
	steps := make([]float64, len(pts))
	steps[0], steps[5] = math.NaN(), 7
	if got := w.Timeline(steps); got[4] != [2]float64{600, 7} {
		t.Errorf("step across the pause drawn at %v, want at its end, 600 s", got[4])
	}
	gaps := w.Gaps()
	if len(gaps) != 2 || gaps[0] != (Gap{120, 600}) || gaps[1] != (Gap{660, 900}) {
		t.Fatalf("gaps %v", gaps)
	}
	w.NoteGaps()
	if len(w.Notes) != 1 || !strings.Contains(w.Notes[0], "no samples from 02:00 to 10:00 (8m00s), from 11:00 to 15:00 (4m00s) into the window") ||
		!strings.Contains(w.Notes[0], "charts break there") {
		t.Errorf("notes %q", w.Notes)
	}
	// Times for other points than given cannot place them.
	if got := w.Timeline(pts[:3]); got != nil {
		t.Errorf("three points on nine times drawn as %v", got)
	}
	// Past MaxTimelinePoints the groups keep their real times.
	w.Times, pts = nil, nil
	for i := range 3 * MaxTimelinePoints {
		s := i
		if i >= MaxTimelinePoints {
			s += 10000 // a pause after the first third
		}
		w.Times = append(w.Times, w.Start.Add(time.Duration(s)*time.Second))
		pts = append(pts, float64(s))
	}
	for _, p := range w.Timeline(pts) {
		if p[0] != p[1] {
			t.Fatalf("point of %v drawn at %v s", p[1], p[0])
		}
	}
}

// Regular times, however many, make no note; neither do absent ones.
func TestNoGapNoNote(t *testing.T) {
	w := New()
	w.Start = time.Unix(0, 0)
	w.End = w.Start.Add(100 * time.Second)
	w.NoteGaps()
	for i := range 11 {
		w.Times = append(w.Times, w.Start.Add(time.Duration(10*i)*time.Second+time.Duration(i%2)*time.Second))
	}
	w.NoteGaps()
	if len(w.Notes) != 0 {
		t.Errorf("notes %q", w.Notes)
	}
}

// Restricting and partitioning a window keep its times.
func TestSplitKeepsTimes(t *testing.T) {
	w := New()
	w.Start = time.Unix(0, 0)
	w.End = w.Start.Add(100 * time.Second)
	w.Times = []time.Time{w.Start, w.Start.Add(90 * time.Second), w.End}
	w.Points = 3
	w.Gauges["g"] = []Gauge{{Labels: Labels{"model_name": "a"}, Points: []float64{1, 2, 3}}}
	for _, p := range []*Window{w.Restrict(Labels{"model_name": "a"}), w.Partition("model_name")["a"]} {
		if got := p.Timeline(p.Gauges["g"][0].Points); len(got) != 3 || got[1][0] != 90 {
			t.Errorf("timeline of a part %v", got)
		}
	}
}
