package chart

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// floats reads b as float64s, so the fuzzer can reach NaN, ±Inf,
// subnormals and the extremes directly.
func floats(b []byte) []float64 {
	var out []float64
	for len(b) >= 8 {
		out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(b)))
		b = b[8:]
	}
	return out
}

func bits(xs ...float64) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

func seeds(f *testing.F) {
	f.Add(bits(0, 1, 30, 2, 60, math.NaN(), 90, 3), uint8(0), uint8(4))
	f.Add(bits(0, 1e12, 1, -1e12, 2, 1e-9), uint8(2), uint8(1))
	f.Add(bits(5, 5, 5, 5), uint8(1), uint8(3))
	f.Add(bits(math.Inf(1), math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64), uint8(4), uint8(0))
	f.Add([]byte{}, uint8(0), uint8(0))
}

// check asserts what every chart promises, whatever the numbers.
func check(t *testing.T, c chart) {
	s := c.SVG()
	if s != "" {
		checkSVG(t, s)
	}
	if a := c.Alt(); strings.Contains(a, "NaN") || strings.Contains(a, "Inf") {
		t.Errorf("Alt() = %q", a)
	}
}

func FuzzLine(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte, xu, yu uint8) {
		xs := floats(b)
		// Two series from the same numbers: one as given, one shifted, so
		// series of different lengths are covered too.
		var a, c [][2]float64
		for i := 0; i+1 < len(xs); i += 2 {
			a = append(a, [2]float64{xs[i], xs[i+1]})
		}
		for i := 1; i+1 < len(xs); i += 2 {
			c = append(c, [2]float64{xs[i], xs[i+1]})
		}
		// Reference lines and marks at the same numbers, so that they reach
		// the extremes and non-finite values too.
		var refs []Ref
		var marks []Mark
		for i, x := range xs {
			if i%3 == 0 {
				refs = append(refs, Ref{Y: x, Label: "SLO"})
			} else {
				marks = append(marks, Mark{X: x, Label: "knee"})
			}
		}
		check(t, Line{ID: "f", Title: "fuzz", X: Axis{Unit: Unit(xu % 5)}, Y: Axis{Label: "y", Unit: Unit(yu % 5)},
			Series: []Series{{Name: "a", Points: a}, {Name: "b", Points: c}}, Refs: refs, Marks: marks})
		bars := Bars{ID: "b", Unit: Unit(yu % 5)}
		st := Stacked{ID: "s", Unit: Unit(yu % 5)}
		for i, x := range xs {
			bars.Bars = append(bars.Bars, Bar{Label: "r", Value: x, Highlight: i == 0})
			st.Segments = append(st.Segments, Segment{Name: "s", Value: x})
		}
		if len(xs) > 0 {
			st.Total = xs[0]
		}
		check(t, bars)
		check(t, st)
	})
}

func FuzzScatter(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte, xu, yu uint8) {
		xs := floats(b)
		c := Scatter{ID: "f", X: Axis{Unit: Unit(xu % 5)}, Y: Axis{Unit: Unit(yu % 5)}}
		if len(xs) >= 2 {
			c.Fit = &Fit{Slope: xs[0], Intercept: xs[1]}
		}
		for i := 0; i+1 < len(xs); i += 2 {
			c.Points = append(c.Points, [2]float64{xs[i], xs[i+1]})
		}
		check(t, c)
	})
}
