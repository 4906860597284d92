package validation

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// The validation section of docs/probe.md is what the recorded probes
// give today: reanalysed with the probe's current code, against the
// configurations' implied figures.
func TestDocIsCurrent(t *testing.T) {
	section, err := Section("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/probe.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(string(doc), section)
	if err != nil {
		t.Fatal(err)
	}
	if want == string(doc) {
		return
	}
	if *testkit.Update {
		if err := os.WriteFile("../../docs/probe.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("docs/probe.md's validation is stale: run go run ./probe/validation/gen -root . (or go test ./probe/validation -update)")
}

// Every recorded probe is within the tolerances: prefill cost and
// inter-token latency within 10 %, capacity's concurrency the implied one
// and its rate within 20 %.
func TestRecordedProbesWithinTolerance(t *testing.T) {
	section, err := Section("../..")
	if err != nil {
		t.Fatal(err)
	}
	own, _ := Own("../testdata/own")
	peer, _ := Peer("../testdata/peer")
	if len(own) != len(OwnCases) || len(peer) != len(PeerCases) {
		t.Fatalf("%d own and %d peer rows", len(own), len(peer))
	}
	for _, r := range append(own, peer...) {
		if !r.OK() {
			t.Errorf("%s: prefill %.1f%% off, ITL %.1f%% off, capacity %g at %.2f/s against %g at %.2f/s", r.Name,
				100*r.PrefillErr(), 100*r.ITLErr(), r.Load, r.Rate, r.ImpliedLoad, r.ImpliedRate)
		}
		if !strings.HasPrefix(r.Verdict, "queueing") {
			t.Errorf("%s: past capacity the probe diagnosed %q; requests wait for a slot there", r.Name, r.Verdict)
		}
	}
	if !strings.Contains(section, "4 of 4 probes within every tolerance") {
		t.Errorf("section: %.200s", section)
	}
}

// The tolerances catch a wrong figure: a probe whose fit were off by 15 %
// would fail.
func TestToleranceCatchesAnError(t *testing.T) {
	r := Row{Prefill: 0.2, FitPrefill: 0.23, ITL: 0.015, MeasuredITL: 0.015, ImpliedLoad: 8, Load: 8, ImpliedRate: 4, Rate: 4}
	if r.OK() {
		t.Error("a fit 15% off passed")
	}
	r.FitPrefill, r.Load = 0.2, 16
	if r.OK() {
		t.Error("a capacity at twice the implied concurrency passed")
	}
}

// Live: the built-in simulator probed over HTTP in real time now, not a
// recording, is within the tolerances (a few minutes: heavy tier).
func TestLiveOwnSimulator(t *testing.T) {
	testkit.NeedHeavy(t, "probes the built-in simulator live for minutes")
	c := OwnCases[1]
	res, err := ProbeOwn(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OwnRow(c, res)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Errorf("%s live: prefill %.1f%% off, ITL %.1f%% off, capacity %g at %.2f/s against %g at %.2f/s", r.Name,
			100*r.PrefillErr(), 100*r.ITLErr(), r.Load, r.Rate, r.ImpliedLoad, r.ImpliedRate)
	}
}

// record.sh records the configurations PeerCases describe.
func TestRecordScriptMatchesCases(t *testing.T) {
	b, err := os.ReadFile("../testdata/peer/record.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range PeerCases {
		if !strings.Contains(string(b), "record "+c.Name+` "`+c.Flags+`"`) || !strings.Contains(string(b), "--slo "+c.SLO) {
			t.Errorf("record.sh does not record %s with %q and --slo %s", c.Name, c.Flags, c.SLO)
		}
	}
}
