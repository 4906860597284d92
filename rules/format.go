package rules

import (
	"math"
	"text/template"

	"github.com/llmdoctor/llmdoctor/internal/units"
)

// templateFuncs format the numbers a message cites, with the same units the
// reports print.
var templateFuncs = template.FuncMap{
	"pct":    func(a, b any) string { return units.Percent(num(a) / num(b)) },
	"ratio":  func(a any) string { return units.Percent(num(a)) },
	"dur":    func(a any) string { return units.Duration(num(a)) },
	"num":    func(a any) string { return units.Number(num(a)) },
	"times":  func(a, b any) string { return units.Number(num(a)/num(b)) + "×" },
	"sub":    func(a, b any) float64 { return num(a) - num(b) },
	"tokens": func(a any) string { return units.Tokens(num(a)) },
	"bps":    func(a any) string { return units.BytesPerSecond(num(a)) },
	// atleast is false for a missing value: a message can hold back an
	// interpretation its number does not support.
	"atleast": func(a, b any) bool { x := num(a); return !math.IsNaN(x) && x >= num(b) },
}

// num reads a template argument as a number: NaN when it is absent or not one.
func num(a any) float64 {
	switch v := a.(type) {
	case nil:
		return math.NaN()
	case float64:
		return v
	case int:
		return float64(v)
	}
	return math.NaN()
}
