package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/report"
)

// --format and --output take every registered renderer of the command's
// document, several at once, and refuse the others before reading anything.
func TestOutputsFollowTheRegistry(t *testing.T) {
	bench := []string{"--bench", benchFile("bench-detailed.json")}
	dir := t.TempDir()
	args := append([]string{"checklist"}, bench...)
	for _, name := range report.Names(report.ChecklistDoc) {
		code, out, errOut := runCLI(t, append([]string{"checklist", "--format", name}, bench...)...)
		if (code != 0 && code != 1) || out == "" {
			t.Errorf("checklist --format %s: exit %d, %d bytes: %s", name, code, len(out), errOut)
		}
		args = append(args, "--output", name+"="+filepath.Join(dir, name))
	}
	if code, _, errOut := runCLI(t, args...); code != 0 && code != 1 {
		t.Fatalf("several --output: exit %d: %s", code, errOut)
	}
	for _, name := range report.Names(report.ChecklistDoc) {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || len(b) == 0 || strings.Contains(string(b), "\x1b[") {
			t.Errorf("--output %s=…: %v, %d bytes", name, err, len(b))
		}
	}
	for _, name := range report.Names(report.ChecklistDoc) {
		r, _ := report.Lookup(name)
		if r.Renders(report.DiagnosisDoc) {
			continue
		}
		want := `--format "` + name + `": want ` + strings.Join(report.Names(report.DiagnosisDoc), ", ")
		refusedOneLine(t, want, "diagnose", "--format", name, "--snapshot", "never-read.prom")
		refusedOneLine(t, `--output "`+name+`=x"`, "demo", "--output", name+"=x")
	}
}
