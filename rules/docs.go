package rules

//go:generate go run ./gendocs ../docs/rules

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/internal/wrap"
)

// Doc renders a rule's documentation page from its file, as Markdown.
func Doc(r *Rule) string { return docPage(r).markdown() }

// DocText renders the same page for a terminal width columns wide: no
// markup, paragraphs wrapped, sections as a man page's.
func DocText(r *Rule, width int) string { return docPage(r).text(width) }

// A page is a rule's documentation as blocks, so that the Markdown and the
// terminal text say the same. Text inside blocks may hold `code` and
// **strong** spans, and <br> in table cells.
type page []block

type block struct {
	kind blockKind
	text string     // heading, para, code, comment
	list []string   // list
	head []string   // table; nil for a table without a header
	rows [][]string // table
}

type blockKind int

const (
	title blockKind = iota // the page's heading
	section
	para
	code
	list
	table
	comment // Markdown only
)

func docPage(r *Rule) page {
	var p page
	add := func(k blockKind, text string) { p = append(p, block{kind: k, text: text}) }
	add(title, r.ID)
	add(comment, "Generated from "+r.File+" by `go generate ./rules`; edit the rule file.")
	add(para, "**"+r.Title+"**")
	facts := [][]string{{"bottleneck", "`" + r.Bottleneck + "`"}, {"severity", r.Sev.String()}, {"layer", r.Layer}}
	item := strings.HasPrefix(r.ID, "check/")
	if r.Stage != "" && !item {
		facts = append(facts, []string{"stage", "`" + r.Stage + "`"})
	}
	if len(r.Explains) > 0 {
		facts = append(facts, []string{"explains", "`" + strings.Join(r.Explains, "`, `") + "`"})
	}
	for _, x := range slices.Sorted(maps.Keys(r.ExplainsIf)) {
		facts = append(facts, []string{"explains `" + x + "` when", "`" + strings.Join(strings.Fields(r.ExplainsIf[x]), " ") + "`"})
	}
	p = append(p, block{kind: table, rows: facts})
	add(section, "Why")
	add(para, strings.TrimSpace(r.Why))
	if r.Applies != "" {
		add(section, "Applies when")
		add(code, strings.TrimSpace(r.Applies))
		add(para, "Elsewhere the rule is quiet: it has nothing to judge.")
	}
	if r.SkipIf != "" {
		add(section, "Skipped when")
		add(code, strings.TrimSpace(r.SkipIf))
		add(para, "There the rule is quiet: it does not apply. Where that is unknown, it runs.")
	}
	if r.Item != "" {
		add(para, "As a checklist item: **"+r.Item+"**")
	}
	if len(r.Needs) > 0 {
		add(para, fmt.Sprintf("Needs %s data; without it a diagnosis skips the rule (the checklist reports it as cannot-check).", strings.Join(r.Needs, " and ")))
	}
	if item {
		add(section, "Fails when")
	} else {
		add(section, "Fires when")
	}
	add(code, strings.TrimSpace(r.When))
	if r.DeniesHealthy {
		add(para, "Where it fires the target is not healthy, whatever the severity: unless another finding names a cause, the verdict is inconclusive, with this finding as what stands against healthy.")
	}
	if r.Plain != "" {
		add(section, "On one reading")
		add(para, "Where the gauges it reads rest on fewer samples than a window needs (one snapshot), it fires on what one reading shows plainly, and its finding and the verdict it leads to are tentative:")
		add(code, strings.TrimSpace(r.Plain))
	}
	switch {
	case r.Impact != "":
		add(para, "Share of latency it accounts for (its impact): `"+strings.TrimSpace(r.Impact)+"`.")
	case r.Stage != "" && !item:
		add(para, fmt.Sprintf("Share of latency it accounts for (its impact): `stage.share.%s`, the share its stage holds. "+
			"Under `min_share` (default 20%%) the finding cannot be critical or the verdict.", r.Stage))
	}
	if len(r.Bound) > 0 || len(r.conjuncts) > 0 {
		add(section, "When inputs are missing")
		add(para, "The rule is quiet, with the reason named, when the inputs that are there show it cannot fire:")
		var l []string
		for _, x := range r.Bound {
			l = append(l, "`"+strings.Join(strings.Fields(x.If), " ")+"`")
		}
		if len(r.conjuncts) > 0 {
			l = append(l, "any part of the condition above (joined by `&&`) that reads only inputs that are there and is false.")
		}
		p = append(p, block{kind: list, list: l})
	}
	add(section, "Evidence it reads")
	reads := block{kind: table, head: []string{"field", "unit", "meaning", "how to get it"}}
	seen := map[string]bool{}
	for _, f := range append(append([]evidence.Field{}, r.appliesReads...), r.reads...) {
		if !seen[f.Path] {
			seen[f.Path] = true
			how := f.How
			if by := evidence.HowByEngine(f.Path); len(by) > 0 {
				how = strings.Join(by, "<br>")
			}
			reads.rows = append(reads.rows, []string{"`" + f.Path + "`", f.Unit, f.Meaning, how})
		}
	}
	if len(r.verdictReads) > 0 {
		reads.rows = append(reads.rows, []string{"`verdict." + strings.Join(r.verdictReads, "`, `verdict.") + "`", "count",
			"the other rules' findings on this target", "always present once they ran"})
	}
	p = append(p, reads)
	add(para, "When any of these is missing, withheld as inconsistent, or a distribution has fewer samples than `min_samples` (default 20) or a gauge fewer than `min_gauge_samples` (default 2), the rule reports a gap instead of a result.")
	if len(r.Params) > 0 {
		add(section, "Thresholds")
		add(para, "Override in `llmdoctor.yaml` under `rules: {"+r.ID+": {params: {...}}}`.")
		th := block{kind: table, head: []string{"param", "default", "why"}}
		for _, k := range slices.Sorted(maps.Keys(r.Params)) {
			th.rows = append(th.rows, []string{"`" + k + "`", units.Number(r.Params[k]), strings.Join(strings.Fields(r.Thresholds[k]), " ")})
		}
		p = append(p, th)
	}
	if len(r.Next) > 0 {
		add(section, "Next steps")
		var l []string
		for _, s := range r.Next {
			item := "**" + s.Cost + "** — " + KnobWords(s.Do)
			var notes []string
			if len(s.Turns) > 0 {
				var t []string
				for _, k := range slices.Sorted(maps.Keys(s.Turns)) {
					t = append(t, "`"+k+"` "+s.Turns[k])
				}
				notes = append(notes, "turns "+strings.Join(t, ", "))
			}
			if s.Whatif != "" {
				notes = append(notes, "whatif simulates: "+KnobWords(Changes[s.Whatif]))
			}
			if s.OnlyIf != "" {
				notes = append(notes, "only where `"+s.OnlyIf+"`, and as worded where that is unknown")
			}
			if made := alreadyWords(s); made != "" {
				notes = append(notes, "where the evidence shows it done, it says "+made)
			}
			if len(notes) > 0 {
				item += " *(" + strings.Join(notes, "; ") + ")*"
			}
			l = append(l, item)
		}
		p = append(p, block{kind: list, list: l})
	}
	add(section, "Message")
	add(code, strings.TrimSpace(r.Says))
	return p
}

