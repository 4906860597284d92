package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	stdhtml "html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/compare"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
	"github.com/llmdoctor/llmdoctor/simrun"
)

// said is what one format says of a target: the verdict's status
// (found, tentative, healthy, suppressed, inconclusive), what it names,
// its severity, and the next steps in order.
type said struct {
	Status, Names, Severity string
	Steps                   []string
}

func (s said) String() string {
	return fmt.Sprintf("%s %s (%s), steps %q", s.Status, s.Names, s.Severity, s.Steps)
}

// agreeCase is a source set to diagnose and check.
type agreeCase struct {
	name string
	src  diagnosis.Sources
	// sc, when set, is a built-in scenario simulated in process instead.
	sc *sim.Scenario
}

// agreeCases are every example, real case, independent simulator window
// and built-in scenario; the quick tier keeps a handful that cover every
// status and severity.
func agreeCases(t *testing.T) []agreeCase {
	t.Helper()
	root := filepath.Join("..")
	var all []agreeCase
	exs, _ := filepath.Glob(filepath.Join(root, "examples", "*", "start.prom"))
	for _, s := range exs {
		dir := filepath.Dir(s)
		all = append(all, agreeCase{name: "examples/" + filepath.Base(dir),
			src: diagnosis.Sources{Snapshots: []string{s, filepath.Join(dir, "end.prom")}, SnapshotInterval: 15 * time.Minute}})
	}
	ycs, _ := filepath.Glob(filepath.Join(root, "diagnosis", "testdata", "realcases", "*.yaml"))
	posted := regexp.MustCompile(`(?m)^posted:\s*"?(\d{4})-`)
	for _, y := range ycs {
		base := strings.TrimSuffix(y, ".yaml")
		c := agreeCase{name: "realcases/" + filepath.Base(base)}
		if _, err := os.Stat(base + ".log"); err == nil {
			year := 2025
			if b, err := os.ReadFile(y); err == nil {
				if m := posted.FindSubmatch(b); m != nil {
					year, _ = strconv.Atoi(string(m[1]))
				}
			}
			c.src.Log = &diagnosis.LogSource{Path: base + ".log", Year: year}
		} else {
			c.src.Snapshots = []string{base + ".prom"}
		}
		all = append(all, c)
	}
	pss, _ := filepath.Glob(filepath.Join(root, "diagnosis", "testdata", "peersim", "*", "case.yaml"))
	for _, p := range pss {
		dir := filepath.Dir(p)
		snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.prom"))
		all = append(all, agreeCase{name: "peersim/" + filepath.Base(dir),
			src: diagnosis.Sources{Snapshots: snaps, SnapshotInterval: 5 * time.Second, Bench: []string{filepath.Join(dir, "bench.json")}}})
	}
	scs, err := sim.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs {
		all = append(all, agreeCase{name: "scenario/" + sc.Name, sc: sc})
	}
	if len(all) < 40 {
		t.Fatalf("only %d cases found: is the test run from report/?", len(all))
	}
	if testkit.Heavy() {
		return all
	}
	// Critical found, healthy, inconclusive, tentative healthy, tentative
	// warning, and one simulated scenario.
	quick := []string{"examples/queueing", "examples/healthy", "examples/v0-healthy", "realcases/sglang-22166-closed-loop-healthy",
		"realcases/antsglang-4-h20-dp-batch-cap", "scenario/decode-bound"}
	var out []agreeCase
	for _, c := range all {
		if slices.Contains(quick, c.name) {
			out = append(out, c)
		}
	}
	if len(out) != len(quick) {
		t.Fatalf("quick cases: found %d of %d", len(out), len(quick))
	}
	return out
}

