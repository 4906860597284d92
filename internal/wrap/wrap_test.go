package wrap

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

func TestLines(t *testing.T) {
	for _, c := range []struct {
		s           string
		first, rest int
		want        []string
	}{
		{"", 10, 10, []string{""}},
		{"start SGLang with --enable-metrics now", 20, 20, []string{"start SGLang with", "--enable-metrics now"}},
		{"a bb ccc dddd", 6, 4, []string{"a bb", "ccc", "dddd"}},
		{"https://example.com/a/very/long/path ok", 10, 10, []string{"https://ex", "ample.com/", "a/very/lon", "g/path ok"}},
		{"one\n  two\tthree", 80, 80, []string{"one two three"}},
		{"≥ 0.7.2 µs", 4, 4, []string{"≥", "0.7.", "2 µs"}},
	} {
		got := Lines(c.s, c.first, c.rest)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("Lines(%q, %d, %d) = %q, want %q", c.s, c.first, c.rest, got, c.want)
		}
	}
}

// No line is wider than its limit unless one character is, no word but a
// cut one is split, and the words come back in order.
func FuzzLines(f *testing.F) {
	f.Add("TTFT includes the time a request waits in vLLM's scheduler queue", 20, 12)
	f.Add("https://example.com/é/long µs --flag-name", 5, 3)
	f.Fuzz(func(t *testing.T, s string, first, rest int) {
		// Escape sequences are those of styled words, well formed: a
		// stray ESC is the caller's to remove.
		if !utf8.ValidString(s) || strings.Contains(s, "\x1b") || first < 1 || rest < 1 || first > 300 || rest > 300 {
			return
		}
		lines := Lines(s, first, rest)
		for i, l := range lines {
			limit := rest
			if i == 0 {
				limit = first
			}
			if w := ansi.StringWidth(l); w > limit && !strings.Contains(l, " ") && ansi.StringWidth(ansi.Truncate(l, limit, "")) == 0 {
				continue // one character wider than the line
			} else if w > limit {
				t.Fatalf("line %d %q is %d wide, limit %d", i, l, w, limit)
			}
		}
		if got, want := strings.Join(strings.Fields(strings.Join(lines, "")), ""), strings.Join(strings.Fields(s), ""); got != want {
			t.Fatalf("text changed: %q, want %q", got, want)
		}
	})
}
