package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/probe/validation"
	"github.com/llmdoctor/llmdoctor/view"
)

// Every format says what the probe's view says: the capacity (its word and
// line), the verdict and the load it is at, and the pre-launch run, for
// every recorded probe and for forms the recordings lack (a pre-launch
// run that met the SLO and one that missed it, no capacity, a probe
// stopped early). Each format is read back as text, so a renderer that
// drops or rewords one of them is caught.
func TestProbeFormatsAgree(t *testing.T) {
	var cases []*probe.Result
	for _, p := range []string{"own/fitted-8", "own/fitted-4", "peer/per-token-8", "peer/per-token-4"} {
		r, err := validation.ReadResult(filepath.Join("..", "probe", "testdata", p+".json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, r)
	}
	launched := func(r *probe.Result, meets bool) *probe.Result {
		c := *r
		st := c.Steps[c.Capacity.Step]
		st.OpenLoop, st.Load, st.MeetsSLO = true, 0.8*c.Capacity.Throughput, meets
		if !meets {
			st.Misses = []string{"ttft_p99 2.31s > 1.6s"}
		}
		c.Launch, c.Plan.Launch, c.Plan.LaunchRequests = &st, -0.8, probe.LaunchRequests
		return &c
	}
	noCapacity := func(r *probe.Result) *probe.Result {
		c := *r
		c.Steps = append([]probe.Step(nil), c.Steps...)
		for i := range c.Steps {
			c.Steps[i].MeetsSLO = false
			c.Steps[i].Misses = []string{"ttft_p99 9s > 1s"}
		}
		c.Capacity, c.Knee = nil, nil
		return &c
	}
	stopped := *cases[1]
	stopped.Stopped = probe.StopInterrupted
	cases = append(cases, launched(cases[0], true), launched(cases[2], false), noCapacity(cases[3]), &stopped)

	for i, r := range cases {
		v := view.ProbeOf(r)
		want := []string{v.CapacityWord, v.Capacity}
		if v.Verdict != nil {
			want = append(want, v.Verdict.Word, v.Verdict.Names, v.DiagnosedLoad)
		}
		if v.Launch != "" {
			want = append(want, v.Launch)
		}
		if v.Stopped != "" {
			want = append(want, v.Stopped)
		}
		var text, page, js bytes.Buffer
		if err := ProbeText(&text, r, Options{Width: 100}); err != nil {
			t.Fatal(err)
		}
		if err := ProbeHTML(&page, r, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := ProbeJSON(&js, r); err != nil {
			t.Fatal(err)
		}
		slack, err := json.Marshal(SlackProbe(r, SlackOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		var back probe.Result
		if err := json.Unmarshal(js.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		bv := view.ProbeOf(&back)
		var slackText []string
		var msgs []map[string]any
		if err := json.Unmarshal(slack, &msgs); err != nil {
			t.Fatal(err)
		}
		collectStrings(msgs, &slackText)
		said := map[string]string{
			"text":  oneLine(text.String()),
			"html":  oneLine(nodeText(parsePage(t, page.String()).root)),
			"slack": oneLine(strings.Join(slackText, " ")),
			"json": oneLine(strings.Join([]string{bv.CapacityWord, bv.Capacity, verdictWords(bv), bv.DiagnosedLoad, bv.Launch,
				bv.Stopped}, " ")),
		}
		for format, got := range said {
			for _, w := range want {
				if w = oneLine(w); format == "slack" {
					w = oneLine(esc(w))
				}
				// The page sets its words in capitals with CSS.
				if format == "html" {
					got, w = strings.ToLower(got), strings.ToLower(w)
				}
				if !strings.Contains(got, w) {
					t.Errorf("case %d (%s): %s does not say %q", i, r.Target, format, w)
				}
			}
		}
	}
}

func verdictWords(v view.Probe) string {
	if v.Verdict == nil {
		return ""
	}
	return v.Verdict.Word + " " + v.Verdict.Names
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// collectStrings gathers every string in a decoded JSON value.
func collectStrings(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case []any:
		for _, e := range x {
			collectStrings(e, out)
		}
	case map[string]any:
		for _, e := range x {
			collectStrings(e, out)
		}
	case []map[string]any:
		for _, e := range x {
			collectStrings(e, out)
		}
	}
}
