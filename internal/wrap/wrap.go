// Package wrap breaks text into lines of a display width, at spaces only:
// flags, metric names and paths (--enable-metrics, vllm:num_requests_running)
// stay whole, to be copied as they are.
package wrap

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Lines breaks s at spaces into lines of at most first cells for the first
// line and rest for the others. A word longer than its line (a URL) is cut
// by display cells, escape sequences and all. Runs of spaces and new lines
// in s count as one space. An empty s is one empty line.
func Lines(s string, first, rest int) []string {
	var out []string
	var cur string
	limit := first
	flush := func() {
		out = append(out, cur)
		cur, limit = "", rest
	}
	for _, word := range strings.Fields(s) {
		if cur != "" && ansi.StringWidth(cur)+1+ansi.StringWidth(word) > limit {
			flush()
		}
		for ansi.StringWidth(word) > limit && cur == "" {
			head, tail := cut(word, limit)
			if ansi.StringWidth(head) == 0 {
				break // not one character fits: let it run over
			}
			cur, word = head, tail
			flush()
		}
		if cur == "" {
			cur = word
		} else {
			cur += " " + word
		}
	}
	if cur != "" || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

// cut splits a word at limit cells. A styled word (its escape sequences
// well formed) is cut by ansi, escape sequences and all; a plain one rune
// by rune.
func cut(word string, limit int) (head, tail string) {
	if strings.ContainsRune(word, '\x1b') {
		head = ansi.Truncate(word, limit, "")
		return head, ansi.TruncateLeft(word, ansi.StringWidth(head), "")
	}
	w := 0
	for i, r := range word {
		if w += ansi.StringWidth(string(r)); w > limit {
			return word[:i], word[i:]
		}
	}
	return word, ""
}
