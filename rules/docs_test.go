package rules

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// A rule's page for the terminal fits its width, carries no Markdown, and
// says what the Markdown page says: every word of its why, title and
// thresholds, every field it reads and every param.
func TestDocTextFitsAndSaysTheSame(t *testing.T) {
	cl, err := ChecklistItems()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(builtinSet(t).Rules, cl.Rules...) {
		for _, width := range []int{60, 80, 120} {
			text := DocText(r, width)
			for i, l := range strings.Split(text, "\n") {
				if w := ansi.StringWidth(l); w > width {
					t.Errorf("%s at %d: line %d is %d wide: %q", r.ID, width, i+1, w, l)
				}
				for _, mark := range []string{"`", "**", "<br>", "<!--", "|---"} {
					if strings.Contains(l, mark) {
						t.Errorf("%s at %d: line %d holds %q: %q", r.ID, width, i+1, mark, l)
					}
				}
			}
			words := strings.Fields(text)
			var want []string
			want = append(want, strings.Fields(plain(r.Why+" "+r.Title))...)
			for _, k := range slices.Sorted(maps.Keys(r.Params)) {
				want = append(want, k)
				want = append(want, strings.Fields(r.Thresholds[k])...)
			}
			for _, f := range r.reads {
				want = append(want, f.Path)
			}
			for _, w := range want {
				if !slices.Contains(words, w) {
					t.Errorf("%s at %d: %q is on the Markdown page, not in the text", r.ID, width, w)
				}
			}
			for _, s := range []string{"WHY", "EVIDENCE IT READS", "MESSAGE"} {
				if !strings.Contains(text, "\n"+s+"\n") {
					t.Errorf("%s at %d: no %s section", r.ID, width, s)
				}
			}
		}
	}
}

// A table that fits is aligned under its header; one that does not is
// stacked, each cell named by its column.
func TestDocTextTables(t *testing.T) {
	tb := block{kind: table, head: []string{"param", "default", "why"}, rows: [][]string{{"`a`", "1", "short"}, {"`bb`", "20", "also short"}}}
	var b strings.Builder
	textTable(&b, tb, "  ", 80)
	want := "  param  default  why\n  a      1        short\n  bb     20       also short\n"
	if b.String() != want {
		t.Errorf("aligned:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	tb.rows[1][2] = strings.Repeat("long words ", 10)
	textTable(&b, tb, "  ", 60)
	got := b.String()
	for _, w := range []string{"  a\n    default: 1\n    why: short\n", "  bb\n    default: 20\n    why: long words"} {
		if !strings.Contains(got, w) {
			t.Errorf("stacked:\n%s\nwant it to hold\n%s", got, w)
		}
	}
}

// A rule that reads no evidence renders in text as in Markdown.
func TestDocTextOfARuleThatReadsNothing(t *testing.T) {
	r, err := Parse("user.yaml", []byte("id: user/none\ntitle: t\nlayer: stage\nbottleneck: queueing\nseverity: warning\nwhen: 1 > 2\nsays: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if text := DocText(r, 80); !strings.Contains(text, "EVIDENCE IT READS\n\n  none\n") {
		t.Errorf("text:\n%s", text)
	}
}
