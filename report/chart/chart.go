// Package chart draws the HTML report's charts as self-contained SVG: no
// scripts, fonts, styles or links, so a saved report renders anywhere. Each
// chart also has a text alternative (Alt), which the SVG carries in <desc>.
//
// Every chart is sized in a 400-unit-wide viewBox and carries no width or
// height: the page's CSS scales it. Non-finite values are skipped, and a
// chart with nothing to draw returns "" so the caller can leave a gap.
package chart

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Unit says what the numbers on an axis or bar are: it picks the tick steps
// and how ticks and values read.
type Unit int

const (
	// Seconds are durations: ticks 250ms, 1.5s, 2m.
	Seconds Unit = iota
	// Ratio is a share in 0..1, shown as a percentage.
	Ratio
	// Count is a number of things (requests): 850, 1.2k.
	Count
	// Tokens is a token count: 850, 1.2k.
	Tokens
	// Elapsed is seconds since the start of a window: ticks 0, 5m, 10m.
	Elapsed
)

// Axis names an axis and its unit. An Elapsed axis without a label reads
// "time into window".
type Axis struct {
	Label string
	Unit  Unit
}

// Series is one named line of a Line chart; Points are (x, y) pairs in any
// order.
type Series struct {
	Name   string
	Points [][2]float64
}

// Line is a chart of one or more lines: a time series, or a figure
// against load. Refs are horizontal reference lines (an SLO target) drawn
// dashed across the plot; Marks are vertical markers (a knee, a capacity)
// with a label at the top. Both widen the axes to stay in view, are named
// in the text alternative, and are skipped when not finite.
type Line struct {
	ID, Title string
	X, Y      Axis
	Series    []Series
	Refs      []Ref
	Marks     []Mark
}

// Ref is a horizontal reference line at Y, labelled on the plot.
type Ref struct {
	Y     float64
	Label string
}

// Mark is a vertical marker at X, labelled at the top of the plot. Marks
// at the same X share one line and one label.
type Mark struct {
	X     float64
	Label string
}

// Fit is a fitted straight line, y = Intercept + Slope*x, and how it reads
// ("TTFT ≈ 120ms + 35ms per 1k tokens").
type Fit struct {
	Slope, Intercept float64
	Label            string
}

// Scatter is a cloud of points with an optional fitted line.
type Scatter struct {
	ID, Title string
	X, Y      Axis
	Points    [][2]float64
	Fit       *Fit
}

// Bar is one category of a Bars chart; Highlight marks the outlier.
type Bar struct {
	Label     string
	Value     float64
	Highlight bool
}

// Bars is a horizontal bar chart, one bar per category.
type Bars struct {
	ID, Title string
	Unit      Unit
	Bars      []Bar
}

// Segment is one part of a Stacked bar.
type Segment struct {
	Name  string
	Value float64
}

// Stacked is one horizontal bar split into segments (the latency map). When
// Total > 0 it is the whole the shares are of; otherwise the segments' sum
// is.
type Stacked struct {
	ID, Title string
	Unit      Unit
	Segments  []Segment
	Total     float64
}

const (
	width     = 400.0
	fontSize  = 12.0
	titleSize = 13.0
	// maxAbs bounds the values drawn: beyond it, scaling and tick maths
	// lose their meaning, so such values are skipped like NaN.
	maxAbs = 1e100

	textColor = "#222"
	tickColor = "#444"
	gridColor = "#e3e3e3"
	axisColor = "#999"
	blue      = "#0072B2"
	vermilion = "#D55E00"
	// refColor draws targets (an SLO), markColor markers (a knee): apart
	// from the palette so they never read as a series.
	refColor  = "#b3261e"
	markColor = "#555"
	refSize   = 11.0
)

// palette is Okabe–Ito without yellow, which is too faint as a thin line on
// white.
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9"}

// dashes tell series apart without colour.
var dashes = []string{"", "6 3", "2 2", "8 3 2 3", "12 3 2 3 2 3", "2 5"}

func color(i int) string { return palette[i%len(palette)] }

// dash varies independently of colour after the palette wraps, so series 7
// does not repeat series 1.
func dash(i int) string { return dashes[(i+i/len(palette))%len(dashes)] }

// ok reports whether x can be drawn.
func ok(x float64) bool { return !math.IsNaN(x) && math.Abs(x) <= maxAbs }

// num writes a coordinate with one decimal, which is finer than any screen
// needs and keeps files small.
func num(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		x = 0
	}
	r := math.Round(x*10) / 10
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// clean makes a label safe to put in XML: invalid UTF-8 and characters
// XML forbids become U+FFFD, and line breaks become spaces since SVG text
// is one line.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case r == unicode.ReplacementChar,
			r >= 0x20 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD,
			r >= 0x10000 && r <= 0x10FFFF:
			return r
		}
		return unicode.ReplacementChar
	}, s)
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// esc cleans and escapes text for element content and attribute values.
func esc(s string) string { return escaper.Replace(clean(s)) }

// chartID makes id safe for an XML id and for aria-labelledby, which splits
// on spaces; an empty id is derived from the title so that two charts on a
// page still differ.
func chartID(id, title string) string {
	var b strings.Builder
	for _, r := range id {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		h := fnv.New32a()
		h.Write([]byte(title))
		return fmt.Sprintf("chart-%08x", h.Sum32())
	}
	s := b.String()
	if c := s[0]; c >= '0' && c <= '9' || c == '-' {
		s = "c" + s // XML names start with a letter or underscore
	}
	return s
}

