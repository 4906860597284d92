package chart

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// lineSeries is a series ready to draw: runs of consecutive drawable
// points, split where a value is missing.
type lineSeries struct {
	name                  string
	runs                  [][][2]float64
	n                     int
	first, last, min, max [2]float64
}

type lineData struct {
	series                 []lineSeries
	refs                   []Ref
	marks                  []Mark
	xmin, xmax, ymin, ymax float64
	any                    bool
}

func (c Line) data() lineData {
	d := lineData{xmin: math.Inf(1), xmax: math.Inf(-1), ymin: math.Inf(1), ymax: math.Inf(-1)}
	for i, s := range c.Series {
		ls := lineSeries{name: clean(s.Name)}
		if strings.TrimSpace(ls.name) == "" {
			ls.name = fmt.Sprintf("series %d", i+1)
		}
		// Points without an x cannot be placed; points without a y are
		// kept as breaks in the line.
		pts := make([][2]float64, 0, len(s.Points))
		for _, p := range s.Points {
			if ok(p[0]) {
				pts = append(pts, p)
			}
		}
		slices.SortStableFunc(pts, func(a, b [2]float64) int {
			switch {
			case a[0] < b[0]:
				return -1
			case a[0] > b[0]:
				return 1
			}
			return 0
		})
		gap := math.Inf(1)
		if c.X.Unit == Elapsed {
			gap = 3 * medianStep(pts)
		}
		var run [][2]float64
		prevX := math.NaN()
		for _, p := range pts {
			if !ok(p[1]) || p[0]-prevX > gap {
				if len(run) > 0 {
					ls.runs = append(ls.runs, run)
				}
				run = nil
			}
			prevX = p[0]
			if !ok(p[1]) {
				continue
			}
			run = append(run, p)
			if ls.n == 0 {
				ls.first, ls.min, ls.max = p, p, p
			}
			ls.n++
			ls.last = p
			if p[1] < ls.min[1] {
				ls.min = p
			}
			if p[1] > ls.max[1] {
				ls.max = p
			}
			d.xmin, d.xmax = math.Min(d.xmin, p[0]), math.Max(d.xmax, p[0])
			d.ymin, d.ymax = math.Min(d.ymin, p[1]), math.Max(d.ymax, p[1])
			d.any = true
		}
		if len(run) > 0 {
			ls.runs = append(ls.runs, run)
		}
		d.series = append(d.series, ls)
	}
	if !d.any {
		return d // references alone are no chart
	}
	for _, r := range c.Refs {
		if ok(r.Y) {
			d.refs = append(d.refs, Ref{Y: r.Y, Label: strings.TrimSpace(clean(r.Label))})
			d.ymin, d.ymax = math.Min(d.ymin, r.Y), math.Max(d.ymax, r.Y)
		}
	}
	for _, m := range c.Marks {
		if !ok(m.X) {
			continue
		}
		l := strings.TrimSpace(clean(m.Label))
		if i := slices.IndexFunc(d.marks, func(o Mark) bool { return o.X == m.X }); i >= 0 {
			if l != "" {
				d.marks[i].Label = strings.TrimPrefix(d.marks[i].Label+", "+l, ", ")
			}
			continue
		}
		d.marks = append(d.marks, Mark{X: m.X, Label: l})
		d.xmin, d.xmax = math.Min(d.xmin, m.X), math.Max(d.xmax, m.X)
	}
	slices.SortStableFunc(d.marks, func(a, b Mark) int {
		switch {
		case a.X < b.X:
			return -1
		case a.X > b.X:
			return 1
		}
		return 0
	})
	return d
}

// medianStep is the typical spacing of a time series, so that a spacing
// well beyond it reads as missing samples rather than a straight line.
// pts are sorted by x.
func medianStep(pts [][2]float64) float64 {
	var steps []float64
	for i := 1; i < len(pts); i++ {
		if dx := pts[i][0] - pts[i-1][0]; dx > 0 {
			steps = append(steps, dx)
		}
	}
	if len(steps) < 2 {
		return math.Inf(1)
	}
	slices.Sort(steps)
	return steps[len(steps)/2]
}

// SVG draws the chart, or returns "" when no point can be drawn.
func (c Line) SVG() string {
	data := c.data()
	if !data.any {
		return ""
	}
	xs := newScale(c.X.Unit, data.xmin, data.xmax)
	ys := newScale(c.Y.Unit, data.ymin, data.ymax)
	var legend []legendItem
	named := false
	for _, s := range c.Series {
		named = named || strings.TrimSpace(clean(s.Name)) != ""
	}
	if named || len(data.series) > 1 {
		for i, s := range data.series {
			legend = append(legend, legendItem{text: s.name, sample: lineSample(color(i), dash(i)), sw: 30})
		}
	}
	f := newFrame(c.Title, c.X, c.Y, xs, ys, legend)
	id := chartID(c.ID, c.Title)

	var d doc
	d.open(id, c.Title, c.alt(data), f.h)
	f.draw(&d)
	f.refs(&d, data.refs)
	f.marks(&d, data.marks)
	d.WriteString(`<g fill="none" stroke-width="2" stroke-linejoin="round">` + "\n")
	for i, s := range data.series {
		var path strings.Builder
		var dots []string
		for _, run := range s.runs {
			if len(run) == 1 {
				dots = append(dots, fmt.Sprintf(`<circle class="data" cx="%s" cy="%s" r="3" fill="%s" stroke="none"/>`, num(f.px(run[0][0])), num(f.py(run[0][1])), color(i)))
				continue
			}
			for j, p := range run {
				op := "L"
				if j == 0 {
					op = "M"
				}
				fmt.Fprintf(&path, "%s%s %s", op, num(f.px(p[0])), num(f.py(p[1])))
			}
		}
		if path.Len() > 0 {
			d.f(`<path class="data" d="%s" stroke="%s"%s/>`+"\n", path.String(), color(i), dashAttr(dash(i)))
		}
		for _, c := range dots {
			d.WriteString(c + "\n")
		}
	}
	d.WriteString("</g>\n")
	return d.close()
}

