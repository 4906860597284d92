package serve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// amNow is the tests' clock.
var amNow = time.Date(2026, 12, 1, 0, 20, 0, 0, time.UTC)

// amDiagnosis is a queueing verdict on one model, as the pipeline would
// give it.
func amDiagnosis(models ...string) *advisor.Diagnosis {
	if len(models) == 0 {
		models = []string{"llama-3-8b"}
	}
	f := func(v float64) *float64 { return &v }
	start, end := amNow.Add(-15*time.Minute), amNow
	d := &advisor.Diagnosis{Schema: advisor.Schema, Window: advisor.Window{Start: &start, End: &end, Seconds: 900, Points: 61},
		Sources: []advisor.Source{{Kind: diagnosis.KindPrometheus, URL: "http://prometheus:9090", OK: true, Queries: 23}}}
	for i, m := range models {
		t := advisor.TargetReport{Target: evidence.Target{Model: m, ServedBy: "vllm"},
			Primary: advisor.Primary{Bottleneck: "queueing", Rule: "queue/ttft-dominated", Status: "found",
				Summary: "Time to first token is mostly scheduler queue wait"},
			Findings: []advisor.Finding{{Rule: "queue/ttft-dominated", Severity: "critical", Bottleneck: "queueing",
				Title: "Time to first token is mostly scheduler queue wait", Message: "92% of mean TTFT is queue wait",
				Evidence: map[string]float64{"stage.queue.mean": 1.8}}},
			Next: []advisor.Step{}, Gaps: []advisor.Gap{},
			LatencyMap: advisor.LatencyMap{TTFT: f(1.95), Queue: f(1.8), Prefill: f(0.13), Front: f(0.02), Decode: f(7), E2E: f(8.95)},
			Checks:     advisor.Checks{Fired: 1, Quiet: 10}}
		if i > 0 {
			t.Primary = advisor.Primary{Bottleneck: "none", Status: "healthy", Summary: "No bottleneck"}
			t.Findings = []advisor.Finding{}
		}
		d.Targets = append(d.Targets, t)
	}
	return d
}

// amHarness is a server with a fake Slack and a fake pipeline that records
// what it was asked.
type amHarness struct {
	s     *Server
	slack *fakeslack.Server
	mu    sync.Mutex
	asked []diagnosis.PromSource
	// gate, when set, holds every diagnosis until it is closed.
	gate chan struct{}
	// result is what the fake pipeline answers.
	result func() (*advisor.Diagnosis, error)
}

func newAMHarness(t *testing.T, cfg Config, webhook bool) *amHarness {
	t.Helper()
	h := &amHarness{slack: fakeslack.Start(), result: func() (*advisor.Diagnosis, error) { return amDiagnosis(), nil }}
	t.Cleanup(h.slack.Close)
	cfg.Prom = diagnosis.PromSource{Connection: prom.Connection{URL: "http://prometheus.invalid:9090"}, Options: prom.Options{Window: 15 * time.Minute}}
	if webhook {
		cfg.Slack = slackkit.Destination{WebhookURL: h.slack.WebhookURL()}
	} else {
		cfg.Slack = slackkit.Destination{Token: fakeslack.Token, Channel: fakeslack.Channel, APIURL: h.slack.APIURL()}
	}
	if cfg.Alertmanager == nil {
		cfg.Alertmanager = &AlertmanagerConfig{}
	}
	if cfg.ExternalURL == "" {
		cfg.ExternalURL = "https://llmdoctor.example.com"
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return amNow }
	s.diag = func(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error) {
		h.mu.Lock()
		h.asked = append(h.asked, *src.Prom)
		gate := h.gate
		h.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return h.result()
	}
	h.s = s
	return h
}

func (h *amHarness) diagnoses() []diagnosis.PromSource {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]diagnosis.PromSource(nil), h.asked...)
}

// send posts a notification and returns the answer.
func (h *amHarness) send(body string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/alertmanager", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.s.Handler().ServeHTTP(w, req)
	return w
}

// settle waits for the background work to finish.
func (h *amHarness) settle() { h.s.wg.Wait() }