func (p page) markdown() string {
	var b strings.Builder
	for i, bl := range p {
		if i > 0 {
			b.WriteString("\n")
		}
		switch bl.kind {
		case title:
			b.WriteString("# " + bl.text + "\n")
		case section:
			b.WriteString("## " + bl.text + "\n")
		case para:
			b.WriteString(bl.text + "\n")
		case code:
			b.WriteString("```\n" + bl.text + "\n```\n")
		case comment:
			b.WriteString("<!-- " + bl.text + " -->\n")
		case list:
			for _, x := range bl.list {
				b.WriteString("- " + x + "\n")
			}
		case table:
			head := bl.head
			if head == nil {
				head = make([]string, len(bl.rows[0]))
			}
			b.WriteString("|" + strings.Join(padCells(head), "|") + "|\n|")
			b.WriteString(strings.Repeat("---|", len(head)) + "\n")
			for _, row := range bl.rows {
				cells := make([]string, len(row))
				for i, c := range row {
					cells[i] = strings.ReplaceAll(c, "|", `\|`)
				}
				b.WriteString("|" + strings.Join(padCells(cells), "|") + "|\n")
			}
		}
	}
	return b.String()
}

// padCells puts a space either side of each cell: "| a |", "| |" for none.
func padCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = " " + c
		if c != "" {
			out[i] += " "
		}
	}
	return out
}

