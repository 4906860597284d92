package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/rules"
)

func sampleChecklist() *advisor.Checklist {
	c := &advisor.Checklist{Schema: advisor.ChecklistSchema, Window: advisor.Window{Seconds: 900, Points: 31},
		Sources: []advisor.Source{{Kind: "bench", Path: "run.json", OK: true}},
		Targets: []advisor.ChecklistTarget{{Target: evidence.Target{Model: "m"}, Items: []advisor.Item{
			{ID: "measurement/fixed-prompt-lengths", Title: "Prompt lengths vary", Severity: "critical", Status: advisor.Pass, Blocking: true,
				Message: "TTFT ≈ 20ms + 60ms per 1k prompt tokens", Evidence: map[string]float64{"cond.prompt_ttft_slope": 0.06}},
			{ID: "measurement/non-streaming", Title: "Streaming", Severity: "critical", Status: advisor.Fail, Blocking: true,
				Message: "does not stream <&>", Fix: []rules.Step{{Do: "stream", Cost: "config"}}},
			{ID: "check/kv-headroom", Title: "KV headroom", Severity: "warning", Status: advisor.CannotCheck, Blocking: true,
				Message: "needs resource.kv_usage", How: "scrape the server"},
		}, Passed: 1, Failed: 1, CannotCheck: 1}}}
	c.Decide()
	return c
}

// wellFormed checks one renderer's output of one document. Every
// registered renderer needs an entry: a format without a check is a format
// nobody tested.
var wellFormed = map[string]func(t *testing.T, doc Document, out []byte){
	"text": func(t *testing.T, doc Document, out []byte) {
		want := map[Document]string{DiagnosisDoc: "llmdoctor diagnosis", ChecklistDoc: "llmdoctor pre-launch checklist"}[doc]
		if !strings.Contains(string(out), want) || strings.Contains(string(out), "\x1b[") {
			t.Errorf("text %s without %q or with colour:\n%s", doc, want, out)
		}
	},
	"json": func(t *testing.T, doc Document, out []byte) {
		var v struct{ Schema string }
		want := map[Document]string{DiagnosisDoc: advisor.Schema, ChecklistDoc: advisor.ChecklistSchema}[doc]
		if err := json.Unmarshal(out, &v); err != nil || v.Schema != want {
			t.Errorf("json %s: schema %q, %v", doc, v.Schema, err)
		}
	},
	"markdown": func(t *testing.T, doc Document, out []byte) {
		if !strings.HasPrefix(string(out), "# ") || !strings.Contains(string(out), "\n|---|") {
			t.Errorf("markdown %s is not a heading and a table:\n%s", doc, out)
		}
	},
	"junit": func(t *testing.T, doc Document, out []byte) {
		var s junitSuites
		if err := xml.Unmarshal(out, &s); err != nil || s.Tests == 0 {
			t.Errorf("junit %s: %d tests, %v:\n%s", doc, s.Tests, err, out)
		}
	},
	"html": func(t *testing.T, doc Document, out []byte) {
		want := map[Document]string{DiagnosisDoc: "llmdoctor diagnosis", ChecklistDoc: "llmdoctor pre-launch checklist"}[doc]
		if !strings.HasPrefix(string(out), "<!doctype html>") || !strings.Contains(string(out), want) {
			t.Errorf("html %s is not a page with %q", doc, want)
		}
		selfContained(t, out)
	},
	"slack": func(t *testing.T, doc Document, out []byte) {
		var msgs []SlackMessage
		if err := json.Unmarshal(out, &msgs); err != nil || len(msgs) == 0 {
			t.Fatalf("slack %s: %d messages, %v:\n%s", doc, len(msgs), err, out)
		}
		checkAll(t, "slack "+doc.String(), msgs)
	},
}

// Every registered renderer renders the documents it says it renders into
// well-formed output, refuses the others with *UnsupportedError, has a
// check above and is documented in docs/formats.md.
func TestEveryRendererIsTestedAndDocumented(t *testing.T) {
	formats, err := os.ReadFile(filepath.Join("..", "docs", "formats.md"))
	if err != nil {
		t.Fatal(err)
	}
	all := All()
	if len(all) < 4 {
		t.Fatalf("%d renderers registered", len(all))
	}
	for _, r := range all {
		t.Run(r.Name(), func(t *testing.T) {
			check, ok := wellFormed[r.Name()]
			if !ok {
				t.Fatalf("renderer %q has no well-formedness check in renderers_test.go", r.Name())
			}
			if !strings.Contains(string(formats), "| `"+r.Name()+"` |") {
				t.Errorf("docs/formats.md has no row for %q", r.Name())
			}
			if r.Describe() == "" {
				t.Error("no description")
			}
			renders := 0
			for doc, render := range map[Document]func(*bytes.Buffer) error{
				DiagnosisDoc: func(b *bytes.Buffer) error { return r.Diagnosis(b, sample(), Options{Color: "never"}) },
				ChecklistDoc: func(b *bytes.Buffer) error { return r.Checklist(b, sampleChecklist(), Options{Color: "never"}) },
			} {
				var b bytes.Buffer
				err := render(&b)
				if !r.Renders(doc) {
					var ue *UnsupportedError
					if !errors.As(err, &ue) || ue.Document != doc || b.Len() > 0 {
						t.Errorf("%s: not rendered, yet %v and %d bytes", doc, err, b.Len())
					}
					continue
				}
				renders++
				if err != nil || b.Len() == 0 {
					t.Fatalf("%s: %v, %d bytes", doc, err, b.Len())
				}
				check(t, doc, b.Bytes())
			}
			if renders == 0 {
				t.Error("renders nothing")
			}
		})
	}
}

// Names lists text and json first, and only the renderers of a document.
func TestNames(t *testing.T) {
	if got := strings.Join(Names(DiagnosisDoc), ","); got != "text,json,html,slack" {
		t.Errorf("diagnosis formats %s", got)
	}
	if got := strings.Join(Names(ChecklistDoc), ","); got != "text,json,html,junit,markdown,slack" {
		t.Errorf("checklist formats %s", got)
	}
	if _, ok := Lookup("junit"); !ok {
		t.Error("junit not found")
	}
	defer func() {
		if recover() == nil {
			t.Error("a second text renderer was registered")
		}
	}()
	Register(textRenderer{})
}
