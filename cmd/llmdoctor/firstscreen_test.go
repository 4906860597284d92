package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/sim"
)

// The first screen of every demo scenario, at 80 and 120 columns, is its
// golden file (reviewed like code): each scenario is run by the simulator
// offline, its OpenMetrics file diagnosed as a person would read it. No
// line runs past the width, the verdict is the scenario's expected
// bottleneck, and the screen is short enough to be one.
func TestFirstScreens(t *testing.T) {
	scenarios, err := sim.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) < 10 {
		t.Fatalf("%d demo scenarios", len(scenarios))
	}
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			// A short relative directory: the path is on the screen, and a
			// long one would wrap before it can be taken out.
			dir, err := os.MkdirTemp(".", ".screen-")
			if err != nil {
				t.Fatal(err)
			}
			dir = filepath.Clean(dir)
			t.Cleanup(func() {
				if err := os.RemoveAll(dir); err != nil {
					t.Error(err)
				}
			})
			om := filepath.Join(dir, sc.Name+".om")
			if code, _, errOut := runCLI(t, "sim", "--scenario", sc.Name, "--openmetrics", om); code != 0 {
				t.Fatalf("sim: exit %d: %s", code, errOut)
			}
			for _, width := range []int{80, 120} {
				code, out, errOut := runCLI(t, "diagnose", "--color", "never", "--width", fmt.Sprint(width), "--snapshot", om)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				out = strings.ReplaceAll(out, dir+string(filepath.Separator), "")
				lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
				for i, l := range lines {
					if n := ansi.StringWidth(l); n > width {
						t.Errorf("width %d, line %d is %d columns: %q", width, i+1, n, l)
					}
				}
				if want := "VERDICT " + sc.Expect; sc.Expect != "none" && !strings.Contains(out, want) {
					t.Errorf("width %d: no %q on the first screen:\n%s", width, want, out)
				}
				if sc.Expect == "none" && !strings.Contains(out, "VERDICT healthy") {
					t.Errorf("width %d: not healthy:\n%s", width, out)
				}
				// A screen: two terminal pages at most, whatever the
				// scenario, and one more for a second target (the two
				// sides of a split deployment).
				if limit := 60 + 40*(strings.Count(out, "VERDICT")-1); len(lines) > limit {
					t.Errorf("width %d: the first screen is %d lines", width, len(lines))
				}
				golden := filepath.Join("testdata", "first-screen", fmt.Sprintf("%s-%d.txt", sc.Name, width))
				if *testkit.Update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (go test ./cmd/llmdoctor -run FirstScreens -update writes it)", err)
				}
				if string(want) != out {
					t.Errorf("%s differs from the report (-update rewrites it; review the diff):\n%s", golden, out)
				}
			}
		})
	}
}
