package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// Every text renderer lays out within minWidth columns (the comparison's
// table is the widest, its columns fixed; narrower, a diagnosis's first
// screen runs past a screen), every command with --width refuses less in
// the same words, and the README and docs/formats.md give the same number.
func TestWidthIsOneNumber(t *testing.T) {
	dir := t.TempDir()
	q := example("queueing")
	var reports []string
	for _, name := range []string{"queueing", "kv-capacity"} {
		code, out, errOut := runCLI(t, append([]string{"diagnose", "--format", "json"}, example(name)...)...)
		if code != 0 {
			t.Fatalf("diagnose %s: exit %d: %s", name, code, errOut)
		}
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		reports = append(reports, p)
	}
	commands := map[string][]string{
		"diagnose":   append([]string{"diagnose", "--details", "--color", "never"}, q...),
		"checklist":  append([]string{"checklist", "--details", "--color", "never"}, q...),
		"compare":    {"compare", reports[0], reports[1], "--color", "never"},
		"rules show": {"rules", "show", "queue/batch-full"},
	}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			// A checklist with a failed item exits 1, and prints all the same.
			code, out, errOut := runCLI(t, append(args, "--width", fmt.Sprint(minWidth))...)
			if code != 0 && !(code == 1 && name == "checklist") || out == "" {
				t.Fatalf("at --width %d: exit %d: %s", minWidth, code, errOut)
			}
			for i, l := range strings.Split(out, "\n") {
				if n := ansi.StringWidth(l); n > minWidth {
					t.Errorf("line %d is %d columns: %q", i+1, n, l)
				}
			}
			refusedWith([]string{fmt.Sprintf("want a width of %d columns or more", minWidth)}, nil,
				append(args, "--width", fmt.Sprint(minWidth-1))...)(t)
		})
	}
	// whatif takes the same flag (its simulation is left to its own tests).
	t.Run("whatif", refusedWith([]string{fmt.Sprintf("want a width of %d columns or more", minWidth)}, nil,
		"whatif", "--scenario", "queue-bound", "--width", fmt.Sprint(minWidth-1)))

	said := regexp.MustCompile("`--width N`,?\\s+\\(?(?:columns of the text report, )?(\\d+) or more")
	for _, doc := range []string{"../../README.md", "../../docs/formats.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		m := said.FindAllStringSubmatch(string(b), -1)
		if len(m) == 0 {
			t.Errorf("%s does not say how narrow --width goes", doc)
		}
		for _, s := range m {
			if s[1] != fmt.Sprint(minWidth) {
				t.Errorf("%s says --width takes %s or more; it takes %d", doc, s[1], minWidth)
			}
		}
	}
}
