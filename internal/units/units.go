// Package units formats the numbers llmdoctor prints — durations, counts,
// token counts, bandwidths and shares — the same way in rule messages and in
// every report, so that a value reads alike wherever it appears.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// unknown is how a missing or infinite value prints.
const unknown = "n/a"

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Duration formats seconds for people: 850µs, 412ms, 1.24s, 2m05s.
func Duration(s float64) string {
	switch {
	case !finite(s):
		return unknown
	case s < 0:
		return "-" + Duration(-s)
	case s == 0:
		return "0s" // not "0µs": nothing, not a very small time
	case s < 0.0000005:
		return "<1µs" // not 0µs, which reads as nothing
	case s < 0.001:
		return strconv.FormatFloat(s*1e6, 'f', 0, 64) + "µs"
	case s < 1:
		return strconv.FormatFloat(s*1000, 'f', 0, 64) + "ms"
	case s < 60:
		return strconv.FormatFloat(s, 'f', 2, 64) + "s"
	case s < 3600:
		m := int(s) / 60
		return fmt.Sprintf("%dm%02ds", m, int(s)-m*60)
	case s < 86400:
		h := int(s) / 3600
		return fmt.Sprintf("%dh%02dm", h, (int(s)-h*3600)/60)
	case s < 1e9:
		d := int(s) / 86400
		return fmt.Sprintf("%dd%02dh", d, (int(s)-d*86400)/3600)
	}
	return "over 30 years"
}

// Number formats a count or ratio with few digits.
func Number(x float64) string {
	switch {
	case !finite(x):
		return unknown
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
	case !finite(x):
		return unknown
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
	case !finite(x):
		return unknown
	case x >= 1e12:
		return strconv.FormatFloat(x/1e12, 'f', 2, 64) + " TB/s"
	case x >= 1e9:
		return strconv.FormatFloat(x/1e9, 'f', 0, 64) + " GB/s"
	}
	return strconv.FormatFloat(x/1e6, 'f', 0, 64) + " MB/s"
}

// Percent formats a share (0.42 → 42%), keeping one decimal under 1% so
// that a small share does not read as none.
func Percent(x float64) string {
	if !finite(x) {
		return unknown
	}
	p := x * 100
	if p > 0 && p < 0.05 {
		return "<0.1%" // not zero, which "0.0%" would read as
	}
	if p != 0 && math.Abs(p) < 1 {
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(math.Round(p), 'f', 0, 64) + "%"
}

// WholePercent formats a share rounded to a whole percent, for columns that
// line up (the latency map, impact lines).
func WholePercent(x float64) string { return fmt.Sprintf("%.0f%%", x*100) }

// ShortDuration writes a duration as it is typed: 10m and 1h, not 10m0s and
// 1h0m0s.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
