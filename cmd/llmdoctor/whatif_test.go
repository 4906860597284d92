package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
)

// Bad whatif flags are refused with one line and exit 2, before anything
// is read.
func TestWhatifUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"whatif", "--scenario", "queue-bound", "--assume", "max_seqs=4"}, "NAME one of max_num_seqs"},
		{[]string{"whatif", "--scenario", "queue-bound", "--assume", "max_num_seqs=4,max_num_seqs=8"}, "names max_num_seqs twice"},
		{[]string{"whatif", "--scenario", "queue-bound", "--assume", "max_num_seqs=0.5"}, "a whole number from 1"},
		{[]string{"whatif", "--scenario", "queue-bound", "--assume", "chunked_prefill=2"}, "1 (on) or 0 (off)"},
		{[]string{"whatif", "--scenario", "queue-bound", "--assume", "max_num_seqs=x"}, "not a number"},
		{[]string{"whatif", "--scenario", "queue-bound", "--whatif-tolerance", "0"}, "between 0 and 1"},
		{[]string{"whatif", "--scenario", "queue-bound", "--whatif-tolerance", "NaN"}, "between 0 and 1"},
		{append([]string{"whatif", "--scenario", "queue-bound"}, example("queueing")...), "--scenario is a source of its own"},
		{[]string{"whatif", "--scenario", "no-such"}, "no scenario \"no-such\""},
		{append([]string{"diagnose", "--assume", "max_num_seqs=4"}, example("queueing")...), "--assume is for --whatif"},
		{[]string{"whatif"}, "nothing to read"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}

// A window whose numbers do not hang together gets no predictions, and the
// report says why instead.
func TestDiagnoseWhatifNotReproduced(t *testing.T) {
	// The example's queue of ~300 at 12 requests a second cannot go with a
	// mean TTFT of 2 s: no calibration reproduces it.
	code, out, errOut := runCLI(t, append([]string{"diagnose", "--whatif", "--format", "json"}, example("queueing")...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d advisor.Diagnosis
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	for _, s := range d.Targets[0].Next {
		if s.Effect != nil {
			t.Errorf("step %q has an effect though the window was not reproduced", s.Do)
		}
	}
	notes := strings.Join(d.Notes, "\n")
	if !strings.Contains(notes, "the window could not be reproduced: the replay's queue_mean") {
		t.Errorf("notes do not say why:\n%s", notes)
	}
}

// Real expositions from public issues are single snapshots: counters since
// the process started, no window. whatif refuses each by name and prices
// nothing.
func TestWhatifPublicExpositions(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "collectors", "scrape", "testdata", "public", "*.prom"))
	if len(files) < 5 {
		t.Fatalf("%d public expositions", len(files))
	}
	for _, f := range files {
		code, out, errOut := runCLI(t, "whatif", "--format", "json", "--snapshot", f)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", f, code, errOut)
			continue
		}
		var res struct {
			Targets []struct {
				Why   string `json:"why"`
				Steps []struct {
					Effect any `json:"effect"`
				} `json:"steps"`
			} `json:"targets"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tg := range res.Targets {
			if tg.Why == "" {
				t.Errorf("%s: a target calibrated from one snapshot", f)
			}
			for _, s := range tg.Steps {
				if s.Effect != nil {
					t.Errorf("%s: a step priced", f)
				}
			}
		}
	}
}
