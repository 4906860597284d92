package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/whatif"
)

// WhatifText writes a whatif result for people: per target what the
// calibrated scenario used and where each value came from, the unchanged
// replay beside what was observed, and each next step's predicted effect
// or why there is none.
func WhatifText(w io.Writer, r *whatif.Result, o Options) error {
	width := o.Width
	if width <= 0 {
		width = 80
	}
	st := newStyles(w, ColorOn(o.Color, o.IsTerminal))
	p := &printer{w: w, width: width, st: st, details: true}
	p.fit(st.head.Render("llmdoctor whatif"))
	if len(r.Targets) == 0 {
		p.wrap("  ", "no target to calibrate")
	}
	for _, t := range r.Targets {
		p.blank()
		p.fit(st.head.Render("── " + targetName(t.Target)))
		if t.Reproduced {
			p.wrap("", st.ok.Render("✓ REPRODUCED")+fmt.Sprintf("  the unchanged replay is within %s of the window (tolerance %s)",
				units.WholePercent(t.Error), units.WholePercent(t.Tolerance)))
		} else {
			p.wrap("", st.warn.Render("? NOT REPRODUCED")+"  "+t.Why)
		}
		if len(t.Settings) > 0 {
			p.section("Calibrated from the window")
			for _, s := range t.Settings {
				p.wrap("  ", fmt.Sprintf("%s %s", s.Name, settingValue(s))+st.dim.Render(" · "+s.From))
			}
		}
		if len(t.Replay) > 0 {
			p.section("Replay of the window, unchanged")
			p.fit(st.dim.Render(fmt.Sprintf("  %-14s %12s %12s %7s", "figure", "observed", "replayed", "off")))
			for _, f := range t.Replay {
				off := units.WholePercent(f.Error)
				if f.Held {
					off = "held"
				}
				if f.Shown {
					off = "(" + off + ")"
				}
				replayed := gauge(f.Name, f.Replayed)
				if f.Missing {
					replayed, off = "—", "—"
				}
				p.fit(fmt.Sprintf("  %-14s %12s %12s %7s", f.Name, gauge(f.Name, f.Observed), replayed, off))
			}
		}
		if len(t.Steps) > 0 {
			p.section("Next steps, predicted")
			for i, s := range t.Steps {
				p.wrap("  ", fmt.Sprintf("%d. %s", i+1, s.Step))
				if s.Effect != nil {
					p.wrap("     ", EffectText(s.Effect))
				} else {
					p.wrap("     ", st.dim.Render(s.Why))
				}
			}
		}
	}
	p.blank()
	p.wrap("", st.dim.Render("How far predictions miss, against the simulator's own runs: docs/whatif.md."))
	return p.err
}

func settingValue(s whatif.Setting) string {
	switch {
	case strings.HasSuffix(s.Name, "_seconds") || strings.HasPrefix(s.Name, "step_"):
		return units.Duration(s.Value)
	case strings.HasSuffix(s.Name, "_per_second") || strings.HasPrefix(s.Name, "rate"):
		return units.Number(s.Value) + "/s"
	case strings.HasSuffix(s.Name, "_rate"):
		return units.Percent(s.Value)
	case strings.HasSuffix(s.Name, "_shape") || s.Name == "chunked_prefill":
		return strconv.FormatFloat(s.Value, 'g', 3, 64)
	}
	return units.Number(s.Value)
}

// gauge is a replay figure for the table, whose column says what it counts.
func gauge(name string, x float64) string {
	return strings.TrimSuffix(whatif.FigureText(name, x), " requests")
}
