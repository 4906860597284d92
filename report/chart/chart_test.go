package chart

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// checkSVG fails t unless s is one well-formed, self-contained svg element
// with no NaN or Inf in it and no text smaller than 11.
func checkSVG(t testing.TB, s string) {
	t.Helper()
	if s == "" {
		t.Fatal("empty SVG")
	}
	for _, bad := range []string{"NaN", "Inf", "href", "<image", "<script", "<style", "url(", "@import", "<foreignObject"} {
		if strings.Contains(s, bad) {
			t.Errorf("output contains %q:\n%s", bad, s)
		}
	}
	dec := xml.NewDecoder(strings.NewReader(s))
	depth, roots, ids := 0, 0, map[string]bool{}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, s)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if el.Name.Local != "svg" || el.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root is %v", el.Name)
				}
				for _, a := range el.Attr {
					if a.Name.Local == "width" || a.Name.Local == "height" {
						t.Errorf("root has %s=%q; the page sizes the chart", a.Name.Local, a.Value)
					}
				}
			}
			depth++
			for _, a := range el.Attr {
				switch a.Name.Local {
				case "id":
					if ids[a.Value] {
						t.Errorf("duplicate id %q", a.Value)
					}
					ids[a.Value] = true
				case "font-size":
					if v, err := strconv.ParseFloat(a.Value, 64); err != nil || v < 11 {
						t.Errorf("font-size %q", a.Value)
					}
				}
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && strings.TrimSpace(string(el)) != "" {
				t.Errorf("text outside the svg element: %q", el)
			}
		}
	}
	if roots != 1 {
		t.Errorf("%d root elements", roots)
	}
}

var nan, inf = math.NaN(), math.Inf(1)

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		u      Unit
		lo, hi float64
		want   string
	}{
		{Seconds, 0.11, 3.6, "0 1s 2s 3s 4s"},
		{Seconds, 0.1, 0.35, "0 100ms 200ms 300ms 400ms"},
		{Seconds, 0, 1.4, "0 0.5s 1s 1.5s"},
		{Seconds, 0, 0.0009, "0 0.2ms 0.4ms 0.6ms 0.8ms 1ms"},
		{Seconds, 0, 1e-9, "0 0.2ns 0.4ns 0.6ns 0.8ns 1ns"},
		{Seconds, 0, 70, "0 15s 30s 45s 1m 1m15s"},
		{Seconds, 0, 1000, "0 5m 10m 15m 20m"},
		{Elapsed, 0, 870, "0 5m 10m 15m"},
		{Elapsed, 0, 90, "0 30s 1m 1m30s"},
		{Elapsed, 0, 3 * 3600, "0 1h 2h 3h"},
		{Elapsed, 0, 0, "0 15s 30s 45s 1m"},
		{Elapsed, 0, 2.5, "0 0.5s 1s 1.5s 2s 2.5s"},
		{Ratio, 0.3, 0.97, "0 20% 40% 60% 80% 100%"},
		{Ratio, 0, 0, "0 20% 40% 60% 80% 100%"},
		{Ratio, 0, 1.3, "0 50% 100% 150%"},
		{Ratio, -0.2, 0.5, "-20% 0 20% 40% 60%"},
		{Count, 3, 64, "0 20 40 60 80"},
		{Count, 0, 0, "0 0.2 0.4 0.6 0.8 1"},
		{Count, 0, 5, "0 1 2 3 4 5"},
		{Count, 0, 1900, "0 500 1k 1.5k 2k"},
		{Count, 0, 1e12, "0 200B 400B 600B 800B 1T"},
		{Count, -12, 30, "-20 -10 0 10 20 30"},
		{Count, -5, -1, "-5 -4 -3 -2 -1 0"},
		{Tokens, 200, 8000, "0 2k 4k 6k 8k"},
		{Tokens, 0, 2.5e6, "0 500k 1M 1.5M 2M 2.5M"},
		{Tokens, 0, 800, "0 200 400 600 800"},
		{Count, 0, 1100, "0 500 1k 1.5k"},
		{Count, 0, 1e-9, "0 2e-10 4e-10 6e-10 8e-10 1e-09"},
	} {
		sc := newScale(c.u, c.lo, c.hi)
		got := strings.Join(sc.labels(), " ")
		if got != c.want {
			t.Errorf("newScale(%v, %g, %g) = %q, want %q", c.u, c.lo, c.hi, got, c.want)
		}
	}
}

