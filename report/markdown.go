package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
)

func init() { Register(markdownRenderer{}) }

// markdownRenderer writes a checklist as tables, for pull requests and wikis.
type markdownRenderer struct{}

func (markdownRenderer) Name() string { return "markdown" }
func (markdownRenderer) Describe() string {
	return "a table per target, for pull requests and wikis (checklist only)"
}
func (markdownRenderer) Renders(doc Document) bool { return doc == ChecklistDoc }
func (markdownRenderer) Diagnosis(io.Writer, *advisor.Diagnosis, Options) error {
	return &UnsupportedError{Renderer: "markdown", Document: DiagnosisDoc}
}
func (markdownRenderer) Checklist(w io.Writer, c *advisor.Checklist, _ Options) error {
	return ChecklistMarkdown(w, c)
}

// ChecklistMarkdown writes a table per target, for pull requests and wikis.
func ChecklistMarkdown(w io.Writer, c *advisor.Checklist) error {
	var b strings.Builder
	status := "✅ ready"
	switch c.Status {
	case advisor.Fail:
		status = "❌ not ready"
	case advisor.Unverified:
		status = "⚠️ not verified"
	}
	fmt.Fprintf(&b, "# Pre-launch checklist: %s\n\n", status)
	if why := checklistUnverified(c); why != "" {
		fmt.Fprintf(&b, "%s\n\n", mdEscape(why))
	}
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
