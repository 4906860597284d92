// Package core is the seam between llmdoctor serve's one server and its
// front ends (the Slack app, the Alertmanager receiver, the watch, and in time
// the pages and the API): what a front end may ask of the server
// (Host) and the words they share (Request, the triggers, ErrBusy). A
// front end imports core, never the server; package serve implements
// Host and wires the front ends, so no import goes both ways.
package core

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// Request says what to diagnose: a selector added to every query and the
// window ending at End (zero: now).
type Request struct {
	Selector string
	Window   time.Duration
	End      time.Time
	// Latest marks a diagnosis of the current window made by the server's
	// own work (watch, Alertmanager, slash command): only those set the
	// verdict metrics and are kept for the report pages, so an API call
	// over another window or a narrower selector cannot overwrite what
	// alerts read, nor push runs out of the history.
	Latest bool
	// Trigger says what asked (TriggerWatch, …); the report pages show it.
	Trigger string
	// Reason says, in a few words, why it asked ("alert HighTTFT"), for
	// the report pages ("": the trigger says enough).
	Reason string
}

// What asked for a diagnosis (Request.Trigger), as the report pages name
// it.
const (
	TriggerWatch        = "watch"
	TriggerAlertmanager = "alertmanager"
	TriggerSlash        = "slash command"
	TriggerAPI          = "api"
)

// ErrBusy is returned when every diagnosis slot is taken.
var ErrBusy = errors.New("busy: too many diagnoses in flight, try again shortly")

// RunRef names a run the server kept for its report pages; the zero value
// is none. A front end passes it back to the server (SlackMessages), which
// links the run's page.
type RunRef struct{ Slug, ID string }

// Host is what a front end asks of the server: diagnoses within its
// limits, messages rendered with links to its pages, posts counted in its
// metrics, background work its shutdown waits for, and routes.
type Host interface {
	// Acquire takes a diagnosis slot without waiting; ok is false when all
	// are taken. A front end that answers at once and diagnoses in the
	// background takes its slot first, so that it can answer "busy".
	Acquire() (release func(), ok bool)
	// DiagnoseHeld runs one diagnosis for a caller holding a slot,
	// within the request timeout; runs names, in d's order, the runs kept
	// for the report pages (a Latest request's).
	DiagnoseHeld(ctx context.Context, req Request) (d *advisor.Diagnosis, runs []RunRef, err error)
	// Diagnose is DiagnoseHeld taking its own slot (ErrBusy when none is
	// free).
	Diagnose(ctx context.Context, req Request) (*advisor.Diagnosis, error)
	// SlackMessages renders d, one message per target, each linking to
	// its run's page when it was kept; otherwise to o.ReportURL.
	SlackMessages(d *advisor.Diagnosis, runs []RunRef, o report.SlackOptions) []slackkit.Message
	// Posted counts what a post sent, as every post of the server is.
	Posted(res []slackkit.Result, err error)
	// Background runs f after the handler that started it answered;
	// shutdown waits for it.
	Background(f func())
	// Handle serves a route on the server.
	Handle(pattern string, h http.HandlerFunc)
	// Now is the server's clock; Log its logger.
	Now() time.Time
	Log() *slog.Logger
	// Limits are the server's: diagnoses in flight at once, the longest
	// one may take, and the default window.
	MaxConcurrent() int
	RequestTimeout() time.Duration
	DefaultWindow() time.Duration
	// Slack is the server's Slack destination (zero: none); Post posts
	// to it with retries, counted in the server's metrics.
	Slack() slackkit.Destination
	Post(ctx context.Context, msgs []slackkit.Message) ([]slackkit.Result, error)
	// ExternalURL is the server's address as users reach it ("" unknown),
	// for links in messages.
	ExternalURL() string
}

// DiagnosisPath is the API's diagnosis route; messages link to it.
const DiagnosisPath = "/api/v1/diagnosis"

// Plain writes a one-line text answer, as every route answers an error.
func Plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, strings.Join(strings.Fields(msg), " ")+"\n")
}

// PostDeadline bounds posting one group of messages, retries included.
const PostDeadline = 2 * time.Minute

// Verdict is what the watch compares between runs and the report pages
// list: a target's bottleneck, status and, for a bottleneck found, its
// worst deciding severity. Status StatusGone marks a target missing from
// the diagnosis.
type Verdict struct {
	Bottleneck string `json:"bottleneck,omitempty"`
	Status     string `json:"status"`
	Severity   string `json:"severity,omitempty"`
}

// StatusGone is the pending verdict of a target the diagnosis no longer
// has.
const StatusGone = "gone"

// Known says a verdict is established (the zero Verdict is not).
func (v Verdict) Known() bool { return v.Status != "" }

// Healthy says the verdict is healthy.
func (v Verdict) Healthy() bool { return v.Status == "healthy" }

// VerdictOf is a target's verdict: the verdict's bottleneck and status,
// and for a bottleneck found the worst severity among the findings that
// can decide a verdict (not explained by another, not capped for a small
// share).
func VerdictOf(t advisor.TargetReport) Verdict {
	v := Verdict{Bottleneck: t.Primary.Bottleneck, Status: t.Primary.Status}
	if !t.Primary.Found() {
		return v
	}
	rank := map[string]int{"warning": 1, "critical": 2}
	for _, f := range t.Findings {
		if f.ExplainedBy != "" || f.Capped != "" || f.Bottleneck == "none" {
			continue
		}
		if rank[f.Severity] > rank[v.Severity] {
			v.Severity = f.Severity
		}
	}
	if v.Severity == "" {
		v.Severity = "warning"
	}
	return v
}

// Label is a verdict as the messages' headers and the pages' links say
// it.
func (v Verdict) Label() string {
	switch v.Status {
	case "found":
		if v.Severity == "critical" {
			return "✗ CRITICAL: " + v.Bottleneck
		}
		return "! WARNING: " + v.Bottleneck
	case "tentative":
		if v.Bottleneck == "none" {
			return "✓ HEALTHY (tentative)"
		}
		if v.Severity == "critical" {
			return "✗ CRITICAL (tentative): " + v.Bottleneck
		}
		return "! WARNING (tentative): " + v.Bottleneck
	case "healthy":
		return "✓ HEALTHY"
	case "inconclusive":
		return "? INCONCLUSIVE"
	case "suppressed":
		return "~ SUPPRESSED: " + v.Bottleneck
	case StatusGone:
		return "gone"
	}
	return "nothing posted"
}
