package chart

import (
	"fmt"
	"math"
	"strings"
)

const (
	barRowH      = 24.0
	barThickness = 16.0
	maxLabelW    = 130.0 // the category column; longer labels are cut
)

type barRow struct {
	label, value string
	v            float64
	ok           bool
	highlight    bool
}

func (c Bars) rows() (rows []barRow, lo, hi float64, any bool) {
	for i, b := range c.Bars {
		r := barRow{label: strings.TrimSpace(clean(b.Label)), v: b.Value, ok: ok(b.Value), highlight: b.Highlight}
		if r.label == "" {
			r.label = fmt.Sprintf("#%d", i+1)
		}
		r.value = value(b.Value, c.Unit)
		if r.ok {
			lo, hi = math.Min(lo, b.Value), math.Max(hi, b.Value)
			any = true
		}
		rows = append(rows, r)
	}
	if lo == hi {
		hi = 1
	}
	return rows, lo, hi, any
}

// SVG draws one bar per category, or returns "" when no value can be
// drawn. A category without a value keeps its row, marked n/a.
func (c Bars) SVG() string {
	rows, lo, hi, any := c.rows()
	if !any {
		return ""
	}
	labelW, valueW := 0.0, 0.0
	for _, r := range rows {
		// Highlighted labels are bold too.
		labelW = math.Max(labelW, textWidth(r.label, fontSize)*1.08)
		// Highlighted values are bold: allow a little more.
		valueW = math.Max(valueW, textWidth(r.value, fontSize)*1.08)
	}
	labelW = math.Min(labelW, maxLabelW)
	x0 := 8 + labelW + 8
	x1 := width - 8 - valueW - 6
	px := func(v float64) float64 { return x0 + (v-lo)/(hi-lo)*(x1-x0) }
	zero := px(0)

	top := 8.0
	if clean(c.Title) != "" {
		top = titleBase + 12
	}
	h := top + float64(len(rows))*barRowH + 6
	var d doc
	d.open(chartID(c.ID, c.Title), c.Title, c.alt(rows), h)
	for i, r := range rows {
		y := top + float64(i)*barRowH
		base := y + barRowH/2 + 4
		fill, weight := blue, ""
		if r.highlight {
			fill, weight = vermilion, ` font-weight="700"`
		}
		d.text(8+labelW, base, "end", fmt.Sprintf(`fill="%s"%s`, textColor, weight), r.label, labelW/1.08, fontSize)
		vx := zero
		if r.ok {
			a, b := math.Min(zero, px(r.v)), math.Max(zero, px(r.v))
			d.f(`<rect class="data" x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n",
				num(a), num(y+(barRowH-barThickness)/2), num(b-a), num(barThickness), fill)
			vx = b
		}
		d.text(vx+6, base, "", fmt.Sprintf(`fill="%s"%s`, textColor, weight), r.value, 0, fontSize)
	}
	d.f(`<path d="M%s %sV%s" stroke="%s"/>`+"\n", num(zero), num(top), num(h-6), axisColor)
	return d.close()
}

// Alt is the chart's text alternative: the highest and lowest categories,
// and which are highlighted.
func (c Bars) Alt() string {
	rows, _, _, _ := c.rows()
	return c.alt(rows)
}

func (c Bars) alt(rows []barRow) string {
	var hiR, loR *barRow
	var marked, missing []string
	for i := range rows {
		r := &rows[i]
		if r.highlight {
			marked = append(marked, r.label)
		}
		if !r.ok {
			missing = append(missing, r.label)
			continue
		}
		if hiR == nil || r.v > hiR.v {
			hiR = r
		}
		if loR == nil || r.v < loR.v {
			loR = r
		}
	}
	var parts []string
	switch {
	case hiR == nil:
		parts = append(parts, "no data")
	case hiR == loR || hiR.v == loR.v:
		n := len(rows) - len(missing)
		if n == 1 {
			parts = append(parts, fmt.Sprintf("%s (%s)", hiR.label, hiR.value))
		} else {
			parts = append(parts, fmt.Sprintf("all %d at %s", n, hiR.value))
		}
	default:
		parts = append(parts, fmt.Sprintf("highest %s (%s)", hiR.label, hiR.value), fmt.Sprintf("lowest %s (%s)", loR.label, loR.value))
	}
	if len(marked) > 0 {
		parts = append(parts, "highlighted: "+strings.Join(marked, ", "))
	}
	if len(missing) > 0 {
		parts = append(parts, "no data for "+strings.Join(missing, ", "))
	}
	return sentence(c.Title, parts)
}
