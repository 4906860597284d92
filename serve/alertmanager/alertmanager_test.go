package alertmanager

import (
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/serve/core"
)

// The end-to-end tests of the receiver, through the server, are serve's
// (alertmanager_test.go there); these are the receiver's own parts.

var amNow = time.Date(2026, 12, 1, 0, 20, 0, 0, time.UTC)

// clockHost is a server of which the receiver asks only the time and the
// default window.
type clockHost struct{ core.Host }

func (clockHost) Now() time.Time               { return amNow }
func (clockHost) DefaultWindow() time.Duration { return 15 * time.Minute }

// Alert labels become matchers with their values escaped; several values
// of a label a regular expression of the quoted values; a label some
// alerts lack is left out. The window is at least the default.
func TestAlertmanagerSelectorAndWindow(t *testing.T) {
	am := &Receiver{s: clockHost{}, cfg: Config{Labels: map[string]string{"model": "model_name", "namespace": "namespace", "pod": "pod"}, LeadIn: DefaultLeadIn}}
	at := func(ago time.Duration, labels ...string) amAlert {
		a := amAlert{Status: "firing", StartsAt: amNow.Add(-ago), Labels: map[string]string{}}
		for i := 0; i+1 < len(labels); i += 2 {
			a.Labels[labels[i]] = labels[i+1]
		}
		return a
	}
	for _, tc := range []struct {
		name   string
		alerts []amAlert
		sel    string
		window time.Duration
	}{
		{"quotes and backslashes", []amAlert{at(time.Minute, "model", `we"ird\model`, "namespace", "prod")},
			`model_name="we\"ird\\model",namespace="prod"`, 15 * time.Minute},
		{"two models", []amAlert{at(2*time.Hour, "model", "a.b", "namespace", "prod"), at(time.Minute, "model", "c|d", "namespace", "prod", "pod", "p-1")},
			`model_name=~"a\\.b|c\\|d",namespace="prod"`, 2*time.Hour + 10*time.Minute},
		{"no labels", []amAlert{at(8*24*time.Hour, "alertname", "X")}, "", prom.MaxWindow},
		{"unknown start", []amAlert{{Status: "firing", Labels: map[string]string{"model": "m"}}}, `model_name="m"`, 15 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := am.amRequest(tc.alerts)
			if req.Selector != tc.sel || req.Window != tc.window {
				t.Fatalf("selector %s window %s, want %s and %s", req.Selector, req.Window, tc.sel, tc.window)
			}
			if _, err := prom.ParseMatchers(req.Selector); err != nil {
				t.Fatalf("the selector does not check: %v", err)
			}
		})
	}
}
