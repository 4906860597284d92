package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
)

// ChecklistJSON writes the checklist contract (schema llmdoctor.checklist/v1).
func ChecklistJSON(w io.Writer, c *advisor.Checklist) error { return writeJSON(w, c) }

func itemMark(status string) string {
	switch status {
	case advisor.Pass:
		return "✓ PASS"
	case advisor.Fail:
		return "✗ FAIL"
	}
	return "? CANNOT CHECK"
}

// ChecklistText writes the checklist for people.
func ChecklistText(w io.Writer, c *advisor.Checklist, o TextOptions) error {
	width := o.Width
	if width <= 0 {
		width = 80
	}
	st := newStyles(w, ColorOn(o.Color, o.IsTerminal))
	p := &printer{w: w, width: width, st: st}
	verdict := st.ok.Render("✓ READY")
	if c.Status != advisor.Pass {
		verdict = st.crit.Render("✗ NOT READY")
	}
	p.line(st.head.Render("llmdoctor pre-launch checklist") + "  " + verdict)
	for _, s := range c.Sources {
		p.wrap("  ", sourceLine(s))
	}
	for _, n := range c.Notes {
		p.wrap("  ", "note: "+n)
	}
	for _, t := range c.Targets {
		p.blank()
		p.line(st.head.Render("── " + targetName(t.Target)))
		for _, it := range t.Items {
			mark := itemMark(it.Status)
			switch {
			case it.Status == advisor.Pass:
				mark = st.ok.Render(mark)
			case it.Status == advisor.Fail && it.Blocking:
				mark = st.crit.Render(mark)
			default:
				mark = st.warn.Render(mark)
			}
			advisory := ""
			if !it.Blocking {
				advisory = " (advisory)"
			}
			p.wrap("  ", mark+" "+it.Title+advisory)
			if it.Message != "" {
				p.wrap("      ", it.Message)
			}
			for _, f := range it.Fix {
				p.wrap("      ", st.dim.Render(fmt.Sprintf("fix [%s]: %s", f.Cost, f.Do)))
			}
			if it.How != "" {
				p.wrap("      ", st.dim.Render("how: "+it.How))
			}
		}
		p.blank()
		p.line(st.dim.Render(fmt.Sprintf("%d passed · %d failed · %d could not be checked%s", t.Passed, t.Failed, t.CannotCheck,
			map[bool]string{true: " (strict: counts as failed)", false: ""}[c.Strict && t.CannotCheck > 0])))
	}
	return p.err
}

// ChecklistMarkdown writes a table per target, for pull requests and wikis.
func ChecklistMarkdown(w io.Writer, c *advisor.Checklist) error {
	var b strings.Builder
	status := "✅ ready"
	if c.Status != advisor.Pass {
		status = "❌ not ready"
	}
	fmt.Fprintf(&b, "# Pre-launch checklist: %s\n\n", status)
	for _, t := range c.Targets {
		fmt.Fprintf(&b, "## %s\n\n| | item | details |\n|---|---|---|\n", targetName(t.Target))
		for _, it := range t.Items {
			details := it.Message
			if it.Status == advisor.CannotCheck && it.How != "" {
				details += " — how: " + it.How
			}
			for _, f := range it.Fix {
				details += " — fix: " + f.Do
			}
			fmt.Fprintf(&b, "| %s | [%s](%s) | %s |\n", itemMark(it.Status), it.Title, it.Docs, mdEscape(details))
		}
		fmt.Fprintf(&b, "\n%d passed, %d failed, %d could not be checked.\n\n", t.Passed, t.Failed, t.CannotCheck)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// JUnit structure (JUnit 4 XML as CI systems read it).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// ChecklistJUnit writes JUnit XML: a failed item is a failure, an item that
// cannot be checked is skipped (a failure under --strict), an advisory
// failure passes with its message in system-out.
func ChecklistJUnit(w io.Writer, c *advisor.Checklist) error {
	out := junitSuites{Name: "llmdoctor checklist"}
	for _, t := range c.Targets {
		s := junitSuite{Name: "llmdoctor checklist: " + targetName(t.Target), Time: "0"}
		for _, it := range t.Items {
			tc := junitCase{Name: it.ID + ": " + it.Title, Classname: "llmdoctor.checklist", Time: "0"}
			body := it.Message
			if len(it.Evidence) > 0 {
				keys := make([]string, 0, len(it.Evidence))
				for k := range it.Evidence {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					body += fmt.Sprintf("\n%s = %s", k, formatValue(k, it.Evidence[k]))
				}
			}
			switch {
			case it.Status == advisor.Fail && it.Blocking,
				it.Status == advisor.CannotCheck && c.Strict && it.Blocking:
				tc.Failure = &junitMessage{Message: it.Message, Type: it.Status, Body: body + howText(it)}
				s.Failures++
			case it.Status == advisor.CannotCheck:
				tc.Skipped = &junitMessage{Message: "cannot check: " + it.Message + howText(it)}
				s.Skipped++
			default:
				tc.SystemOut = it.Message
			}
			s.Cases = append(s.Cases, tc)
			s.Tests++
		}
		out.Suites = append(out.Suites, s)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func howText(it advisor.Item) string {
	if it.How == "" {
		return ""
	}
	return " (how: " + it.How + ")"
}
