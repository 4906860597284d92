package chart

import (
	"fmt"
	"math"
	"strings"
)

const stackedBarH = 28.0

// otherColor fills the part of Total that no segment accounts for.
const otherColor = "#e6e6e6"

type segRow struct {
	name, text string
	v, share   float64
	ok         bool
	other      bool // the remainder of Total, drawn as the bar's track
}

// segments returns the drawable segments, the whole the bar stands for
// (Total, or the sum when the segments exceed it), and the whole shares
// are of.
func (c Stacked) segments() (rows []segRow, whole, of float64, any bool) {
	sum := 0.0
	for i, s := range c.Segments {
		r := segRow{name: strings.TrimSpace(clean(s.Name)), v: s.Value, ok: ok(s.Value)}
		if r.name == "" {
			r.name = fmt.Sprintf("part %d", i+1)
		}
		if r.ok {
			any = true
			sum += math.Max(r.v, 0)
		}
		rows = append(rows, r)
	}
	of = sum
	if ok(c.Total) && c.Total > 0 {
		of = c.Total
	}
	whole = math.Max(of, sum)
	// The part of Total no segment accounts for is named, so that the grey
	// end of the bar is not a mystery; under 1% it is noise.
	other := segRow{name: "other", v: of - sum, ok: true, other: true}
	if any && of > sum && other.v/of >= 0.01 {
		rows = append(rows, other)
	}
	for i := range rows {
		r := &rows[i]
		if r.ok && of > 0 {
			r.share = r.v / of
		}
		r.text = fmt.Sprintf("%s %s", r.name, value(r.v, c.Unit))
		if r.ok && of > 0 && ok(r.share) {
			r.text += " (" + value(r.share, Ratio) + ")"
		}
	}
	return rows, whole, of, any
}

// segmentText is readable on each palette colour: white on the dark blue,
// black on the rest (contrast 4.5:1 or more).
func segmentText(i int) string {
	if color(i) == blue {
		return "#fff"
	}
	return "#000"
}

// SVG draws the stacked bar with a legend below, or returns "" when no
// segment has a value.
func (c Stacked) SVG() string {
	rows, whole, of, any := c.segments()
	if !any {
		return ""
	}
	const x0, x1 = 8.0, width - 8
	top := 8.0
	if clean(c.Title) != "" {
		top = titleBase + 10
	}
	var legend []legendItem
	for i, r := range rows {
		fill, stroke := color(i), ""
		if r.other {
			fill, stroke = otherColor, ` stroke="#999"`
		}
		legend = append(legend, legendItem{text: r.text, sw: 14, sample: func(d *doc, x, y float64) {
			d.f(`<rect x="%s" y="%s" width="10" height="10" fill="%s"%s/>`+"\n", num(x), num(y-9), fill, stroke)
		}})
	}
	if of > 0 {
		legend = append(legend, legendItem{text: "total " + value(of, c.Unit), sw: 0, sample: func(*doc, float64, float64) {}})
	}
	xs, rowOf, n := flow(legend, x0, x1)
	base := top + stackedBarH + 20
	h := base + float64(n-1)*18 + 10

	var d doc
	d.open(chartID(c.ID, c.Title), c.Title, c.alt(rows, of), h)
	// The track shows the part of Total no segment accounts for.
	d.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n", num(x0), num(top), num(x1-x0), num(stackedBarH), otherColor)
	x := x0
	for i, r := range rows {
		if !r.ok || r.other || r.v <= 0 || whole <= 0 {
			continue
		}
		w := r.v / whole * (x1 - x0)
		// A white edge separates neighbours without relying on colour.
		d.f(`<rect class="data" x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="#fff"/>`+"\n", num(x), num(top), num(w), num(stackedBarH), color(i))
		if textWidth(r.name, fontSize)+8 <= w {
			d.text(x+w/2, top+stackedBarH/2+4, "middle", fmt.Sprintf(`fill="%s"`, segmentText(i)), r.name, 0, fontSize)
		}
		x += w
	}
	d.drawLegend(legend, xs, rowOf, base, 18, x1)
	return d.close()
}

// Alt is the chart's text alternative: every segment with its share.
func (c Stacked) Alt() string {
	rows, _, of, _ := c.segments()
	return c.alt(rows, of)
}

func (c Stacked) alt(rows []segRow, of float64) string {
	var parts []string
	for _, r := range rows {
		if r.ok {
			parts = append(parts, r.text)
		}
	}
	if len(parts) == 0 {
		return sentence(c.Title, []string{"no data"})
	}
	s := strings.Join(parts, ", ")
	if of > 0 {
		s += "; total " + value(of, c.Unit)
	}
	return sentence(c.Title, []string{s})
}