// Every format says the same verdict, status and severity of every target,
// and gives the next steps in the same order, as the JSON contract holds
// them: each format's output is parsed back, so a renderer that decides
// anything on its own is caught. The checklist's gate is the same in every
// format too, and so is a comparison's verdict. The quick tier runs a
// handful of cases (every status and severity, a suppressed root cause, no
// target); LLMDOCTOR_HEAVY=1 runs every example, real case, independent
// simulator window and built-in scenario.
func TestFormatsAgree(t *testing.T) {
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	items, err := rules.ChecklistItems()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range agreeCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var d *advisor.Diagnosis
			var cl *advisor.Checklist
			if c.sc != nil {
				d, err = simrun.Diagnose(context.Background(), c.sc, simrun.Options{Rules: set})
			} else {
				var in *diagnosis.Input
				in, err = diagnosis.Read(context.Background(), c.src, nil)
				if err == nil {
					d, cl = in.Diagnose(set, nil), in.Checklist(items, nil, false)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			agreeDiagnosis(t, d)
			if cl != nil {
				agreeChecklist(t, cl)
			}
		})
	}
	t.Run("no target", func(t *testing.T) {
		agreeDiagnosis(t, &advisor.Diagnosis{Schema: advisor.Schema, Targets: []advisor.TargetReport{}})
	})
	// Every finding suppressed: the root cause is still named, as suppressed.
	t.Run("suppressed", func(t *testing.T) {
		in, err := diagnosis.Read(context.Background(), agreeSources("queueing"), nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &rules.Config{}
		for _, f := range in.Diagnose(set, nil).Targets[0].Findings {
			cfg.Suppress = append(cfg.Suppress, rules.Suppression{Rule: f.Rule, Reason: "known"})
		}
		d := in.Diagnose(set, cfg)
		if st := d.Targets[0].Primary.Status; st != "suppressed" {
			t.Fatalf("status %s with every finding suppressed", st)
		}
		agreeDiagnosis(t, d)
	})
	// Comparisons: the same verdict in every format, as the contract has it.
	t.Run("compare", func(t *testing.T) {
		diags := map[string]*advisor.Diagnosis{}
		for _, ex := range []string{"queueing", "healthy", "v0-healthy"} {
			in, err := diagnosis.Read(context.Background(), agreeSources(ex), nil)
			if err != nil {
				t.Fatal(err)
			}
			diags[ex] = in.Diagnose(set, nil)
		}
		// Not comparable, no change, inconclusive.
		for _, p := range [][2]string{{"queueing", "healthy"}, {"healthy", "healthy"}, {"v0-healthy", "healthy"}} {
			c := compare.Compare(diags[p[0]], diags[p[1]], p[0], p[1], compare.Options{})
			c.Gate(map[string]float64{"ttft_p99": 0.1})
			agreeComparison(t, c)
		}
	})
}

// agreeSources reads an example as the quick start does.
func agreeSources(example string) diagnosis.Sources {
	dir := filepath.Join("..", "examples", example)
	return diagnosis.Sources{Snapshots: []string{filepath.Join(dir, "start.prom"), filepath.Join(dir, "end.prom")},
		SnapshotInterval: 15 * time.Minute}
}

