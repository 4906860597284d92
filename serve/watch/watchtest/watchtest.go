// Package watchtest is what the tests of the watch, and of the server
// through it, share: fake diagnoses of a few targets, a fake pipeline
// answering them, and the messages a fake Slack took.
package watchtest

import (
	"context"
	"sync"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// TV is a target's verdict in a fake diagnosis: Sev is critical or
// warning (a bottleneck found), healthy or inconclusive.
type TV struct{ Model, Bottleneck, Sev string }

// Verdicts the tests use.
var (
	QueueCrit = TV{"m1", "queueing", "critical"}
	QueueWarn = TV{"m1", "queueing", "warning"}
	KvCrit    = TV{"m1", "kv-capacity", "critical"}
	M1Healthy = TV{"m1", "", "healthy"}
	M2Healthy = TV{"m2", "", "healthy"}
	M2Crit    = TV{"m2", "decode", "critical"}
)

// DiagOf is a diagnosis of the targets ts, one vLLM model each.
func DiagOf(ts ...TV) *advisor.Diagnosis {
	d := &advisor.Diagnosis{Schema: "llmdoctor.diagnosis/v1"}
	for _, x := range ts {
		r := advisor.TargetReport{Target: evidence.Target{Model: x.Model, ServedBy: "vllm"}}
		switch x.Sev {
		case "healthy":
			r.Primary = advisor.Primary{Bottleneck: "none", Status: "healthy", Summary: "No bottleneck above info"}
		case "inconclusive":
			r.Primary = advisor.Primary{Bottleneck: "unknown", Status: "inconclusive", Summary: "deciding checks could not run"}
		default:
			rule := x.Bottleneck + "/rule"
			r.Primary = advisor.Primary{Bottleneck: x.Bottleneck, Rule: rule, Status: "found", Summary: x.Bottleneck + " holds TTFT"}
			r.Findings = []advisor.Finding{{Rule: rule, Severity: x.Sev, Bottleneck: x.Bottleneck, Title: x.Bottleneck + " holds TTFT", Message: "numbers"}}
		}
		d.Targets = append(d.Targets, r)
	}
	return d
}

// Seq is the targets of one run.
func Seq(ts ...TV) []TV { return ts }

// FakeDiag stands in for the pipeline: it answers the diagnosis set last.
type FakeDiag struct {
	mu        sync.Mutex
	d         *advisor.Diagnosis
	err       error
	calls     int
	selectors []string
	// Hook runs inside each diagnosis (a test blocks or signals there);
	// set it before the first diagnosis.
	Hook func(ctx context.Context) error
}

// Set makes the next diagnoses find ts; none: no target in the source.
func (f *FakeDiag) Set(ts ...TV) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.d, f.err = DiagOf(ts...), nil
	if len(ts) == 0 {
		f.d, f.err = nil, &diagnosis.NoTargetError{Why: diagnosis.NoEngineMetrics}
	}
}

// Fail makes the next diagnoses fail with err.
func (f *FakeDiag) Fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.d, f.err = nil, err
}

// Diagnose answers what was set, counting the call and its selector.
func (f *FakeDiag) Diagnose(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error) {
	f.mu.Lock()
	f.calls++
	if src.Prom != nil {
		f.selectors = append(f.selectors, src.Prom.Options.Selector)
	}
	d, err, hook := f.d, f.err, f.Hook
	f.mu.Unlock()
	if hook != nil {
		if err := hook(ctx); err != nil {
			return nil, err
		}
	}
	return d, err
}

// Count is how many diagnoses were asked for.
func (f *FakeDiag) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Selectors are the selectors of the diagnoses asked for, in order.
func (f *FakeDiag) Selectors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.selectors...)
}

// BotDest posts to fs with a bot token.
func BotDest(fs *fakeslack.Server) slackkit.Destination {
	return slackkit.Destination{Token: fakeslack.Token, Channel: fakeslack.Channel, APIURL: fs.APIURL()}
}

// Mains are the accepted messages that are not details: top-level ones,
// and thread replies sent to the channel too.
func Mains(fs *fakeslack.Server) []fakeslack.Request {
	var out []fakeslack.Request
	for _, r := range fs.Accepted() {
		if r.ThreadTS == "" || r.Payload["reply_broadcast"] == "true" {
			out = append(out, r)
		}
	}
	return out
}

// Text is a message's text.
func Text(r fakeslack.Request) string {
	s, _ := r.Payload["text"].(string)
	return s
}
