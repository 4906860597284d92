package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

func benchFile(name string) string {
	return filepath.Join("..", "..", "collectors", "requests", "testdata", name)
}

// The JUnit output validates against the JUnit 4 schema.
func TestChecklistJUnitValidates(t *testing.T) {
	t.Parallel()
	xmllint := testkit.Need(t, "libxml2-utils", "xmllint")
	_, out, _ := runCLI(t, "checklist", "--format", "junit", "--bench", benchFile("bench-nonstreaming.json"), "--slo", "ttft_p99=1s,itl_p99=50ms")
	p := filepath.Join(t.TempDir(), "checklist.xml")
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("..", "..", "report", "testdata", "junit.xsd"), p).CombinedOutput()
	if err != nil {
		t.Fatalf("invalid JUnit XML: %v\n%s\n%s", err, res, out)
	}
	for _, want := range []string{`<failure message=`, `<skipped message="cannot check:`, `classname="llmdoctor.checklist"`} {
		if !strings.Contains(out, want) {
			t.Errorf("JUnit lacks %s", want)
		}
	}
}
