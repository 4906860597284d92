package rules

import (
	"fmt"
	"math"
	"strconv"
	"text/template"
)

// templateFuncs format the numbers a message cites.
var templateFuncs = template.FuncMap{
	"pct":    func(a, b any) string { return percent(num(a) / num(b)) },
	"ratio":  func(a any) string { return percent(num(a)) },
	"dur":    func(a any) string { return Duration(num(a)) },
	"num":    func(a any) string { return Number(num(a)) },
	"times":  func(a, b any) string { return Number(num(a)/num(b)) + "×" },
	"sub":    func(a, b any) float64 { return num(a) - num(b) },
	"tokens": func(a any) string { return Tokens(num(a)) },
	"bps":    func(a any) string { return BytesPerSecond(num(a)) },
}

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

func percent(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	p := x * 100
	if p != 0 && math.Abs(p) < 1 {
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(math.Round(p), 'f', 0, 64) + "%"
}

// Duration formats seconds for people: 850µs, 412ms, 1.24s, 2m05s.
func Duration(s float64) string {
	switch {
	case math.IsNaN(s) || math.IsInf(s, 0):
		return "n/a"
	case s < 0:
		return "-" + Duration(-s)
	case s < 0.001:
		return strconv.FormatFloat(s*1e6, 'f', 0, 64) + "µs"
	case s < 1:
		return strconv.FormatFloat(s*1000, 'f', 0, 64) + "ms"
	case s < 60:
		return strconv.FormatFloat(s, 'f', 2, 64) + "s"
	}
	m := int(s) / 60
	return fmt.Sprintf("%dm%02ds", m, int(s)-m*60)
}

// Number formats a count or ratio with few digits.
func Number(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "n/a"
	case x == math.Trunc(x) && math.Abs(x) < 1e15:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// Tokens formats a token count: 850, 4.2k, 1.3M.
func Tokens(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "n/a"
	case x >= 1e6:
		return strconv.FormatFloat(x/1e6, 'f', 1, 64) + "M"
	case x >= 1e3:
		return strconv.FormatFloat(x/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

// BytesPerSecond formats a bandwidth: 864 GB/s, 3.35 TB/s.
func BytesPerSecond(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "n/a"
	case x >= 1e12:
		return strconv.FormatFloat(x/1e12, 'f', 2, 64) + " TB/s"
	case x >= 1e9:
		return strconv.FormatFloat(x/1e9, 'f', 0, 64) + " GB/s"
	}
	return strconv.FormatFloat(x/1e6, 'f', 0, 64) + " MB/s"
}