// Ticks are round, cover the data, and number 3 to 6, whatever the range.
func TestTicksCoverData(t *testing.T) {
	round := regexp.MustCompile(`^[125]0*$`)
	for _, u := range []Unit{Seconds, Ratio, Count, Tokens, Elapsed} {
		for _, lo := range []float64{-1e100, -1e12, -37, -1, -1e-9, -1e-200, 0, 5e-324, 1e-200, 1e-9, 0.3, 7, 1e12, 1e100} {
			for _, span := range []float64{0, 1e-300, 1e-9, 1e-3, 0.7, 1, 13, 999, 86400 * 3, 1e12, 1e40, 1e100} {
				hi := lo + span
				if !ok(hi) {
					continue // not drawn at all
				}
				sc := newScale(u, lo, hi)
				n := len(sc.ticks)
				if n < 3 || n > maxTicks {
					t.Errorf("%v [%g, %g]: %d ticks %v", u, lo, hi, n, sc.ticks)
					continue
				}
				// Within a millionth of the axis, which no screen shows.
				slack := (sc.hi - sc.lo) * 1e-6
				if sc.lo > math.Min(lo, 0)+slack || sc.hi < math.Max(hi, 0)-slack {
					t.Errorf("%v [%g, %g]: axis %g..%g does not cover the data", u, lo, hi, sc.lo, sc.hi)
				}
				if sc.lo > 0 || sc.hi < 0 {
					t.Errorf("%v [%g, %g]: axis %g..%g leaves out zero", u, lo, hi, sc.lo, sc.hi)
				}
				// The step's significant digits are 1, 2 or 5 (or a clock
				// step on a time axis).
				m := strconv.FormatFloat(sc.step, 'e', 6, 64)
				digits := strings.TrimRight(strings.Replace(m[:strings.IndexByte(m, 'e')], ".", "", 1), "0")
				if !round.MatchString(digits) && u != Seconds && u != Elapsed {
					t.Errorf("%v [%g, %g]: step %g is not round", u, lo, hi, sc.step)
				}
				labels := sc.labels()
				seen := map[string]bool{}
				for _, l := range labels {
					if seen[l] {
						t.Errorf("%v [%g, %g]: repeated tick label %q in %q", u, lo, hi, l, labels)
					}
					seen[l] = true
				}
			}
		}
	}
}

func TestValueFormat(t *testing.T) {
	for _, c := range []struct {
		x    float64
		u    Unit
		want string
	}{
		{1.5, Seconds, "1.50s"},
		{0.25, Seconds, "250ms"},
		{0.42, Ratio, "42%"},
		{1234, Count, "1.2k"},
		{3.456, Count, "3.46"},
		{-2500, Count, "-2.5k"},
		{2.5e9, Tokens, "2.5B"},
		{870, Elapsed, "14m30s"},
		{900, Elapsed, "15m"},
		{nan, Seconds, "n/a"},
		{inf, Count, "n/a"},
	} {
		if got := value(c.x, c.u); got != c.want {
			t.Errorf("value(%g, %v) = %q, want %q", c.x, c.u, got, c.want)
		}
	}
}