// textWidth estimates how wide s renders at size, erring wide, since no
// font metrics are at hand and the viewer's system-ui font is unknown.
func textWidth(s string, size float64) float64 {
	w := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("iljI.,:;'|!", r):
			w += 0.3
		case strings.ContainsRune("frt()[]{} -/", r):
			w += 0.38
		case strings.ContainsRune("mwMW%", r):
			w += 0.9
		case r >= '0' && r <= '9':
			w += 0.62
		case unicode.IsUpper(r):
			w += 0.7
		case r < 128:
			w += 0.58
		default:
			w += 0.95 // symbols, CJK
		}
	}
	return w * size
}

// truncate shortens s with an ellipsis to fit max; the caller keeps the
// full text in a <title>.
func truncate(s string, max, size float64) string {
	if textWidth(s, size) <= max {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && textWidth(string(r)+"…", size) > max {
		r = r[:len(r)-1]
	}
	return strings.TrimRight(string(r), " ") + "…"
}

// truncateMiddle cuts s to max by dropping its middle: category labels
// (instance addresses) differ at their ends more often than at their starts.
func truncateMiddle(s string, max, size float64) string {
	if textWidth(s, size) <= max {
		return s
	}
	r := []rune(s)
	for len(r) > 1 {
		cut := string(r[:(len(r)+1)/2]) + "…" + string(r[(len(r)+1)/2+1:])
		r = append(r[:(len(r)+1)/2], r[(len(r)+1)/2+1:]...)
		if textWidth(cut, size) <= max {
			return cut
		}
	}
	return "…"
}

// doc accumulates one SVG element.
type doc struct{ strings.Builder }

func (d *doc) f(format string, a ...any) { fmt.Fprintf(&d.Builder, format, a...) }

// open writes the root element, its accessible name and description, a
// white background (so the chart reads on a dark page too) and the visible
// title.
func (d *doc) open(id, title, alt string, h float64) {
	d.f(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" role="img" class="chart" aria-labelledby="%s-title %s-desc" font-family="system-ui, sans-serif" font-size="12">`+"\n",
		num(width), num(h), id, id)
	d.f(`<title id="%s-title">%s</title>`+"\n", id, esc(title))
	d.f(`<desc id="%s-desc">%s</desc>`+"\n", id, esc(alt))
	d.f(`<rect width="%s" height="%s" fill="#fff"/>`+"\n", num(width), num(h))
	if t := clean(title); t != "" {
		// Bold runs about a tenth wider than the estimate.
		d.text(8, titleBase, "", fmt.Sprintf(`font-size="%s" font-weight="600" fill="%s"`, num(titleSize), textColor), t, width-16, titleSize*1.1)
	}
}

func (d *doc) close() string {
	d.WriteString("</svg>\n")
	return d.String()
}

// text writes one text element, truncated to max wide (0: no limit) with
// the full text kept as its <title>.
func (d *doc) text(x, y float64, anchor, attrs, s string, max, size float64) {
	d.f(`<text x="%s" y="%s"`, num(x), num(y))
	if anchor != "" {
		d.f(` text-anchor="%s"`, anchor)
	}
	if attrs != "" {
		d.f(" %s", attrs)
	}
	d.WriteString(">")
	if max > 0 {
		cut := truncate
		if anchor == "end" {
			cut = truncateMiddle
		}
		if t := cut(s, max, size); t != s {
			d.f("<title>%s</title>%s</text>\n", esc(s), esc(t))
			return
		}
	}
	d.f("%s</text>\n", esc(s))
}

// titleBase is the baseline of a chart's visible title.
const titleBase = 18.0

// legendItem is one entry of a legend: a sample drawn at (x, baseline)
// followed by text.
type legendItem struct {
	text   string
	sample func(d *doc, x, y float64)
	sw     float64 // sample width, including the gap before the text
}

func (it legendItem) width() float64 { return it.sw + textWidth(it.text, fontSize) }

// flow lays legend items out in rows between x0 and x1, returning each
// item's x and row.
func flow(items []legendItem, x0, x1 float64) (xs []float64, rows []int, n int) {
	x, row := x0, 0
	for i, it := range items {
		w := math.Min(it.width(), x1-x0)
		if i > 0 && x+w > x1 {
			x, row = x0, row+1
		}
		xs = append(xs, x)
		rows = append(rows, row)
		x += w + 16
	}
	if len(items) > 0 {
		n = row + 1
	}
	return xs, rows, n
}

// drawLegend writes items at the positions flow gave, first row at base.
func (d *doc) drawLegend(items []legendItem, xs []float64, rows []int, base, rowH, x1 float64) {
	for i, it := range items {
		y := base + float64(rows[i])*rowH
		it.sample(d, xs[i], y)
		d.text(xs[i]+it.sw, y, "", fmt.Sprintf(`fill="%s"`, textColor), it.text, x1-xs[i]-it.sw, fontSize)
	}
}

// lineSample is a legend sample for a stroked line.
func lineSample(stroke, dash string) func(d *doc, x, y float64) {
	return func(d *doc, x, y float64) {
		d.f(`<path d="M%s %sH%s" stroke="%s" stroke-width="2"%s/>`+"\n", num(x), num(y-4), num(x+24), stroke, dashAttr(dash))
	}
}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

// sentence joins parts into text ending in a full stop.
func sentence(title string, parts []string) string {
	s := strings.Join(parts, "; ")
	if t := strings.TrimSpace(clean(title)); t != "" {
		s = t + ": " + s
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
