package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/view"
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
func (markdownRenderer) Probe(io.Writer, *probe.Result, Options) error {
	return &UnsupportedError{"markdown", ProbeDoc}
}

func (markdownRenderer) Checklist(w io.Writer, c *advisor.Checklist, _ Options) error {
	return ChecklistMarkdown(w, c)
}

// ChecklistMarkdown writes a table per target, for pull requests and wikis.
func ChecklistMarkdown(w io.Writer, c *advisor.Checklist) error {
	v := view.ChecklistOf(c)
	var b strings.Builder
	status := map[string]string{view.Healthy: "✅ ready", view.Critical: "❌ not ready"}[v.Severity]
	if status == "" {
		status = "⚠️ not verified"
	}
	fmt.Fprintf(&b, "# Pre-launch checklist: %s\n\n", status)
	if v.Unverified != "" {
		fmt.Fprintf(&b, "%s\n\n", mdEscape(v.Unverified))
	}
	if v.Empty != "" {
		fmt.Fprintf(&b, "%s\n\n", mdEscape(v.Empty))
	}
	for _, t := range v.Targets {
		fmt.Fprintf(&b, "## %s\n\n| | item | details |\n|---|---|---|\n", t.Name)
		for _, it := range t.Items {
			details := it.Message
			if it.Status == advisor.CannotCheck && it.How != "" {
				details += " — how: " + it.How
			}
			for _, f := range it.Fix {
				details += " — fix: " + f.Do
			}
			fmt.Fprintf(&b, "| %s | [%s](%s) | %s |\n", it.Mark, it.Title, it.Docs, mdEscape(details))
		}
		fmt.Fprintf(&b, "\n%s.\n\n", t.Counts)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