// amNote is a version 4 notification, as Alertmanager 0.25 sends it.
type amNote struct {
	Receiver, Status, GroupKey string
	Alerts                     []amNoteAlert
}

type amNoteAlert struct {
	Status   string
	Labels   map[string]string
	StartsAt time.Time
	EndsAt   time.Time
}

func (n amNote) JSON() string {
	type a struct {
		Status       string            `json:"status"`
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     time.Time         `json:"startsAt"`
		EndsAt       time.Time         `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
		Fingerprint  string            `json:"fingerprint"`
	}
	var alerts []a
	common := map[string]string{}
	for i, x := range n.Alerts {
		alerts = append(alerts, a{Status: x.Status, Labels: x.Labels, Annotations: map[string]string{"summary": "queue backlog"},
			StartsAt: x.StartsAt, EndsAt: x.EndsAt, GeneratorURL: "http://prometheus:9090/graph?g0.expr=x&g0.tab=1",
			Fingerprint: fmt.Sprintf("%016x", i+1)})
		for k, v := range x.Labels {
			if i == 0 {
				common[k] = v
			} else if common[k] != v {
				delete(common, k)
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"receiver": n.Receiver, "status": n.Status, "alerts": alerts,
		"groupLabels": map[string]string{"alertname": "VLLMQueueBacklog"}, "commonLabels": common, "commonAnnotations": map[string]string{},
		"externalURL": "http://127.0.0.1:19093", "version": "4", "groupKey": n.GroupKey, "truncatedAlerts": 0,
		// A field of a later Alertmanager: ignored.
		"notification_reason": "first notification"})
	return string(b) + "\n"
}

func amFiring(group string, models ...string) amNote {
	n := amNote{Receiver: "llmdoctor", Status: "firing", GroupKey: `{}:{alertname="VLLMQueueBacklog", namespace="` + group + `"}`}
	for _, m := range models {
		n.Alerts = append(n.Alerts, amNoteAlert{Status: "firing", StartsAt: amNow.Add(-40 * time.Minute),
			Labels: map[string]string{"alertname": "VLLMQueueBacklog", "model_name": m, "namespace": group, "severity": "warning"}})
	}
	return n
}

func amResolvedNote(n amNote) amNote {
	n.Status = "resolved"
	for i := range n.Alerts {
		n.Alerts[i].Status = "resolved"
		n.Alerts[i].EndsAt = amNow
	}
	return n
}

func channelMessages(reqs []fakeslack.Request) []fakeslack.Request {
	var out []fakeslack.Request
	for _, r := range reqs {
		if r.ThreadTS == "" {
			out = append(out, r)
		}
	}
	return out
}

// A firing group is diagnosed and posted once: Alertmanager's repeats of
// it, and the same group with an alert added, post nothing more.
func TestAlertmanagerPostsOncePerGroup(t *testing.T) {
	h := newAMHarness(t, Config{}, false)
	n := amFiring("inference", "llama-3-8b")
	for i := 0; i < 3; i++ {
		if w := h.send(n.JSON()); w.Code != http.StatusOK {
			t.Fatalf("notification %d: %d %s", i, w.Code, w.Body)
		}
	}
	h.settle()
	more := amFiring("inference", "llama-3-8b", "mistral-7b")
	if w := h.send(more.JSON()); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "already posted") {
		t.Fatalf("repeat with an alert added: %d %s", w.Code, w.Body)
	}
	h.settle()
	if got := len(h.diagnoses()); got != 1 {
		t.Fatalf("%d diagnoses, want 1", got)
	}
	if m := channelMessages(h.slack.Accepted()); len(m) != 1 {
		t.Fatalf("%d messages in the channel, want 1:\n%s", len(m), h.slack.Summary())
	}
	p := h.diagnoses()[0]
	if want := `model_name="llama-3-8b",namespace="inference"`; p.Options.Selector != want {
		t.Errorf("selector %s, want %s", p.Options.Selector, want)
	}
	// 40m since the alert began, plus the 10m lead-in.
	if p.Options.Window != 50*time.Minute || !p.Options.End.Equal(amNow) {
		t.Errorf("window %s ending %s, want 50m ending %s", p.Options.Window, p.Options.End, amNow)
	}
	msg := h.slack.Accepted()[0]
	text, _ := msg.Payload["text"].(string)
	if !strings.HasPrefix(text, "VLLMQueueBacklog firing · llmdoctor: ✗ CRITICAL: queueing") {
		t.Errorf("text %q", text)
	}
	var blocks strings.Builder
	enc := json.NewEncoder(&blocks)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg.Payload["attachments"]); err != nil {
		t.Fatal(err)
	}
	// The full report is the HTML page of the run that made the message
	// (pages_test.go follows such links): the alert's namespace narrows
	// the model, so the page is the narrowed target's.
	for _, want := range []string{"Alertmanager: *VLLMQueueBacklog* firing", "<https://llmdoctor.example.com/report/llama-3-8b--namespace-inference/20261201-002000|Full report>",
		"http://prometheus:9090/graph"} {
		if !strings.Contains(blocks.String(), want) {
			t.Errorf("the message lacks %s:\n%s", want, blocks.String())
		}
	}
	if w := apiGet(h.s, "/report/llama-3-8b--namespace-inference/20261201-002000"); w.Code != http.StatusOK {
		t.Errorf("the message's report link: %d %s", w.Code, w.Body)
	}
	if got := scrapeValue(t, h.s, `llmdoctor_alertmanager_notifications_total{outcome="duplicate"}`); got != 3 {
		t.Errorf("%v duplicates counted, want 3", got)
	}
	// Another receiver with the same group key is another group.
	other := n
	other.Receiver = "llmdoctor-oncall"
	h.send(other.JSON())
	h.settle()
	if m := channelMessages(h.slack.Accepted()); len(m) != 2 {
		t.Fatalf("another receiver's group: %d messages, want 2", len(m))
	}
}

// A resolution replies in the thread of the group's message once; a later
// firing of the group is a new message.
func TestAlertmanagerResolvedRepliesInThread(t *testing.T) {
	h := newAMHarness(t, Config{}, false)
	n := amFiring("inference", "llama-3-8b")
	h.send(n.JSON())
	h.settle()
	for i := 0; i < 2; i++ {
		if w := h.send(amResolvedNote(n).JSON()); w.Code != http.StatusOK {
			t.Fatalf("resolved: %d %s", w.Code, w.Body)
		}
	}
	h.settle()
	reqs := h.slack.Accepted()
	var replies []fakeslack.Request
	for _, r := range reqs {
		if r.ThreadTS != "" {
			replies = append(replies, r)
		}
	}
	if len(replies) != 1 {
		t.Fatalf("%d thread replies, want the resolution:\n%s", len(replies), h.slack.Summary())
	}
	r := replies[0]
	if text, _ := r.Payload["text"].(string); r.ThreadTS != reqs[0].TS || !strings.HasPrefix(text, "✓ resolved: VLLMQueueBacklog") {
		t.Fatalf("resolution %q in thread %s, main message %s", text, r.ThreadTS, reqs[0].TS)
	}
	h.send(n.JSON())
	h.settle()
	if m := channelMessages(h.slack.Accepted()); len(m) != 2 {
		t.Fatalf("firing again after the resolution: %d messages, want 2:\n%s", len(m), h.slack.Summary())
	}
	// A resolution of a group never posted about posts nothing.
	if w := h.send(amResolvedNote(amFiring("other", "x")).JSON()); !strings.Contains(w.Body.String(), "nothing to resolve") {
		t.Fatalf("unknown group resolved: %s", w.Body)
	}
}

// Through a webhook, which cannot reply in a thread, the resolution is a
// short message of its own.
func TestAlertmanagerResolvedByWebhook(t *testing.T) {
	h := newAMHarness(t, Config{}, true)
	n := amFiring("inference", "llama-3-8b")
	h.send(n.JSON())
	h.send(amResolvedNote(n).JSON())
	h.settle()
	got := h.slack.Accepted()
	if len(got) != 2 {
		t.Fatalf("%d messages, want the diagnosis and the resolution:\n%s", len(got), h.slack.Summary())
	}
	if text, _ := got[1].Payload["text"].(string); !strings.HasPrefix(text, "✓ resolved: VLLMQueueBacklog (model_name=\"llama-3-8b\",namespace=\"inference\")") {
		t.Fatalf("resolution %q", text)
	}
}

// With a credential configured, a request without it, or with a wrong
// one, is refused and nothing runs.
func TestAlertmanagerRefusesUnauthenticated(t *testing.T) {
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	for _, tc := range []struct {
		name string
		cfg  AlertmanagerConfig
		ok   []string
		bad  []string
	}{
		{"bearer", AlertmanagerConfig{Token: "s3cr3t-token"}, []string{"Bearer s3cr3t-token", "bearer s3cr3t-token"},
			[]string{"", "Bearer wrong", "Bearer s3cr3t-token-longer", "Bearer s3cr3t-toke", "s3cr3t-token", basic("am", "s3cr3t-token"), "Bearer"}},
		{"basic", AlertmanagerConfig{User: "am", Password: "pw"}, []string{basic("am", "pw")},
			[]string{"", basic("am", "wrong"), basic("other", "pw"), "Basic !!!", "Bearer pw", basic("am", "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			h := newAMHarness(t, Config{Alertmanager: &cfg}, false)
			for i, a := range tc.bad {
				w := h.send(amFiring(fmt.Sprint("bad", i), "m").JSON(), "Authorization", a)
				if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") == "" {
					t.Errorf("Authorization %q: %d, want 401 with WWW-Authenticate", a, w.Code)
				}
			}
			h.settle()
			if n := len(h.diagnoses()); n != 0 {
				t.Fatalf("%d diagnoses ran for refused requests", n)
			}
			for i, a := range tc.ok {
				if w := h.send(amFiring(fmt.Sprint("ok", i), "m").JSON(), "Authorization", a); w.Code != http.StatusOK {
					t.Errorf("Authorization %q: %d %s", a, w.Code, w.Body)
				}
			}
			h.settle()
			if n := len(h.diagnoses()); n != len(tc.ok) {
				t.Fatalf("%d diagnoses, want %d", n, len(tc.ok))
			}
		})
	}
}

// A body that is not a version 4 notification is refused, and nothing runs.
func TestAlertmanagerBadPayload(t *testing.T) {
	h := newAMHarness(t, Config{Alertmanager: &AlertmanagerConfig{MaxBody: 64 << 10}}, false)
	good := amFiring("inference", "llama-3-8b").JSON()
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"not JSON", "receiver=llmdoctor", http.StatusBadRequest},
		{"truncated", good[:len(good)/2], http.StatusBadRequest},
		{"empty", "", http.StatusBadRequest},
		{"version 3", strings.Replace(good, `"version":"4"`, `"version":"3"`, 1), http.StatusBadRequest},
		{"no group key", strings.Replace(good, `"groupKey":`, `"groupKeyX":`, 1), http.StatusBadRequest},
		{"unknown status", strings.Replace(good, `"status":"firing","truncatedAlerts"`, `"status":"pending","truncatedAlerts"`, 1), http.StatusBadRequest},
		{"alerts not a list", strings.Replace(good, `"alerts":[`, `"alerts":{"x":[`, 1), http.StatusBadRequest},
		{"oversized", `{"version":"4","receiver":"` + strings.Repeat("x", 65<<10) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		if w := h.send(tc.body); w.Code != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, w.Code, w.Body, tc.status)
		}
	}
	h.settle()
	if n := len(h.diagnoses()); n != 0 {
		t.Fatalf("%d diagnoses ran for refused payloads", n)
	}
	if got := scrapeValue(t, h.s, `llmdoctor_alertmanager_notifications_total{outcome="invalid"}`); got != 8 {
		t.Errorf("%v invalid counted, want 8", got)
	}
}

// When every diagnosis slot is taken, a new group is answered 429 at once
// (Alertmanager sends it again), and is diagnosed when sent again after.
// The receiver answers before its diagnosis ends.
func TestAlertmanagerBusy(t *testing.T) {
	h := newAMHarness(t, Config{MaxConcurrent: 1}, false)
	h.gate = make(chan struct{})
	start := time.Now()
	if w := h.send(amFiring("a", "llama-3-8b").JSON()); w.Code != http.StatusOK {
		t.Fatalf("first group: %d %s", w.Code, w.Body)
	}
	w := h.send(amFiring("b", "mistral-7b").JSON())
	if w.Code != http.StatusTooManyRequests || !strings.HasPrefix(w.Body.String(), "busy") || w.Header().Get("Retry-After") == "" {
		t.Fatalf("second group while busy: %d %q", w.Code, w.Body)
	}
	// The API says the same.
	api := httptest.NewRecorder()
	h.s.Handler().ServeHTTP(api, httptest.NewRequest(http.MethodGet, "/api/v1/diagnosis?selector=model_name%3D%22x%22", nil))
	if api.Code != http.StatusTooManyRequests || !strings.HasPrefix(api.Body.String(), "busy") {
		t.Fatalf("API while busy: %d %q", api.Code, api.Body)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("answers took %s while the diagnosis ran", took)
	}
	close(h.gate)
	h.settle()
	if w := h.send(amFiring("b", "mistral-7b").JSON()); w.Code != http.StatusOK {
		t.Fatalf("second group sent again: %d %s", w.Code, w.Body)
	}
	h.settle()
	if m := channelMessages(h.slack.Accepted()); len(m) != 2 {
		t.Fatalf("%d messages, want one per group:\n%s", len(m), h.slack.Summary())
	}
	if got := scrapeValue(t, h.s, `llmdoctor_alertmanager_notifications_total{outcome="busy"}`); got != 1 {
		t.Errorf("%v busy counted, want 1", got)
	}
}

// When the diagnosis fails, the group gets a short message saying so,
// naming no server.
func TestAlertmanagerDiagnosisFails(t *testing.T) {
	h := newAMHarness(t, Config{}, false)
	h.result = func() (*advisor.Diagnosis, error) {
		return nil, &diagnosis.ReadError{Kind: diagnosis.KindPrometheus, Err: &prom.Error{Kind: prom.Unreachable, URL: "http://prometheus.internal:9090", Detail: "connection refused"}}
	}
	h.send(amFiring("inference", "llama-3-8b").JSON())
	h.settle()
	got := h.slack.Accepted()
	if len(got) != 1 {
		t.Fatalf("%d messages:\n%s", len(got), h.slack.Summary())
	}
	text, _ := got[0].Payload["text"].(string)
	if !strings.Contains(text, "could not diagnose it over 50m: Prometheus could not be queried") || strings.Contains(text, "prometheus.internal") {
		t.Fatalf("failure message %q", text)
	}
}

// A group of several targets posts one message, the most severe target's,
// with the others in its thread.
func TestAlertmanagerSeveralTargetsOneMessage(t *testing.T) {
	h := newAMHarness(t, Config{}, false)
	h.result = func() (*advisor.Diagnosis, error) { return amDiagnosis("a-healthy", "b-queueing"), nil }
	d := amDiagnosis("a-healthy", "b-queueing")
	d.Targets[0], d.Targets[1] = d.Targets[1], d.Targets[0]
	d.Targets[0].Target.Model, d.Targets[1].Target.Model = "a-healthy", "b-queueing"
	h.result = func() (*advisor.Diagnosis, error) { return d, nil }
	h.send(amFiring("inference", "a-healthy", "b-queueing").JSON())
	h.settle()
	all := h.slack.Accepted()
	m := channelMessages(all)
	if len(m) != 1 {
		t.Fatalf("%d messages in the channel, want 1:\n%s", len(m), h.slack.Summary())
	}
	if text, _ := m[0].Payload["text"].(string); !strings.Contains(text, "queueing on model b-queueing") {
		t.Fatalf("main message %q, want the queueing target's", text)
	}
	if len(all) < 2 {
		t.Fatalf("the other target is not in the thread:\n%s", h.slack.Summary())
	}
	for _, r := range all {
		if len(r.Problems) > 0 {
			t.Errorf("message #%d breaks Slack's limits: %v", r.N, r.Problems)
		}
	}
}

// Shutdown waits for the posts in flight.
func TestShutdownFinishesPosts(t *testing.T) {
	h := newAMHarness(t, Config{}, false)
	h.gate = make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.s.Serve(ctx, ln) }()
	resp, err := http.Post("http://"+ln.Addr().String()+"/alertmanager", "application/json", strings.NewReader(amFiring("inference", "llama-3-8b").JSON()))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("notification: %v %v", err, resp)
	}
	_ = resp.Body.Close() // only the status is wanted
	cancel()
	var released atomic.Bool
	go func() { time.Sleep(300 * time.Millisecond); released.Store(true); close(h.gate) }()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return")
	}
	if !released.Load() {
		t.Fatal("Serve returned before the diagnosis in flight ended")
	}
	if m := channelMessages(h.slack.Accepted()); len(m) != 1 {
		t.Fatalf("the post in flight did not finish: %d messages", len(m))
	}
}