// text renders the page for a terminal: sections in capitals, their
// contents indented, wrapped to width.
func (p page) text(width int) string {
	const in = "  "
	var b strings.Builder
	lines := func(indent, s string) {
		for _, l := range wrap.Lines(s, width-len(indent), width-len(indent)) {
			b.WriteString(strings.TrimRight(indent+l, " ") + "\n")
		}
	}
	for i, bl := range p {
		switch bl.kind {
		case comment:
			continue
		case title:
			// The title and the bold paragraph after it make one heading.
			if next := p.after(i); next >= 0 && p[next].kind == para {
				lines("", bl.text+" — "+plain(p[next].text))
			} else {
				lines("", bl.text)
			}
			continue
		case para:
			if p.before(i) >= 0 && p[p.before(i)].kind == title {
				continue
			}
		}
		b.WriteString("\n")
		switch bl.kind {
		case section:
			b.WriteString(strings.ToUpper(bl.text) + "\n")
			b.WriteString("\n")
			// The section's first block follows without a blank line.
		case para:
			lines(in, plain(bl.text))
		case code:
			// Expressions and templates may break at any space; a broken
			// line goes on indented.
			for _, l := range strings.Split(bl.text, "\n") {
				lead := in + in + l[:len(l)-len(strings.TrimLeft(l, " "))]
				for j, part := range wrap.Lines(l, width-len(lead), width-len(lead)-2) {
					if j == 1 {
						lead += "  "
					}
					b.WriteString(strings.TrimRight(lead+part, " ") + "\n")
				}
			}
		case list:
			for _, x := range bl.list {
				for j, l := range wrap.Lines(plain(x), width-len(in)-2, width-len(in)-2) {
					lead := "• "
					if j > 0 {
						lead = "  "
					}
					b.WriteString(strings.TrimRight(in+lead+l, " ") + "\n")
				}
			}
		case table:
			textTable(&b, bl, in, width)
		}
	}
	// A section heading is followed by one blank line, not two.
	return strings.ReplaceAll(b.String(), "\n\n\n", "\n\n")
}

// after is the index of the block after i that is not a comment, or -1;
// before likewise before it.
func (p page) after(i int) int {
	for j := i + 1; j < len(p); j++ {
		if p[j].kind != comment {
			return j
		}
	}
	return -1
}

func (p page) before(i int) int {
	for j := i - 1; j >= 0; j-- {
		if p[j].kind != comment {
			return j
		}
	}
	return -1
}

