package slackkit_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// What the renderer makes of a real diagnosis posts both ways within
// Slack's limits (the fake refuses a message that breaks one).
func TestRenderedDiagnosisPosts(t *testing.T) {
	t.Parallel()
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "examples", "queueing")
	d, err := diagnosis.Run(context.Background(), diagnosis.Sources{Snapshots: []string{filepath.Join(dir, "start.prom"), filepath.Join(dir, "end.prom")},
		SnapshotInterval: 15 * time.Minute},
		set, &rules.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := report.SlackDiagnosis(d, report.SlackOptions{ReportURL: "https://reports.example.com/r/1", GraphURL: "https://grafana.example.com/explore"})
	if len(msgs) == 0 {
		t.Fatal("no messages rendered")
	}
	for _, dest := range []func(*fakeslack.Server) slackkit.Destination{
		func(f *fakeslack.Server) slackkit.Destination {
			return slackkit.Destination{WebhookURL: f.WebhookURL()}
		},
		func(f *fakeslack.Server) slackkit.Destination {
			return slackkit.Destination{Token: fakeslack.Token, Channel: fakeslack.Channel, APIURL: f.APIURL()}
		},
	} {
		f := fakeslack.Start()
		res, err := (&slackkit.Poster{Dest: dest(f), Sleep: func(context.Context, time.Duration) error { return nil }}).Post(context.Background(), msgs)
		if err != nil {
			t.Fatalf("%v\n%s", err, f.Summary())
		}
		for _, r := range f.Requests() {
			if len(r.Problems) > 0 || !r.Text {
				t.Errorf("request %d: %v (text %v)", r.N, r.Problems, r.Text)
			}
		}
		if len(res) != len(msgs) {
			t.Errorf("%d results for %d messages", len(res), len(msgs))
		}
		f.Close()
	}
}