// Alt is the chart's text alternative: each series from first to last
// value, with its extremes.
func (c Line) Alt() string { return c.alt(c.data()) }

func (c Line) alt(data lineData) string {
	if !data.any {
		return sentence(c.Title, []string{"no data"})
	}
	yu := c.Y.Unit
	var parts []string
	for _, s := range data.series {
		switch s.n {
		case 0:
			parts = append(parts, s.name+" has no data")
		case 1:
			parts = append(parts, fmt.Sprintf("%s was %s at %s", s.name, value(s.first[1], yu), atX(s.first[0], c.X)))
		default:
			parts = append(parts, fmt.Sprintf("%s went from %s to %s (min %s, max %s) %s",
				s.name, value(s.first[1], yu), value(s.last[1], yu), value(s.min[1], yu), value(s.max[1], yu), overX(s.first[0], s.last[0], c.X)))
		}
	}
	for _, r := range data.refs {
		l := r.Label
		if l == "" {
			l = "reference"
		}
		parts = append(parts, fmt.Sprintf("%s line at %s", l, value(r.Y, yu)))
	}
	for _, m := range data.marks {
		l := m.Label
		if l == "" {
			l = "marked"
		}
		parts = append(parts, fmt.Sprintf("%s at %s", l, atX(m.X, c.X)))
	}
	return sentence(c.Title, parts)
}

// refs draws the reference lines dashed across the plot, each labelled at
// the right end, above its line or, when that would touch the label
// before, below it.
func (f *frame) refs(d *doc, refs []Ref) {
	if len(refs) == 0 {
		return
	}
	d.f(`<g class="ref" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3">`+"\n", refColor)
	for _, r := range refs {
		d.f(`<path d="M%s %sH%s"/>`+"\n", num(f.left), num(f.py(r.Y)), num(f.right))
	}
	d.WriteString("</g>\n")
	var placed []float64
	for _, r := range refs {
		if r.Label == "" {
			continue
		}
		y := f.py(r.Y) - 4
		for _, p := range placed {
			if math.Abs(p-y) < refSize+2 {
				y = f.py(r.Y) + refSize + 2
			}
		}
		placed = append(placed, y)
		d.text(f.right-2, y, "end", fmt.Sprintf(`font-size="%s" fill="%s" stroke="#fff" stroke-width="3" paint-order="stroke"`, num(refSize), refColor),
			r.Label, (f.right-f.left)/2, refSize)
	}
}

// marks draws each marker as a vertical line with its label at the top of
// the plot, right of the line (left of it near the right edge); a label
// that would overlap one before it goes a row lower.
func (f *frame) marks(d *doc, marks []Mark) {
	if len(marks) == 0 {
		return
	}
	d.f(`<g class="mark" stroke="%s" stroke-width="1.5" stroke-dasharray="2 3">`+"\n", markColor)
	for _, m := range marks {
		d.f(`<path d="M%s %sV%s"/>`+"\n", num(f.px(m.X)), num(f.top), num(f.bottom))
	}
	d.WriteString("</g>\n")
	var rows [][][2]float64 // each row's occupied [x0, x1]
	for _, m := range marks {
		if m.Label == "" {
			continue
		}
		x := f.px(m.X)
		w := math.Min(textWidth(m.Label, refSize), (f.right-f.left)/2)
		x0, anchor := x+3, "start"
		if x0+w > f.right {
			x0, anchor = x-3-w, "end"
		}
		row := 0
		for ; row < len(rows); row++ {
			free := true
			for _, o := range rows[row] {
				if x0 < o[1]+4 && o[0] < x0+w+4 {
					free = false
				}
			}
			if free {
				break
			}
		}
		if row == len(rows) {
			rows = append(rows, nil)
		}
		rows[row] = append(rows[row], [2]float64{x0, x0 + w})
		tx := x + 3
		if anchor == "end" {
			tx = x - 3
		}
		d.text(tx, f.top+refSize+float64(row)*(refSize+3), anchor, fmt.Sprintf(`font-size="%s" fill="%s" stroke="#fff" stroke-width="3" paint-order="stroke"`, num(refSize), markColor),
			m.Label, w, refSize)
	}
}

// atX says where on the x axis a point is: "at 5m", "at prompt length 1.2k".
func atX(x float64, a Axis) string {
	if a.Unit == Elapsed || a.Unit == Seconds {
		return value(x, a.Unit)
	}
	if l := clean(a.Label); l != "" {
		return l + " " + value(x, a.Unit)
	}
	return "x = " + value(x, a.Unit)
}

// overX says what span of the x axis a series covers.
func overX(x0, x1 float64, a Axis) string {
	switch a.Unit {
	case Elapsed:
		return "over " + elapsed(x1-x0)
	case Seconds:
		return "over " + value(x1-x0, Seconds)
	}
	l := clean(a.Label)
	if l == "" {
		l = "x"
	}
	return fmt.Sprintf("as %s went from %s to %s", l, value(x0, a.Unit), value(x1, a.Unit))
}
