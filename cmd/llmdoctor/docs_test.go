package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// yamlBlocks returns the ```yaml blocks of a doc, in order.
func yamlBlocks(t *testing.T, doc string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", doc))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// The rule, its two test cases and the configuration in
// docs/writing-rules.md load and pass as written.
func TestWritingRulesExamplesRun(t *testing.T) {
	t.Parallel()
	blocks := yamlBlocks(t, "writing-rules.md")
	if len(blocks) != 6 {
		t.Fatalf("want the rule, its next steps, three cases and a config in docs/writing-rules.md, found %d yaml blocks", len(blocks))
	}
	dir := writingRulesDir(t)
	code, out, errOut := runCLI(t, "rules", "test", dir)
	if code != 0 || !strings.Contains(out, "3 passed, 0 failed") {
		t.Fatalf("rules test: %d %s %s", code, out, errOut)
	}
	cfg := filepath.Join(t.TempDir(), "llmdoctor.yaml")
	if err := os.WriteFile(cfg, []byte(blocks[5]), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, append([]string{"diagnose", "--config", cfg, "--rules", dir}, example("queueing")...)...); code != 0 {
		t.Fatalf("diagnose with the documented config: %d %s", code, errOut)
	}
}

// The worked examples in docs/verdict.md give the verdict and deciding rule
// they say they give.
func TestVerdictDocExamples(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "verdict.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `examples/([a-z0-9.-]+)` \\| `([a-z-]+)` \\| (?:`([a-z/-]+)`|—) \\|")
	rows := row.FindAllStringSubmatch(string(b), -1)
	if len(rows) < 6 {
		t.Fatalf("found %d worked examples", len(rows))
	}
	for _, r := range rows {
		t.Run(r[1], func(t *testing.T) {
			t.Parallel()
			p := diagnoseJSON(t, example(r[1])...).Targets[0].Primary
			if p.Bottleneck != r[2] || p.Rule != r[3] {
				t.Fatalf("verdict %s (%s), the doc says %s (%s)", p.Bottleneck, p.Rule, r[2], r[3])
			}
		})
	}
}

// The README's "What it prints" is what the command it shows prints: every
// line shown is in the report ("…" marks what the README leaves out).
func TestReadmeSampleIsTheReport(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## What it prints\n\n[^#]*?```\n\\$ llmdoctor ([^\n]*)\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("README has no sample report under its command ($ llmdoctor …)")
	}
	args := strings.Fields(string(m[1]))
	for i, a := range args {
		if strings.HasPrefix(a, "examples/") {
			args[i] = filepath.Join("..", "..", a)
		}
	}
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("llmdoctor %s: exit %d: %s", m[1], code, errOut)
	}
	for _, line := range strings.Split(strings.TrimRight(string(m[2]), "\n"), "\n") {
		if strings.TrimSpace(line) != "…" && !strings.Contains(out, line+"\n") {
			t.Errorf("README line not in the report: %q", line)
		}
	}
}

// docs/slack.md's Block Kit excerpt is what the slack renderer writes for
// examples/queueing: its text and first blocks, unchanged.
func TestSlackDocExcerptIsTheMessage(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "slack.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```json\n(.*?)\n```\n").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/slack.md has no JSON excerpt")
	}
	var doc struct {
		Text        string
		Attachments []struct {
			Color  string
			Blocks []json.RawMessage
		}
	}
	if err := json.Unmarshal(m[1], &doc); err != nil {
		t.Fatalf("the excerpt is not JSON: %v", err)
	}
	_, out, _ := runCLI(t, append([]string{"diagnose", "--format", "slack"}, example("queueing")...)...)
	var msgs []struct {
		Main struct {
			Text        string
			Attachments []struct {
				Color  string
				Blocks []json.RawMessage
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &msgs); err != nil || len(msgs) != 1 {
		t.Fatalf("--format slack: %v\n%.300s", err, out)
	}
	got := msgs[0].Main
	if got.Text != doc.Text || got.Attachments[0].Color != doc.Attachments[0].Color {
		t.Errorf("text or colour differ: %q %q", got.Text, got.Attachments[0].Color)
	}
	for i, blk := range doc.Attachments[0].Blocks {
		var a, b any
		if err := json.Unmarshal(blk, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got.Attachments[0].Blocks[i], &b); err != nil {
			t.Fatal(err)
		}
		if ja, _ := json.Marshal(a); string(ja) != string(mustJSON(b)) {
			t.Errorf("block %d differs:\n doc  %s\n real %s", i, ja, mustJSON(b))
		}
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }
