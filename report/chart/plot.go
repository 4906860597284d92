package chart

import (
	"fmt"
	"math"
)

// frame is the layout shared by Line and Scatter: title, legend rows, and
// a plot area with a y axis on the left and an x axis below.
type frame struct {
	xs, ys                   scale
	xLabel, yLabel           string
	xTicks, yTicks           []string
	legend                   []legendItem
	legX                     []float64
	legRow                   []int
	legendBase               float64
	left, right, top, bottom float64
	h                        float64
}

const (
	plotHeight = 140.0
	legendRowH = 16.0
	tickGap    = 6.0 // between a tick label and the plot area
)

func xAxisLabel(a Axis) string {
	if l := clean(a.Label); l != "" || a.Unit != Elapsed {
		return l
	}
	return "time into window"
}

func newFrame(title string, x, y Axis, xs, ys scale, legend []legendItem) *frame {
	f := &frame{xs: xs, ys: ys, xLabel: xAxisLabel(x), yLabel: clean(y.Label), legend: legend}
	f.xTicks, f.yTicks = xs.labels(), ys.labels()

	f.legX, f.legRow, _ = flow(legend, 8, width-8)
	rows := 0
	if len(legend) > 0 {
		rows = f.legRow[len(f.legRow)-1] + 1
	}
	last := 4.0 // baseline of the lowest line above the plot
	if clean(title) != "" {
		last = titleBase
	}
	if rows > 0 {
		f.legendBase = last + 19
		if last == 4 {
			f.legendBase = 16
		}
		last = f.legendBase + float64(rows-1)*legendRowH
	}
	f.top = last + 14
	f.bottom = f.top + plotHeight
	f.h = f.bottom + 24
	if f.xLabel != "" {
		f.h += 17
	}

	tw := 0.0
	for _, l := range f.yTicks {
		tw = math.Max(tw, textWidth(l, fontSize))
	}
	f.left = 6 + tw + tickGap
	if f.yLabel != "" {
		f.left += 16
	}
	lastX := ""
	if n := len(f.xTicks); n > 0 {
		lastX = f.xTicks[n-1]
	}
	f.right = width - math.Max(10, textWidth(lastX, fontSize)/2+4)
	return f
}

func (f *frame) px(x float64) float64 {
	return f.left + (x-f.xs.lo)/(f.xs.hi-f.xs.lo)*(f.right-f.left)
}

func (f *frame) py(y float64) float64 {
	return f.bottom - (y-f.ys.lo)/(f.ys.hi-f.ys.lo)*(f.bottom-f.top)
}

// draw writes everything but the data: legend, grid, axes, ticks and axis
// labels.
func (f *frame) draw(d *doc) {
	d.drawLegend(f.legend, f.legX, f.legRow, f.legendBase, legendRowH, width-8)

	d.f(`<g stroke="%s">`+"\n", gridColor)
	for _, t := range f.ys.ticks {
		if t != f.ys.lo {
			d.f(`<path d="M%s %sH%s"/>`+"\n", num(f.left), num(f.py(t)), num(f.right))
		}
	}
	d.WriteString("</g>\n")
	// The x axis, and a zero line when the data go negative.
	d.f(`<path d="M%s %sH%s" stroke="%s"/>`+"\n", num(f.left), num(f.bottom), num(f.right), axisColor)
	if f.ys.lo < 0 && f.ys.hi > 0 {
		d.f(`<path d="M%s %sH%s" stroke="%s"/>`+"\n", num(f.left), num(f.py(0)), num(f.right), axisColor)
	}
	if f.xs.lo < 0 && f.xs.hi > 0 {
		d.f(`<path d="M%s %sV%s" stroke="%s"/>`+"\n", num(f.px(0)), num(f.top), num(f.bottom), axisColor)
	}

	d.f(`<g fill="%s">`+"\n", tickColor)
	for i, t := range f.ys.ticks {
		d.text(f.left-tickGap, f.py(t)+4, "end", "", f.yTicks[i], 0, fontSize)
	}
	// Thin the x labels when they would touch; every tick keeps its mark.
	widest, every := 0.0, 1
	for _, l := range f.xTicks {
		widest = math.Max(widest, textWidth(l, fontSize))
	}
	if n := len(f.xs.ticks); n > 1 {
		gap := (f.right - f.left) / float64(n-1)
		for every < n && float64(every)*gap < widest+8 {
			every++
		}
	}
	for i, t := range f.xs.ticks {
		if i%every == 0 {
			d.text(f.px(t), f.bottom+17, "middle", "", f.xTicks[i], 0, fontSize)
		}
	}
	d.WriteString("</g>\n")
	d.f(`<path d="`)
	for _, t := range f.xs.ticks {
		d.f("M%s %sv4", num(f.px(t)), num(f.bottom))
	}
	d.f(`" stroke="%s"/>`+"\n", axisColor)

	if f.xLabel != "" {
		d.text((f.left+f.right)/2, f.bottom+34, "middle", fmt.Sprintf(`fill="%s"`, tickColor), f.xLabel, f.right-f.left, fontSize)
	}
	if f.yLabel != "" {
		cy := (f.top + f.bottom) / 2
		d.f(`<g transform="translate(14 %s) rotate(-90)">`, num(cy))
		d.text(0, 0, "middle", fmt.Sprintf(`fill="%s"`, tickColor), f.yLabel, f.bottom-f.top+20, fontSize)
		d.WriteString("</g>\n")
	}
}