func TestEmpty(t *testing.T) {
	for name, c := range map[string]chart{
		"line nil":          Line{ID: "a"},
		"line no points":    Line{Series: []Series{{Name: "p99"}}},
		"line all NaN":      Line{Series: []Series{{Name: "p99", Points: [][2]float64{{0, nan}, {1, inf}, {nan, 1}, {-inf, 2}}}}},
		"scatter nil":       Scatter{},
		"scatter NaN":       Scatter{Points: [][2]float64{{nan, 1}, {1, nan}}, Fit: &Fit{Slope: 1}},
		"bars nil":          Bars{},
		"bars NaN":          Bars{Bars: []Bar{{Label: "a", Value: nan}, {Label: "b", Value: -inf}}},
		"stacked nil":       Stacked{Total: 3},
		"stacked NaN":       Stacked{Segments: []Segment{{"queue", nan}}},
		"line huge only":    Line{Series: []Series{{Points: [][2]float64{{0, 1e300}}}}},
		"scatter huge only": Scatter{Points: [][2]float64{{1e300, 1}}},
	} {
		if s := c.SVG(); s != "" {
			t.Errorf("%s: SVG() = %q, want empty", name, s)
		}
		if a := c.Alt(); !strings.Contains(a, "no data") {
			t.Errorf("%s: Alt() = %q", name, a)
		}
	}
}

