package window

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/units"
)

// GapFactor is how many times the usual spacing a pause between two points
// must exceed to count as a gap: the chart breaks its line there too.
const GapFactor = 3

// x returns the seconds from the window's start of each of n points: their
// real times when known, else even spacing across the window. Nil when
// neither places them (no known length, or times that do not fit).
func (w *Window) x(n int) []float64 {
	if n < 2 || w.Cumulative {
		return nil
	}
	xs := make([]float64, n)
	if w.Times != nil {
		if len(w.Times) != n {
			return nil // times for other points: drawing them would misplace
		}
		origin := w.Start
		if origin.IsZero() || w.Times[0].Before(origin) {
			origin = w.Times[0]
		}
		for i, t := range w.Times {
			xs[i] = t.Sub(origin).Seconds()
		}
		return xs
	}
	secs := w.Seconds()
	if math.IsNaN(secs) || secs <= 0 {
		return nil
	}
	step := secs / float64(n-1)
	for i := range xs {
		xs[i] = float64(i) * step
	}
	return xs
}

// Gap is a pause between two consecutive points much longer than the usual
// spacing: nothing was seen in it.
type Gap struct {
	// From, To are seconds from the window's start of the points around it.
	From, To float64
}

// Gaps returns the pauses between consecutive points longer than GapFactor
// times the median spacing. None without known times.
func (w *Window) Gaps() []Gap {
	xs := w.x(len(w.Times))
	if len(xs) < 3 || w.Times == nil {
		return nil
	}
	d := make([]float64, len(xs)-1)
	for i := 1; i < len(xs); i++ {
		d[i-1] = xs[i] - xs[i-1]
	}
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	if med <= 0 {
		return nil
	}
	var out []Gap
	for i, dx := range d {
		if dx > GapFactor*med {
			out = append(out, Gap{From: xs[i], To: xs[i+1]})
		}
	}
	return out
}

// NoteGaps adds one note naming the gaps in the window's sampling, so a
// report says where its charts break and what its gauge summaries miss.
func (w *Window) NoteGaps() {
	gaps := w.Gaps()
	if len(gaps) == 0 {
		return
	}
	const shown = 3
	var parts []string
	for i, g := range gaps {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(gaps)-shown))
			break
		}
		parts = append(parts, fmt.Sprintf("from %s to %s (%s)", offset(g.From), offset(g.To), units.Duration(g.To-g.From)))
	}
	w.Notes = append(w.Notes, fmt.Sprintf("no samples %s into the window: the sampling paused, so charts break there and gauge summaries cover only the times sampled",
		strings.Join(parts, ", ")))
}

// offset writes seconds from the window's start as mm:ss (h:mm:ss past an hour).
func offset(s float64) string {
	d := int(math.Round(s))
	if d >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", d/3600, d/60%60, d%60)
	}
	return fmt.Sprintf("%02d:%02d", d/60, d%60)
}

// Increasing reports whether times are strictly increasing and none is zero:
// times a window's points can be placed at.
func Increasing(ts []time.Time) bool {
	for i, t := range ts {
		if t.IsZero() || i > 0 && !t.After(ts[i-1]) {
			return false
		}
	}
	return true
}
