package chart

import (
	"fmt"
	"math"
	"strings"
)

type scatterData struct {
	pts                    [][2]float64
	xmin, xmax, ymin, ymax float64
}

func (c Scatter) data() scatterData {
	d := scatterData{xmin: math.Inf(1), xmax: math.Inf(-1), ymin: math.Inf(1), ymax: math.Inf(-1)}
	for _, p := range c.Points {
		if ok(p[0]) && ok(p[1]) {
			d.pts = append(d.pts, p)
			d.xmin, d.xmax = math.Min(d.xmin, p[0]), math.Max(d.xmax, p[0])
			d.ymin, d.ymax = math.Min(d.ymin, p[1]), math.Max(d.ymax, p[1])
		}
	}
	return d
}

// fit returns the fitted line if it can be drawn.
func (c Scatter) fit() (Fit, bool) {
	if c.Fit == nil || !ok(c.Fit.Slope) || !ok(c.Fit.Intercept) {
		return Fit{}, false
	}
	return *c.Fit, true
}

// fitLabel is how the fit reads: its own label, or the line's two ends.
func (c Scatter) fitLabel(d scatterData, f Fit) string {
	if l := strings.TrimSpace(clean(f.Label)); l != "" {
		return l
	}
	y0, y1 := f.Intercept+f.Slope*d.xmin, f.Intercept+f.Slope*d.xmax
	return fmt.Sprintf("fitted line from %s at %s to %s at %s",
		value(y0, c.Y.Unit), atX(d.xmin, c.X), value(y1, c.Y.Unit), atX(d.xmax, c.X))
}

// SVG draws the chart, or returns "" when no point can be drawn.
func (c Scatter) SVG() string {
	data := c.data()
	if len(data.pts) == 0 {
		return ""
	}
	xs := newScale(c.X.Unit, data.xmin, data.xmax)
	ys := newScale(c.Y.Unit, data.ymin, data.ymax)
	fit, hasFit := c.fit()
	var legend []legendItem
	if hasFit {
		legend = append(legend, legendItem{text: c.fitLabel(data, fit), sample: lineSample(vermilion, "6 3"), sw: 30})
	}
	f := newFrame(c.Title, c.X, c.Y, xs, ys, legend)
	id := chartID(c.ID, c.Title)

	var d doc
	d.open(id, c.Title, c.alt(data), f.h)
	f.draw(&d)
	// Points that land on the same spot once rounded are drawn once.
	seen := map[[2]string]bool{}
	d.f(`<g fill="%s" fill-opacity="0.6">`+"\n", blue)
	for _, p := range data.pts {
		k := [2]string{num(f.px(p[0])), num(f.py(p[1]))}
		if seen[k] {
			continue
		}
		seen[k] = true
		d.f(`<circle class="data" cx="%s" cy="%s" r="3"/>`+"\n", k[0], k[1])
	}
	d.WriteString("</g>\n")
	if hasFit {
		if x0, x1, ok := clipLine(fit, data.xmin, data.xmax, ys.lo, ys.hi); ok {
			y0 := clamp(fit.Intercept+fit.Slope*x0, ys.lo, ys.hi)
			y1 := clamp(fit.Intercept+fit.Slope*x1, ys.lo, ys.hi)
			d.f(`<path class="data fit" d="M%s %sL%s %s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="6 3"/>`+"\n",
				num(f.px(x0)), num(f.py(y0)), num(f.px(x1)), num(f.py(y1)), vermilion)
		}
	}
	return d.close()
}

// clipLine returns the part of [x0, x1] where the fit stays within
// [ylo, yhi], so that a steep fit ends at the plot's edge instead of
// stretching the y axis away from the data.
func clipLine(f Fit, x0, x1, ylo, yhi float64) (float64, float64, bool) {
	if !(x0 < x1) {
		return 0, 0, false
	}
	if f.Slope == 0 {
		return x0, x1, f.Intercept >= ylo && f.Intercept <= yhi
	}
	a, b := (ylo-f.Intercept)/f.Slope, (yhi-f.Intercept)/f.Slope
	lo, hi := math.Max(x0, math.Min(a, b)), math.Min(x1, math.Max(a, b))
	if !(lo < hi) || !ok(lo) || !ok(hi) {
		return 0, 0, false
	}
	return lo, hi, true
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// Alt is the chart's text alternative: how many points, their ranges, and
// the fit.
func (c Scatter) Alt() string { return c.alt(c.data()) }

func (c Scatter) alt(d scatterData) string {
	if len(d.pts) == 0 {
		return sentence(c.Title, []string{"no data"})
	}
	name := func(a Axis, def string) string {
		if l := strings.TrimSpace(clean(a.Label)); l != "" {
			return l
		}
		if a.Unit == Elapsed {
			return "time into window"
		}
		return def
	}
	points := "points"
	if len(d.pts) == 1 {
		points = "point"
	}
	parts := []string{fmt.Sprintf("%d %s, %s from %s to %s, %s from %s to %s", len(d.pts), points,
		name(c.X, "x"), value(d.xmin, c.X.Unit), value(d.xmax, c.X.Unit),
		name(c.Y, "y"), value(d.ymin, c.Y.Unit), value(d.ymax, c.Y.Unit))}
	if f, ok := c.fit(); ok {
		parts = append(parts, "fit: "+c.fitLabel(d, f))
	}
	return sentence(c.Title, parts)
}
