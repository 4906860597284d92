package rules

import (
	"math"
	"text/template"

	"github.com/llmdoctor/llmdoctor/internal/units"
)

// Messages format the numbers they cite with the same units the reports
// print. Templates and compiled messages (message.go) share these funcs.
var (
	oneNumber = map[string]func(float64) string{
		"ratio":  units.Percent,
		"dur":    units.Duration,
		"num":    units.Number,
		"tokens": units.Tokens,
		"bps":    units.BytesPerSecond,
	}
	twoNumbers = map[string]func(a, b float64) string{
		"pct":   func(a, b float64) string { return units.Percent(a / b) },
		"times": func(a, b float64) string { return units.Number(a/b) + "×" },
	}
)

func sub(a, b float64) float64 { return a - b }

// atleast is false for a missing value: a message can hold back an
// interpretation its number does not support.
func atleast(a, b float64) bool { return !math.IsNaN(a) && a >= b }

var templateFuncs = func() template.FuncMap {
	m := template.FuncMap{
		"sub":     func(a, b any) float64 { return sub(num(a), num(b)) },
		"atleast": func(a, b any) bool { return atleast(num(a), num(b)) },
	}
	for name, fn := range oneNumber {
		m[name] = func(a any) string { return fn(num(a)) }
	}
	for name, fn := range twoNumbers {
		m[name] = func(a, b any) string { return fn(num(a), num(b)) }
	}
	return m
}()

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