// The receiver's memory of groups is bounded.
func TestAlertmanagerGroupsBounded(t *testing.T) {
	h := newAMHarness(t, Config{Alertmanager: &AlertmanagerConfig{MaxGroups: 3}}, true)
	for i := 0; i < 5; i++ {
		h.send(amFiring(fmt.Sprint("ns", i), "m").JSON())
		h.settle()
	}
	if n := h.s.am.Groups(); n != 3 {
		t.Fatalf("%d groups remembered, want 3", n)
	}
	// The oldest was forgotten: it posts again; the newest does not.
	h.send(amFiring("ns4", "m").JSON())
	h.send(amFiring("ns0", "m").JSON())
	h.settle()
	if n := len(h.slack.Accepted()); n != 6 {
		t.Fatalf("%d messages, want 6", n)
	}
}

// Without a Slack destination the receiver cannot be configured.
func TestAlertmanagerNeedsSlack(t *testing.T) {
	_, err := New(Config{Alertmanager: &AlertmanagerConfig{}})
	if err == nil || !strings.Contains(err.Error(), "posts to Slack") {
		t.Fatalf("got %v", err)
	}
	_, err = New(Config{Alertmanager: &AlertmanagerConfig{Labels: map[string]string{"model-name": "model_name"}},
		Slack: slackkit.Destination{WebhookURL: "https://hooks.slack.com/services/T/B/x"}})
	if err == nil {
		t.Fatal("a bad label name was taken")
	}
}

// Without a resolution in between (send_resolved: false, or a resolve and
// re-fire between two flushes), a group whose firing alerts all started
// after it was posted is a new incident and is posted again; a plain repeat
// is not.
func TestAlertmanagerNewIncidentInSameGroup(t *testing.T) {
	h := newAMHarness(t, Config{}, false)
	first := amFiring("inference", "llama-3-8b")
	h.send(first.JSON())
	h.settle()
	again := amFiring("inference", "llama-3-8b")
	if w := h.send(again.JSON()); !strings.Contains(w.Body.String(), "already posted") {
		t.Fatalf("a repeat was not deduped: %d %s", w.Code, w.Body)
	}
	later := amFiring("inference", "llama-3-8b")
	for i := range later.Alerts {
		later.Alerts[i].StartsAt = amNow.Add(time.Minute)
	}
	if w := h.send(later.JSON()); w.Code != http.StatusOK || strings.Contains(w.Body.String(), "already posted") {
		t.Fatalf("a new incident was taken for a repeat: %d %s", w.Code, w.Body)
	}
	h.settle()
	if m := channelMessages(h.slack.Accepted()); len(m) != 2 {
		t.Fatalf("%d messages in the channel, want 2:\n%s", len(m), h.slack.Summary())
	}
}