// agreeComparison: the text, Markdown, HTML and Slack forms of a
// comparison say each target's verdict as the JSON does, and whether a gate
// went unjudged.
func agreeComparison(t *testing.T, c *compare.Comparison) {
	t.Helper()
	words := map[string]string{compare.NoChange: "no change", compare.Changed: "changed", compare.NotComparable: "not comparable",
		compare.Inconclusive: "inconclusive"}
	var want []string
	for _, tg := range c.Targets {
		want = append(want, words[tg.Verdict])
	}
	var b bytes.Buffer
	if err := report.ComparisonText(&b, c, report.Options{Color: "never", Width: 100000}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	b.Reset()
	if err := report.ComparisonMarkdown(&b, c); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	b.Reset()
	if err := report.ComparisonHTML(&b, c, report.Options{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	b.Reset()
	if err := report.ComparisonSlack(&b, c); err != nil {
		t.Fatal(err)
	}
	var msgs []struct {
		Main struct {
			Attachments []struct {
				Blocks []struct{ Text struct{ Text string } }
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &msgs); err != nil {
		t.Fatal(err)
	}
	var slackSaid []string
	for _, m := range msgs {
		h := m.Main.Attachments[0].Blocks[0].Text.Text
		if v := regexp.MustCompile(`^[=Δ?✗] ([A-Z ]+?)(, GATE NOT JUDGED)? · `).FindStringSubmatch(h); v != nil {
			slackSaid = append(slackSaid, strings.ToLower(v[1]))
		}
	}
	lower := func(ms [][]string) []string {
		var out []string
		for _, m := range ms {
			out = append(out, strings.ToLower(m[1]))
		}
		return out
	}
	got := map[string][]string{
		"text":     lower(regexp.MustCompile(`(?m)^── .*\n[=Δ?] ([A-Z][A-Z ]*[A-Z])\b`).FindAllStringSubmatch(text, -1)),
		"markdown": lower(regexp.MustCompile(`(?m)^\*\*[=Δ?] ([a-z ]+)\*\* — `).FindAllStringSubmatch(md, -1)),
		"html":     lower(regexp.MustCompile(`<span class="badge \w+">[=Δ?] ([a-z ]+)</span></h2>`).FindAllStringSubmatch(page, -1)),
		"slack":    slackSaid,
	}
	if len(c.Regressions) == 0 {
		// A gate that regressed says so in Slack's header instead.
		for f, g := range got {
			if strings.Join(g, "; ") != strings.Join(want, "; ") {
				t.Errorf("%s → %s: %s says %q, the contract %q", c.Before.Name, c.After.Name, f, g, want)
			}
		}
	}
	if unjudged := len(c.Unevaluated) > 0; unjudged != strings.Contains(text, "NOT JUDGED") ||
		unjudged != strings.Contains(md, "not judged") || unjudged != strings.Contains(page, "not judged") {
		t.Errorf("%s → %s: unjudged gates %v, not said alike in every format", c.Before.Name, c.After.Name, c.Unevaluated)
	}
}

func render(t *testing.T, format string, doc report.Document, v any, o report.Options) string {
	t.Helper()
	r, ok := report.Lookup(format)
	if !ok {
		t.Fatalf("no %s renderer", format)
	}
	var b bytes.Buffer
	switch doc {
	case report.DiagnosisDoc:
		err := r.Diagnosis(&b, v.(*advisor.Diagnosis), o)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
	default:
		if err := r.Checklist(&b, v.(*advisor.Checklist), o); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
	}
	return b.String()
}

func agreeDiagnosis(t *testing.T, d *advisor.Diagnosis) {
	t.Helper()
	// The contract is the reference: read back from the JSON output.
	var back advisor.Diagnosis
	if err := json.Unmarshal([]byte(render(t, "json", report.DiagnosisDoc, d, report.Options{})), &back); err != nil {
		t.Fatal(err)
	}
	var want []said
	for _, tr := range back.Targets {
		want = append(want, contractSays(tr))
	}
	wide := report.Options{Color: "never", Width: 100000, Details: true}
	got := map[string][]said{
		"text":         textSays(render(t, "text", report.DiagnosisDoc, d, wide)),
		"text (first)": textSays(render(t, "text", report.DiagnosisDoc, d, report.Options{Color: "never", Width: 100000})),
		"slack":        slackSays(t, render(t, "slack", report.DiagnosisDoc, d, report.Options{})),
		"html":         htmlSays(t, render(t, "html", report.DiagnosisDoc, d, report.Options{})),
	}
	for _, f := range report.Names(report.DiagnosisDoc) {
		if _, ok := got[f]; !ok && f != "json" {
			t.Errorf("the %s format renders a diagnosis and is not in the agreement test", f)
		}
	}
	for format, g := range got {
		if len(g) != len(want) {
			t.Errorf("%s: %d targets, the contract %d", format, len(g), len(want))
			continue
		}
		for i := range want {
			w := want[i]
			if format == "text (first)" {
				// The first screen shows the first steps, the rest counted.
				w.Steps = w.Steps[:min(len(w.Steps), len(g[i].Steps))]
				if len(g[i].Steps) < min(len(want[i].Steps), 5) {
					t.Errorf("%s: %d steps of %d", format, len(g[i].Steps), len(want[i].Steps))
				}
			}
			if g[i].String() != w.String() {
				t.Errorf("%s says %s\n  the contract %s", format, g[i], w)
			}
		}
	}
	if len(d.Targets) == 0 {
		text := render(t, "text", report.DiagnosisDoc, d, wide)
		for _, f := range []string{"slack", "html"} {
			out := stdhtml.UnescapeString(render(t, f, report.DiagnosisDoc, d, report.Options{}))
			line := regexp.MustCompile(`(?m)^No .*: nothing to diagnose\.$`).FindString(text)
			if line == "" || !strings.Contains(out, line) {
				t.Errorf("text says %q when nothing was found; %s does not", line, f)
			}
		}
	}
}

// contractSays is what the JSON contract says of a target.
func contractSays(tr advisor.TargetReport) said {
	s := said{Status: tr.Primary.Status, Names: tr.Primary.Bottleneck}
	for _, f := range tr.Findings {
		if f.Rule == tr.Primary.Rule {
			s.Severity = f.Severity
		}
	}
	switch {
	case s.Status == "healthy" || (s.Status == "tentative" && s.Names == "none"):
		s.Names, s.Severity = "healthy", "healthy"
	case s.Status == "suppressed":
		s.Severity = "warning"
	case s.Status == "found" || s.Status == "tentative":
		if s.Severity != "critical" && s.Severity != "warning" {
			s.Severity = "info"
		}
	default:
		s.Names, s.Severity = "inconclusive", "inconclusive"
	}
	for _, st := range tr.Next {
		s.Steps = append(s.Steps, "["+st.Cost+"] "+st.Do)
	}
	return s
}

var markSeverity = map[string]string{"✗ CRITICAL": "critical", "! WARNING": "warning", "i INFO": "info", "✓": "healthy",
	"✓ HEALTHY": "healthy", "?": "inconclusive", "? INCONCLUSIVE": "inconclusive", "~": "warning", "~ SUPPRESSED": "warning"}

var (
	textVerdict = regexp.MustCompile(`^(✗ CRITICAL|! WARNING|i INFO|✓|~|\?) (TENTATIVE )?VERDICT (\S+?)(, suppressed)?: `)
	textStep    = regexp.MustCompile(`^  \d+\. (\[\w+\] .*)$`)
)

// textSays reads each target's verdict line and its numbered steps.
func textSays(out string) []said {
	var ss []said
	steps := false
	for _, l := range strings.Split(out, "\n") {
		if m := textVerdict.FindStringSubmatch(l); m != nil {
			s := said{Status: "found", Names: m[3], Severity: markSeverity[m[1]]}
			switch {
			case m[2] != "":
				s.Status = "tentative"
			case m[4] != "":
				s.Status = "suppressed"
			case m[3] == "healthy" || m[3] == "inconclusive":
				s.Status = m[3]
			}
			ss = append(ss, s)
			continue
		}
		switch {
		case len(ss) == 0:
		case l == "Next steps, cheapest first":
			steps = true
		case l == "" || !strings.HasPrefix(l, " "):
			steps = false
		case steps:
			if m := textStep.FindStringSubmatch(l); m != nil {
				ss[len(ss)-1].Steps = append(ss[len(ss)-1].Steps, m[1])
			}
		}
	}
	return ss
}

var (
	slackHeader = regexp.MustCompile(`^(✗ CRITICAL|! WARNING|i INFO|✓ HEALTHY|~ SUPPRESSED|\? INCONCLUSIVE)( \(tentative\))?(?:: (\S+))? · `)
	slackStep   = regexp.MustCompile(`(?m)^\d+\. (\[\w+\] .*)$`)
)

// slackSays reads each message's header, its colour and the steps in the
// message and its thread.
func slackSays(t *testing.T, out string) []said {
	t.Helper()
	var msgs []struct {
		Target, Severity string
		Main             struct {
			Attachments []struct {
				Blocks []struct {
					Type string
					Text struct{ Text string }
				}
			}
		}
		Details []struct {
			Blocks []struct {
				Type string
				Text struct{ Text string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &msgs); err != nil {
		t.Fatal(err)
	}
	var ss []said
	for _, m := range msgs {
		if m.Target == "" {
			continue // nothing to diagnose
		}
		blocks := m.Main.Attachments[0].Blocks
		h := slackHeader.FindStringSubmatch(blocks[0].Text.Text)
		if h == nil {
			t.Errorf("slack header %q", blocks[0].Text.Text)
			continue
		}
		s := said{Status: "found", Names: h[3], Severity: markSeverity[h[1]]}
		switch {
		case h[2] != "":
			s.Status = "tentative"
		case h[1] == "~ SUPPRESSED":
			s.Status = "suppressed"
		case h[1] == "✓ HEALTHY":
			s.Status = "healthy"
		case h[1] == "? INCONCLUSIVE":
			s.Status = "inconclusive"
		}
		if s.Names == "" {
			s.Names = s.Severity
		}
		// The colour bar says the severity too (info has a warning's).
		if colour := map[string]string{"info": "warning"}[s.Severity]; colour != m.Severity && s.Severity != m.Severity {
			t.Errorf("slack: %s verdict with a %s bar", s.Severity, m.Severity)
		}
		texts := []string{}
		for _, b := range blocks {
			texts = append(texts, b.Text.Text)
		}
		for _, d := range m.Details {
			for _, b := range d.Blocks {
				texts = append(texts, b.Text.Text)
			}
		}
		for _, x := range texts {
			if strings.HasPrefix(x, "*Next steps, cheapest first*") || strings.HasPrefix(x, "*Next steps, continued*") {
				for _, st := range slackStep.FindAllStringSubmatch(x, -1) {
					s.Steps = append(s.Steps, stdhtml.UnescapeString(st[1]))
				}
			}
		}
		ss = append(ss, s)
	}
	return ss
}

// htmlSays reads each target section: its badge, its verdict line and its
// ordered list of next steps.
func htmlSays(t *testing.T, out string) []said {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var ss []said
	var walk func(n *html.Node, in func(*html.Node))
	walk = func(n *html.Node, in func(*html.Node)) {
		in(n)
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, in)
		}
	}
	attr := func(n *html.Node, k string) string {
		for _, a := range n.Attr {
			if a.Key == k {
				return a.Val
			}
		}
		return ""
	}
	text := func(n *html.Node) string {
		var b strings.Builder
		walk(n, func(c *html.Node) {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			}
		})
		return strings.Join(strings.Fields(b.String()), " ")
	}
	verdictLine := regexp.MustCompile(`^(✗|!|i|✓|~|\?) (critical|warning|info|healthy|suppressed|inconclusive)(, tentative)? (Tentative verdict|Verdict): (\S+?)(, suppressed)?$`)
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode || n.Data != "section" || !strings.Contains(attr(n, "class"), "target") {
			return
		}
		var s said
		walk(n, func(c *html.Node) {
			if c.Type != html.ElementNode {
				return
			}
			switch {
			case c.Data == "p" && attr(c, "class") == "verdict-line":
				m := verdictLine.FindStringSubmatch(text(c))
				if m == nil {
					t.Errorf("html verdict line %q", text(c))
					return
				}
				s.Names, s.Severity, s.Status = m[5], m[2], "found"
				switch {
				case m[3] != "" || m[4] == "Tentative verdict":
					s.Status = "tentative"
				case m[6] != "":
					s.Status, s.Severity = "suppressed", "warning"
				case m[5] == "healthy" || m[5] == "inconclusive":
					s.Status = m[5]
				}
			case c.Data == "ol" && attr(c, "class") == "next":
				for li := c.FirstChild; li != nil; li = li.NextSibling {
					if li.Type != html.ElementNode || li.Data != "li" {
						continue
					}
					var cost, do string
					for x := li.FirstChild; x != nil; x = x.NextSibling {
						switch {
						case x.Type == html.ElementNode && attr(x, "class") == "cost":
							cost = text(x)
						case x.Type == html.TextNode && do == "":
							do = strings.TrimSpace(x.Data)
						}
					}
					s.Steps = append(s.Steps, "["+cost+"] "+do)
				}
			}
		})
		ss = append(ss, s)
	})
	return ss
}

// agreeChecklist: every format says the same gate.
func agreeChecklist(t *testing.T, c *advisor.Checklist) {
	t.Helper()
	want := map[string]string{advisor.Pass: "ready", advisor.Fail: "not ready", advisor.Unverified: "not verified"}[c.Status]
	got := map[string]string{}
	text := render(t, "text", report.ChecklistDoc, c, report.Options{Color: "never", Width: 100000})
	if m := regexp.MustCompile(`^llmdoctor pre-launch checklist  (✓ READY|✗ NOT READY|\? NOT VERIFIED)`).FindStringSubmatch(text); m != nil {
		got["text"] = strings.ToLower(strings.TrimLeft(m[1], "✓✗? "))
	}
	md := render(t, "markdown", report.ChecklistDoc, c, report.Options{})
	if m := regexp.MustCompile(`^# Pre-launch checklist: \S+ (ready|not ready|not verified)`).FindStringSubmatch(md); m != nil {
		got["markdown"] = m[1]
	}
	page := render(t, "html", report.ChecklistDoc, c, report.Options{})
	if m := regexp.MustCompile(`<h1>llmdoctor pre-launch checklist <span class="badge \w+">(✓ READY|✗ NOT READY|\? NOT VERIFIED)</span>`).FindStringSubmatch(page); m != nil {
		got["html"] = strings.ToLower(strings.TrimLeft(m[1], "✓✗? "))
	}
	var js struct{ Status string }
	if err := json.Unmarshal([]byte(render(t, "json", report.ChecklistDoc, c, report.Options{})), &js); err == nil {
		got["json"] = map[string]string{advisor.Pass: "ready", advisor.Fail: "not ready", advisor.Unverified: "not verified"}[js.Status]
	}
	// JUnit: a failure where, and only where, the gate is not ready.
	var ju struct {
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
	}
	if err := xml.Unmarshal([]byte(render(t, "junit", report.ChecklistDoc, c, report.Options{})), &ju); err == nil {
		switch {
		case ju.Failures > 0:
			got["junit"] = "not ready"
		case ju.Skipped > 0 && c.BlockingUnchecked > 0:
			got["junit"] = "not verified"
		default:
			got["junit"] = "ready"
		}
	}
	// Slack: one message per target; the gate is the worst of them.
	var msgs []struct {
		Main struct {
			Attachments []struct {
				Blocks []struct{ Text struct{ Text string } }
			}
		}
	}
	if err := json.Unmarshal([]byte(render(t, "slack", report.ChecklistDoc, c, report.Options{})), &msgs); err == nil {
		worst := ""
		rank := map[string]int{"ready": 1, "not verified": 2, "not ready": 3}
		for _, m := range msgs {
			h := m.Main.Attachments[0].Blocks[0].Text.Text
			if m := regexp.MustCompile(`^(✓ READY|✗ NOT READY|\? NOT VERIFIED) · `).FindStringSubmatch(h); m != nil {
				if g := strings.ToLower(strings.TrimLeft(m[1], "✓✗? ")); rank[g] > rank[worst] {
					worst = g
				}
			}
		}
		got["slack"] = worst
	}
	for _, f := range report.Names(report.ChecklistDoc) {
		if got[f] != want {
			t.Errorf("checklist: %s says %q, the gate is %q", f, got[f], want)
		}
	}
}
