package main

import (
	"encoding/json"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// docs/probe.md's commands run against the simulator served where they
// name 127.0.0.1:8000: with --dry-run in the quick tier (the plan, nothing
// sent), whole in the heavy one (about three minutes: the rates are the
// line's), each output read as its format.
func TestProbeDocExamplesRun(t *testing.T) {
	t.Parallel() // the heavy tier's runs mostly wait on their rates
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readDoc(t, "docs/probe.md"))
	if m == nil {
		t.Fatal("docs/probe.md has no sh block")
	}
	url, sent := serveSimAPI(t, "queue-bound", 10)
	lines := strings.Split(strings.TrimSpace(m[1]), "\n")
	if len(lines) < 4 {
		t.Fatalf("docs/probe.md's examples: %q", lines)
	}
	for _, line := range lines {
		cmdline, redirect, _ := strings.Cut(line, " > ")
		args := strings.Fields(strings.ReplaceAll(cmdline, "http://127.0.0.1:8000", url))
		if args[0] != "llmdoctor" || !strings.Contains(line, "http://127.0.0.1:8000") {
			t.Fatalf("%q: not an llmdoctor command against the documented target", line)
		}
		args = args[1:]
		full := testkit.Heavy() || strings.Contains(line, "--dry-run")
		if !full {
			args = append(args, "--dry-run")
		}
		before := sent.Load()
		code, out, stderr := runCLI(t, args...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", line, code, stderr)
			continue
		}
		switch {
		case !full || strings.Contains(line, "--dry-run"):
			if !strings.Contains(out, "requests at most") || sent.Load() != before {
				t.Errorf("%s: a dry run sent %d requests, printed:\n%s", line, sent.Load()-before, out)
			}
		case strings.Contains(redirect, ".json"):
			var r struct {
				Schema string
				Sent   int `json:"requests_sent"`
				Launch *struct{ Completed int }
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil || r.Schema != "llmdoctor.probe/v1" || r.Sent == 0 ||
				(strings.Contains(line, "--launch") && (r.Launch == nil || r.Launch.Completed < 200)) {
				t.Errorf("%s: %v %+v", line, err, r)
			}
		case strings.Contains(redirect, ".xml"):
			if err := xml.Unmarshal([]byte(out), new(struct{})); err != nil || !strings.Contains(out, "llmdoctor.checklist") {
				t.Errorf("%s: not JUnit: %v\n%.400s", line, err, out)
			}
		default:
			if !strings.Contains(out, "CAPACITY") {
				t.Errorf("%s: no capacity in\n%s", line, out)
			}
		}
	}
}