func TestOddInputs(t *testing.T) {
	for name, c := range map[string]chart{
		"single point": Line{ID: "one", Title: "t", X: Axis{Unit: Elapsed}, Series: []Series{{Name: "p99", Points: [][2]float64{{60, 0.4}}}}},
		"equal values": Line{Series: []Series{{Points: [][2]float64{{0, 5}, {1, 5}, {2, 5}}}}},
		"all zero":     Line{Y: Axis{Unit: Count}, Series: []Series{{Points: [][2]float64{{0, 0}, {1, 0}}}}},
		"negative":     Line{Y: Axis{Unit: Count}, Series: []Series{{Points: [][2]float64{{0, -3}, {1, 4}, {2, -1e6}}}}},
		"huge":         Line{Y: Axis{Unit: Count}, Series: []Series{{Points: [][2]float64{{0, 1e12}, {1, 3e12}}}}},
		"tiny":         Line{Series: []Series{{Points: [][2]float64{{0, 1e-9}, {1e-9, 3e-9}}}}},
		"mixed NaN":    Line{X: Axis{Unit: Elapsed}, Series: []Series{{Points: [][2]float64{{0, 1}, {30, nan}, {60, 2}, {90, inf}, {120, 3}, {150, 2}}}}},
		"unsorted":     Line{Series: []Series{{Points: [][2]float64{{3, 1}, {1, 2}, {2, 3}}}}},
		"many series": Line{Series: func() []Series {
			s := make([]Series, 9)
			for i := range s {
				s[i] = Series{Name: strings.Repeat("x", i*9), Points: [][2]float64{{0, float64(i)}, {1, 1}}}
			}
			return s
		}()},
		"scatter one":    Scatter{Points: [][2]float64{{3, 4}}, Fit: &Fit{Slope: 1}},
		"scatter steep":  Scatter{Points: [][2]float64{{0, 0}, {10, 1}}, Fit: &Fit{Slope: 1e90, Intercept: -1e90}},
		"scatter nofit":  Scatter{Points: [][2]float64{{0, 0}, {10, 1}}, Fit: &Fit{Slope: nan}},
		"bars negative":  Bars{Unit: Count, Bars: []Bar{{Label: "a", Value: -3}, {Label: "b", Value: 5}, {Label: "c", Value: nan}}},
		"bars equal":     Bars{Unit: Ratio, Bars: []Bar{{Label: "a", Value: 0}, {Label: "b", Value: 0}}},
		"stacked over":   Stacked{Segments: []Segment{{"a", 2}, {"b", 3}}, Total: 1},
		"stacked tiny":   Stacked{Segments: []Segment{{"a", 100}, {"b", 0.1}, {"c", -1}, {"d", nan}}},
		"stacked zeros":  Stacked{Segments: []Segment{{"a", 0}}},
		"elapsed huge":   Line{X: Axis{Unit: Elapsed}, Y: Axis{Unit: Seconds}, Series: []Series{{Points: [][2]float64{{0, 1e12}, {1e12, 1}}}}},
		"ratio negative": Line{Y: Axis{Unit: Ratio}, Series: []Series{{Points: [][2]float64{{0, -1e-9}, {1, 1e9}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			checkSVG(t, c.SVG())
			if a := c.Alt(); a == "" || strings.Contains(a, "NaN") || strings.Contains(a, "Inf") {
				t.Errorf("Alt() = %q", a)
			}
		})
	}
}

// A missing value, or a gap in a time series, starts a new subpath; an
// isolated point is drawn as a dot.
func TestLineBreaks(t *testing.T) {
	c := Line{X: Axis{Unit: Elapsed}, Series: []Series{{Name: "a", Points: [][2]float64{
		{0, 1}, {30, 2}, {60, nan}, {90, 2}, {120, 3}, {150, 3}, {180, 2}, {480, 1}, {510, 1}, {540, 2}}}}}
	s := c.SVG()
	d := regexp.MustCompile(`<path class="data" d="(M[^"]*L[^"]*)" stroke="#0072B2"`).FindStringSubmatch(s)
	if d == nil {
		t.Fatalf("no series path in\n%s", s)
	}
	if n := strings.Count(d[1], "M"); n != 3 {
		t.Errorf("path %q has %d subpaths, want 3", d[1], n)
	}
	one := Line{Series: []Series{{Points: [][2]float64{{1, 1}}}}}.SVG()
	if !strings.Contains(one, "<circle") {
		t.Errorf("single point drawn without a marker:\n%s", one)
	}
}

func TestEscaping(t *testing.T) {
	evil := `a<b & "c" 'd' </svg><script>x</script>` + "\x00\x1b\xff\n"
	for name, c := range map[string]chart{
		"line":    Line{ID: `x" onload="y`, Title: evil, X: Axis{Label: evil}, Y: Axis{Label: evil}, Series: []Series{{Name: evil, Points: [][2]float64{{0, 1}, {1, 2}}}}},
		"scatter": Scatter{ID: "s", Title: evil, X: Axis{Label: evil}, Y: Axis{Label: evil}, Points: [][2]float64{{0, 1}}, Fit: &Fit{Slope: 1, Label: evil}},
		"bars":    Bars{ID: "b", Title: evil, Bars: []Bar{{Label: evil, Value: 1}}},
		"stacked": Stacked{ID: "st", Title: evil, Segments: []Segment{{evil, 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			s := strings.ReplaceAll(c.SVG(), "&lt;script&gt;", "")
			if strings.Contains(s, "<script") || strings.Contains(s, "onload=") {
				t.Errorf("unescaped label:\n%s", s)
			}
			checkSVG(t, s)
		})
	}
}

// Two charts on one page have distinct ids, which aria-labelledby names.
func TestIDs(t *testing.T) {
	a := Bars{ID: "p99", Title: "x", Bars: []Bar{{Label: "a", Value: 1}}}.SVG()
	b := Bars{ID: "p50", Title: "x", Bars: []Bar{{Label: "a", Value: 1}}}.SVG()
	for _, want := range []string{`<title id="p99-title">`, `<desc id="p99-desc">`, `aria-labelledby="p99-title p99-desc"`} {
		if !strings.Contains(a, want) {
			t.Errorf("missing %s in\n%s", want, a)
		}
	}
	idre := regexp.MustCompile(` id="([^"]*)"`)
	seen := map[string]bool{}
	for _, s := range []string{a, b} {
		for _, m := range idre.FindAllStringSubmatch(s, -1) {
			if seen[m[1]] {
				t.Errorf("id %q used twice on a page", m[1])
			}
			seen[m[1]] = true
		}
	}
	// Without an ID, charts with different titles still differ.
	if chartID("", "TTFT") == chartID("", "TPOT") {
		t.Error("derived ids collide")
	}
	if got := chartID("kv cache/1", ""); got != "kv-cache-1" {
		t.Errorf("chartID = %q", got)
	}
}

func TestDeterministic(t *testing.T) {
	a, b := examples(), examples()
	for name := range a {
		if a[name].SVG() != b[name].SVG() || a[name].Alt() != b[name].Alt() {
			t.Errorf("%s: output differs between calls", name)
		}
	}
}

func TestAlt(t *testing.T) {
	ex := examples()
	for name, want := range map[string][]string{
		"line_ttft":       {"Time to first token: p50 went from ", "p99 went from 1.", "max 3.", "over 14m30s"},
		"scatter_prompt":  {"60 points", "prompt tokens from ", "fit: TTFT ≈ 120ms + 35ms per 1k tokens"},
		"bars_replicas":   {"highest vllm-2 (3.42s)", "lowest vllm-3 (780ms)", "highlighted: vllm-2"},
		"line_load":       {"SLO TTFT p99 2s line at 2.00s", "SLO ITL p99 100ms line at 100ms", "knee at concurrency 4", "capacity at concurrency 8"},
		"stacked_latency": {"queue 420ms (18%)", "front 30ms (1%)", "decode 1.52s (63%)", "total 2.40s"},
	} {
		alt := ex[name].Alt()
		for _, w := range want {
			if !strings.Contains(alt, w) {
				t.Errorf("%s: Alt() = %q, want it to contain %q", name, alt, w)
			}
		}
		if svg := ex[name].SVG(); !strings.Contains(svg, "<desc id=") || !strings.Contains(svg, esc(alt)) {
			t.Errorf("%s: <desc> is not the text alternative", name)
		}
	}
}

// Reference lines and marks widen the axes to stay in view, share a line
// when at the same x, are drawn dashed over the plot, and are skipped when
// not finite; alone, with no data, they are no chart.
func TestRefsAndMarks(t *testing.T) {
	pts := [][2]float64{{1, 0.2}, {2, 0.3}, {4, 0.5}}
	c := Line{ID: "l", Title: "t", X: Axis{Label: "concurrency", Unit: Count}, Y: Axis{Unit: Seconds},
		Series: []Series{{Name: "p99", Points: pts}},
		Refs:   []Ref{{Y: 3, Label: "SLO 3s"}, {Y: nan, Label: "nan ref"}, {Y: inf}},
		Marks:  []Mark{{X: 4, Label: "knee"}, {X: 4, Label: "capacity"}, {X: 9, Label: "beyond"}, {X: nan, Label: "nan mark"}}}
	s := c.SVG()
	checkSVG(t, s)
	d := c.data()
	if d.ymax != 3 || d.xmax != 9 {
		t.Errorf("axes end at x %v, y %v; want the ref (3) and the mark (9) in view", d.xmax, d.ymax)
	}
	if n := strings.Count(s, `<path d="M`); n < 1 {
		t.Fatalf("no lines drawn:\n%s", s)
	}
	refs := regexp.MustCompile(`(?s)<g class="ref"[^>]*stroke-dasharray[^>]*>(.*?)</g>`).FindStringSubmatch(s)
	if refs == nil || strings.Count(refs[1], "<path") != 1 {
		t.Errorf("want one dashed reference line, got %q", refs)
	}
	marks := regexp.MustCompile(`(?s)<g class="mark"[^>]*>(.*?)</g>`).FindStringSubmatch(s)
	if marks == nil || strings.Count(marks[1], "<path") != 2 {
		t.Errorf("want two mark lines (4 shared, 9), got %q", marks)
	}
	for _, want := range []string{">SLO 3s</text>", ">knee, capacity</text>", ">beyond</text>"} {
		if !strings.Contains(s, want) {
			t.Errorf("no label %s in\n%s", want, s)
		}
	}
	alt := c.Alt()
	for _, want := range []string{"SLO 3s line at 3.00s", "knee, capacity at concurrency 4", "beyond at concurrency 9"} {
		if !strings.Contains(alt, want) {
			t.Errorf("Alt() = %q, want %q", alt, want)
		}
	}
	for _, bad := range []string{"nan", "NaN", "Inf"} {
		if strings.Contains(s, bad) || strings.Contains(alt, bad) {
			t.Errorf("non-finite ref or mark drawn or named (%q):\n%s\n%s", bad, alt, s)
		}
	}
	if s := (Line{Series: []Series{{Name: "p99"}}, Refs: []Ref{{Y: 1, Label: "SLO"}}, Marks: []Mark{{X: 1}}}).SVG(); s != "" {
		t.Errorf("references alone drew a chart:\n%s", s)
	}
}
