package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/rules"
)

// Every field a rule may read explains itself: a unit, a meaning, a way to
// obtain it, and every built-in rule that reads it by name.
func TestExplainEveryField(t *testing.T) {
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	readBy := map[string][]string{}
	for _, r := range set.Rules {
		for _, p := range r.Reads() {
			readBy[p] = append(readBy[p], r.ID)
		}
	}
	for _, f := range evidence.Fields() {
		var b bytes.Buffer
		if err := explain(&b, f.Path, set); err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		out := b.String()
		for _, head := range []string{"UNIT     ", "MEANING  ", "OBTAIN   ", "READ BY  "} {
			i := strings.Index(out, "\n"+head)
			if i < 0 || strings.HasPrefix(out[i+1+len(head):], "\n") {
				t.Errorf("%s: no %s:\n%s", f.Path, strings.TrimSpace(head), out)
			}
		}
		for _, id := range readBy[f.Path] {
			if !strings.Contains(out, id) {
				t.Errorf("%s: read by %s, which explain does not name:\n%s", f.Path, id, out)
			}
		}
	}
}