// textTable writes a table as aligned columns when it fits the width, else
// each row as its first cell with the others beneath it, named by their
// column.
func textTable(b *strings.Builder, t block, in string, width int) {
	if len(t.rows) == 0 {
		b.WriteString(in + "none\n")
		return
	}
	cols := len(t.rows[0])
	w := make([]int, cols)
	fits := true
	cell := func(s string) []string { return strings.Split(plain(s), "\n") }
	for _, row := range append([][]string{t.head}, t.rows...) {
		for i := range row {
			for _, l := range cell(row[i]) {
				w[i] = max(w[i], ansi.StringWidth(l))
			}
			fits = fits && !strings.Contains(row[i], "<br>")
		}
	}
	total := len(in)
	for _, x := range w {
		total += x + 2
	}
	if fits && total-2 <= width {
		for _, row := range append([][]string{t.head}, t.rows...) {
			if row == nil {
				continue
			}
			line := in
			for i, c := range row {
				line += plain(c) + strings.Repeat(" ", w[i]-ansi.StringWidth(plain(c))+2)
			}
			b.WriteString(strings.TrimRight(line, " ") + "\n")
		}
		return
	}
	for r, row := range t.rows {
		if r > 0 {
			b.WriteString("\n")
		}
		b.WriteString(strings.TrimRight(in+plain(row[0]), " ") + "\n")
		for i := 1; i < cols; i++ {
			if row[i] == "" {
				continue
			}
			name := ""
			if t.head != nil {
				name = t.head[i] + ": "
			}
			lead := in + in + name
			hang := in + in + strings.Repeat(" ", len(name))
			first := true
			for _, part := range cell(row[i]) {
				for _, l := range wrap.Lines(part, width-len(lead), width-len(hang)) {
					if first {
						b.WriteString(strings.TrimRight(lead+l, " ") + "\n")
						first = false
					} else {
						b.WriteString(strings.TrimRight(hang+l, " ") + "\n")
					}
				}
			}
		}
	}
}

// plain drops inline markup: `code` and **strong** spans, <br> as a new line.
func plain(s string) string {
	return strings.NewReplacer("`", "", "**", "", "<br>", "\n").Replace(s)
}

// Catalogue renders the index of the diagnosis rules and checklist items.
func Catalogue(s, checklist *Set) string {
	var b strings.Builder
	b.WriteString("# Rule catalogue\n\n<!-- Generated by `go generate ./rules`; edit the rule files under rules/builtin and rules/checklist. -->\n\n")
	b.WriteString("## Diagnosis rules\n\n| rule | bottleneck | severity | title |\n|---|---|---|---|\n")
	for _, r := range s.Rules {
		if r.BuiltIn {
			fmt.Fprintf(&b, "| [%s](%s.md) | `%s` | %s | %s |\n", r.ID, r.ID, r.Bottleneck, r.Sev, r.Title)
		}
	}
	b.WriteString("\n## Pre-launch checklist (`llmdoctor checklist`)\n\nAn item fails when its condition holds, passes when it does not, and cannot be checked when its evidence is missing.\n\n")
	b.WriteString("| item | severity | title |\n|---|---|---|\n")
	for _, r := range checklist.Rules {
		title := r.Title
		if r.Item != "" {
			title = r.Item
		}
		fmt.Fprintf(&b, "| [%s](%s.md) | %s | %s |\n", r.ID, r.ID, r.Sev, title)
	}
	return b.String()
}

// DocFiles returns every generated file by path relative to the docs dir.
func DocFiles(s, checklist *Set) map[string]string {
	out := map[string]string{"README.md": Catalogue(s, checklist)}
	for _, set := range []*Set{s, checklist} {
		for _, r := range set.Rules {
			if r.BuiltIn {
				out[r.ID+".md"] = Doc(r) // measurement rules are in both sets
			}
		}
	}
	return out
}

// WriteDocs writes the catalogue and rule pages into dir.
func WriteDocs(s, checklist *Set, dir string) error {
	for rel, content := range DocFiles(s, checklist) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// alreadyWords is what a step says instead where the evidence shows it
// done, each field shown at the value that means done; "" when no
// evidence can.
func alreadyWords(s Step) string {
	made := map[string]string{}
	for k, t := range s.Turns {
		st, ok := KnobStates[k]
		if !ok || (t != "enable" && t != "disable") {
			return ""
		}
		made[k] = st.Field + " = " + map[string]string{"enable": "1", "disable": "0"}[t]
	}
	if len(made) == 0 {
		return ""
	}
	return "“" + KnobWords(alreadyStep(s, made).Do) + "”"
}
