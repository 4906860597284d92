package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/slack-go/slack"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/serve/slackapp"
)

const slackTestSecret = "llmdoctor-test-signing-secret"

// slackSignature is the header value Slack sends for body at ts: v0=
// and the HMAC-SHA256 of "v0:" + ts + ":" + body.
func slackSignature(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// slackAck is the immediate answer to a command.
type slackAck struct {
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
}

// slackButton is what the messages' buttons carry, as the tests read it.
type slackButton struct {
	Run         string `json:"r"`
	Model       string `json:"m"`
	Window      string `json:"w"`
	End         int64  `json:"e"`
	Target      int    `json:"i"`
	Name        string `json:"t"`
	TargetModel string `json:"tm"`
}

// fixture is a real diagnosis: examples/queueing through the pipeline.
var slackFixture struct {
	once sync.Once
	d    *advisor.Diagnosis
	err  error
}

func slackFixtureDiagnosis(t testing.TB) *advisor.Diagnosis {
	t.Helper()
	slackFixture.once.Do(func() {
		b, err := rules.Builtin()
		if err != nil {
			slackFixture.err = err
			return
		}
		set, err := rules.NewSet(b)
		if err != nil {
			slackFixture.err = err
			return
		}
		slackFixture.d, slackFixture.err = diagnosis.Run(context.Background(), diagnosis.Sources{
			Snapshots:        []string{"../examples/queueing/start.prom", "../examples/queueing/end.prom"},
			SnapshotInterval: 15 * time.Minute}, set, nil, nil)
	})
	if slackFixture.err != nil {
		t.Fatal(slackFixture.err)
	}
	if len(slackFixture.d.Targets) == 0 || slackFixture.d.Targets[0].Target.Model == "" {
		t.Fatalf("fixture has no target with a model: %+v", slackFixture.d.Targets)
	}
	return slackFixture.d
}

// slackManyTargets is the fixture's target n times under different models.
func slackManyTargets(t testing.TB, n int) *advisor.Diagnosis {
	base := slackFixtureDiagnosis(t)
	d := *base
	d.Targets = nil
	for i := range n {
		tr := base.Targets[0]
		tr.Target.Model = fmt.Sprintf("model-%d", i)
		d.Targets = append(d.Targets, tr)
	}
	return &d
}

// slackSinkPost is one message posted to a response_url.
type slackSinkPost struct {
	Path    string
	Payload map[string]any
}

// slackSink stands in for Slack's response_url: it takes JSON, answers
// "ok", and records what it got.
type slackSink struct {
	srv   *httptest.Server
	mu    sync.Mutex
	posts []slackSinkPost
	ch    chan slackSinkPost
}

func newSlackSink(t testing.TB) *slackSink {
	k := &slackSink{ch: make(chan slackSinkPost, 1000)}
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p slackSinkPost
		p.Path = r.URL.Path
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &p.Payload) != nil {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		k.mu.Lock()
		k.posts = append(k.posts, p)
		k.mu.Unlock()
		k.ch <- p
		io.WriteString(w, "ok")
	}))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *slackSink) url(id string) string { return k.srv.URL + "/commands/T0LLMDOC/" + id + "/xyz" }

func (k *slackSink) all() []slackSinkPost {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]slackSinkPost(nil), k.posts...)
}

// next waits for the next post.
func (k *slackSink) next(t testing.TB) slackSinkPost {
	t.Helper()
	select {
	case p := <-k.ch:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("nothing was posted to the response_url in 10s")
	}
	return slackSinkPost{}
}

// slackHarness is a server with the Slack app and a fake diagnosis.
type slackHarness struct {
	srv   *Server
	sink  *slackSink
	calls atomic.Int64
	mu    sync.Mutex
	reqs  []diagnosis.PromSource
	// gate, when set, holds every diagnosis until it is closed.
	gate chan struct{}
	// result is what the fake diagnosis returns.
	result func() (*advisor.Diagnosis, error)
	now    func() time.Time
}

type slackHarnessOpt func(*Config)

func newSlackHarness(t testing.TB, opts ...slackHarnessOpt) *slackHarness {
	t.Helper()
	h := &slackHarness{sink: newSlackSink(t)}
	d := slackFixtureDiagnosis(t)
	h.result = func() (*advisor.Diagnosis, error) { return d, nil }
	cfg := Config{MaxConcurrent: 4, SlackApp: &SlackAppConfig{SigningSecret: slackTestSecret, ResponseHosts: []string{"127.0.0.1"},
		Now: func() time.Time {
			if h.now != nil {
				return h.now()
			}
			return time.Now()
		}}}
	cfg.Prom.Options.Window = 15 * time.Minute
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.diag = func(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error) {
		h.calls.Add(1)
		h.mu.Lock()
		h.reqs = append(h.reqs, *src.Prom)
		h.mu.Unlock()
		if h.gate != nil {
			select {
			case <-h.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return h.result()
	}
	h.srv = srv
	t.Cleanup(srv.wg.Wait)
	return h
}

func (h *slackHarness) lastReq(t testing.TB) diagnosis.PromSource {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.reqs) == 0 {
		t.Fatal("no diagnosis was run")
	}
	return h.reqs[len(h.reqs)-1]
}

// slackCommandBody is a slash command's form, as Slack sends it.
func slackCommandBody(text, responseURL string, extra ...string) string {
	v := url.Values{"command": {"/llmdoctor"}, "text": {text}, "team_id": {"T0LLMDOC"}, "channel_id": {"C0GPUALERT"},
		"user_id": {"U0ONCALL"}, "api_app_id": {"A0LLMDOC"}, "response_url": {responseURL}, "trigger_id": {"1.2.abc"}}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return v.Encode()
}

// slackSignedRequest is a request to path signed as Slack signs, at ts.
func slackSignedRequest(path, body string, ts time.Time, secret string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	s := strconv.FormatInt(ts.Unix(), 10)
	r.Header.Set("X-Slack-Request-Timestamp", s)
	r.Header.Set("X-Slack-Signature", slackSignature(secret, s, []byte(body)))
	return r
}

func (h *slackHarness) do(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, r)
	return w
}

// command sends a signed slash command and returns the ack's status and
// decoded body.
func (h *slackHarness) command(t testing.TB, text string, extra ...string) (int, slackAck) {
	t.Helper()
	w := h.do(slackSignedRequest("/slack/commands", slackCommandBody(text, h.sink.url("1"), extra...), time.Now(), slackTestSecret))
	var a slackAck
	if w.Code == http.StatusOK && w.Body.Len() > 0 {
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("ack Content-Type %q", ct)
		}
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
			t.Fatalf("ack %q: %v", w.Body.String(), err)
		}
	}
	return w.Code, a
}

// TestSlackRejects: forged, stale, future, replayed, modified, unsigned,
// malformed and oversized requests to both routes are refused with 401,
// 400 or 413, and nothing is diagnosed or posted. Every one of them.
func TestSlackRejects(t *testing.T) {
	h := newSlackHarness(t, func(c *Config) { c.SlackApp.MaxBody = 4096 })
	now := time.Now()
	base := time.Unix(now.Unix(), 0)
	h.now = func() time.Time { return base }
	cmd := slackCommandBody("diagnose llama-3-8b 30m", h.sink.url("1"))
	click := "payload=" + url.QueryEscape(`{"type":"block_actions","response_url":"`+h.sink.url("2")+`","container":{"is_ephemeral":true},"actions":[{"block_id":"llmdoctor-actions","action_id":"llmdoctor.rerun","value":"{\"tm\":\"llama-3-8b\",\"i\":0}"}]}`)
	big := slackCommandBody("diagnose llama-3-8b 30m "+strings.Repeat("x", 5000), h.sink.url("1"))

	type tc struct {
		name   string
		req    func(path, body string) *http.Request
		status int
	}
	sign := func(body string, ts time.Time, secret string) func(string, string) *http.Request {
		return func(path, _ string) *http.Request { return slackSignedRequest(path, body, ts, secret) }
	}
	headers := func(ts, sig string) func(string, string) *http.Request {
		return func(path, body string) *http.Request {
			r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if ts != "" {
				r.Header.Set("X-Slack-Request-Timestamp", ts)
			}
			if sig != "" {
				r.Header.Set("X-Slack-Signature", sig)
			}
			return r
		}
	}
	tsNow := strconv.FormatInt(base.Unix(), 10)
	cases := func(body string) []tc {
		good := slackSignature(slackTestSecret, tsNow, []byte(body))
		return []tc{
			{"wrong secret", sign(body, base, "not-the-secret"), 401},
			{"empty secret", sign(body, base, ""), 401},
			{"stale timestamp (5m01s old)", sign(body, base.Add(-5*time.Minute-time.Second), slackTestSecret), 401},
			{"stale timestamp (1 day old)", sign(body, base.Add(-24*time.Hour), slackTestSecret), 401},
			{"future timestamp (5m01s ahead)", sign(body, base.Add(5*time.Minute+time.Second), slackTestSecret), 401},
			{"future timestamp (1 year ahead)", sign(body, base.Add(365*24*time.Hour), slackTestSecret), 401},
			{"timestamp zero", sign(body, time.Unix(0, 0), slackTestSecret), 401},
			{"modified body", func(path, _ string) *http.Request {
				r := slackSignedRequest(path, body, base, slackTestSecret)
				r.Body = io.NopCloser(strings.NewReader(strings.Replace(body, "llama", "llamb", 1) + "&x=1"))
				r.ContentLength = -1
				return r
			}, 401},
			{"signature of another timestamp", headers(strconv.FormatInt(base.Unix()-1, 10), good), 401},
			{"missing both headers", headers("", ""), 401},
			{"missing signature", headers(tsNow, ""), 401},
			{"missing timestamp", headers("", good), 401},
			{"signature without v0=", headers(tsNow, strings.TrimPrefix(good, "v0=")), 401},
			{"signature v1=", headers(tsNow, "v1="+strings.TrimPrefix(good, "v0=")), 401},
			{"signature truncated", headers(tsNow, good[:len(good)-2]), 401},
			{"signature not hex", headers(tsNow, "v0="+strings.Repeat("zz", 32)), 401},
			{"signature upper-case V0", headers(tsNow, "V0="+strings.TrimPrefix(good, "v0=")), 401},
			{"two signatures in one header", headers(tsNow, good+","+good), 401},
			{"timestamp not a number", headers("soon", good), 400},
			{"timestamp negative", headers("-"+tsNow, good), 400},
			{"timestamp with a sign", headers("+"+tsNow, good), 400},
			{"timestamp in float", headers(tsNow+".0", good), 400},
			{"timestamp huge", headers("99999999999999999999", good), 400},
			{"timestamp in milliseconds", sign(body, time.Unix(base.Unix()*1000, 0), slackTestSecret), 400},
			{"oversized body, signed", sign(big, base, slackTestSecret), 413},
			{"oversized body, chunked", func(path, _ string) *http.Request {
				r := slackSignedRequest(path, big, base, slackTestSecret)
				r.ContentLength = -1
				return r
			}, 413},
		}
	}
	total, refused := 0, 0
	for _, route := range []struct{ path, body string }{{"/slack/commands", cmd}, {"/slack/interactions", click}} {
		for _, c := range cases(route.body) {
			total++
			w := h.do(c.req(route.path, route.body))
			if w.Code == c.status {
				refused++
			} else {
				t.Errorf("%s %s: HTTP %d %q, want %d", route.path, c.name, w.Code, w.Body.String(), c.status)
			}
		}
		// A replay: the same request twice, the first with help (which runs
		// nothing), so that the second is refused for being seen.
		helpBody := slackCommandBody("help", h.sink.url("1"))
		if route.path == "/slack/interactions" {
			helpBody = "payload=" + url.QueryEscape(`{"type":"view_closed"}`)
		}
		if w := h.do(slackSignedRequest(route.path, helpBody, base, slackTestSecret)); w.Code != 200 {
			t.Fatalf("%s: a good request refused: %d %s", route.path, w.Code, w.Body.String())
		}
		for i := range 3 {
			total++
			if w := h.do(slackSignedRequest(route.path, helpBody, base, slackTestSecret)); w.Code == 401 {
				refused++
			} else {
				t.Errorf("%s: replay %d answered %d", route.path, i+1, w.Code)
			}
		}
	}
	// Signed but malformed inside: 400, and nothing run.
	for _, c := range []struct{ path, body string }{
		{"/slack/commands", "text=%zz"},
		{"/slack/interactions", "text=diagnose"},
		{"/slack/interactions", "payload=%7Bnot+json"},
		{"/slack/interactions", "payload=" + url.QueryEscape(`{"type":"block_actions","response_url":"`+h.sink.url("2")+`","actions":[{"block_id":"llmdoctor-actions","action_id":"llmdoctor.rerun","value":"not ours"}]}`)},
		{"/slack/interactions", "payload=" + url.QueryEscape(`{"type":"block_actions","response_url":"`+h.sink.url("2")+`","actions":[{"block_id":"llmdoctor-actions","action_id":"llmdoctor.rerun","value":"{\"w\":\"720h\"}"}]}`)},
	} {
		total++
		if w := h.do(slackSignedRequest(c.path, c.body, base, slackTestSecret)); w.Code == 400 {
			refused++
		} else {
			t.Errorf("%s %q: %d, want 400", c.path, c.body, w.Code)
		}
	}
	h.srv.wg.Wait()
	if n := h.calls.Load(); n != 0 {
		t.Errorf("%d diagnoses run for refused requests", n)
	}
	if p := h.sink.all(); len(p) != 0 {
		t.Errorf("%d posts for refused requests: %+v", len(p), p)
	}
	t.Logf("refused %d of %d forged, stale, future, replayed, malformed or oversized requests (%.0f%%)", refused, total, 100*float64(refused)/float64(total))
	if refused != total {
		t.Errorf("refused %d of %d", refused, total)
	}

	// The edges of the window are accepted: 4m59s either way.
	for _, skew := range []time.Duration{-5 * time.Minute, 5 * time.Minute, -299 * time.Second, 299 * time.Second} {
		if w := h.do(slackSignedRequest("/slack/commands", slackCommandBody("help "+skew.String(), h.sink.url("1")), base.Add(skew), slackTestSecret)); w.Code != 200 {
			t.Errorf("timestamp %s from now refused: %d", skew, w.Code)
		}
	}
}

// TestSlackAckFastResultLater: a slow diagnosis is acknowledged at once
// with "diagnosing…", and its result reaches the response_url with the
// buttons, within Slack's limits.
func TestSlackAckFastResultLater(t *testing.T) {
	h := newSlackHarness(t)
	h.gate = make(chan struct{})
	held := make(chan struct{}, 1)
	diag := h.srv.diag
	h.srv.diag = func(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error) {
		held <- struct{}{}
		return diag(ctx, src)
	}
	start := time.Now()
	code, ack := h.command(t, `diagnose "llama-3-8b" 30m`)
	took := time.Since(start)
	if code != 200 || took > time.Second {
		t.Fatalf("ack: HTTP %d after %s", code, took)
	}
	if ack.ResponseType != "ephemeral" || !strings.Contains(ack.Text, "Diagnosing model `llama-3-8b` over the last 30m") {
		t.Errorf("ack: %+v", ack)
	}
	// The diagnosis is running, held by the gate, past the ack.
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the diagnosis did not start in 10s")
	}
	if n := len(h.sink.all()); n != 0 {
		t.Fatalf("%d posts before the diagnosis ended", n)
	}
	close(h.gate)
	p := h.sink.next(t)
	req := h.lastReq(t)
	if req.Options.Selector != `model_name="llama-3-8b"` || req.Options.Window != 30*time.Minute || time.Since(req.Options.End) > 10*time.Second {
		t.Errorf("diagnosed %q over %s ending %s", req.Options.Selector, req.Options.Window, req.Options.End)
	}
	checkSlackMain(t, p, "ephemeral", []string{"Details", "Re-run over 1h"})
	t.Logf("ack after %s; result posted after the diagnosis", took)
}

// checkSlackMain checks a posted main message: its visibility, its limits,
// and its buttons (labels in order) in the last block.
func checkSlackMain(t *testing.T, p slackSinkPost, responseType string, buttons []string) []string {
	t.Helper()
	if p.Payload["response_type"] != responseType || p.Payload["replace_original"] != false {
		t.Errorf("response_type %v, replace_original %v", p.Payload["response_type"], p.Payload["replace_original"])
	}
	if probs := fakeslack.Check(p.Payload); len(probs) > 0 {
		t.Errorf("over Slack's limits: %v", probs)
	}
	if txt, _ := p.Payload["text"].(string); !strings.HasPrefix(txt, "llmdoctor: ") {
		t.Errorf("fallback text %q", txt)
	}
	atts, _ := p.Payload["attachments"].([]any)
	if len(atts) != 1 {
		t.Fatalf("%d attachments", len(atts))
	}
	blocks, _ := atts[0].(map[string]any)["blocks"].([]any)
	last, _ := blocks[len(blocks)-1].(map[string]any)
	if last["type"] != "actions" || last["block_id"] != slackapp.ActionsBlock {
		t.Fatalf("last block %v", last)
	}
	var labels, values []string
	for _, e := range last["elements"].([]any) {
		el := e.(map[string]any)
		labels = append(labels, el["text"].(map[string]any)["text"].(string))
		values = append(values, el["value"].(string))
	}
	if strings.Join(labels, "|") != strings.Join(buttons, "|") {
		t.Errorf("buttons %q, want %q", labels, buttons)
	}
	return values
}

// click is a block_actions payload for a button of a posted message.
func slackClick(responseURL, action, value string, ephemeral bool, user string) string {
	p := map[string]any{"type": "block_actions", "user": map[string]any{"id": user}, "team": map[string]any{"id": "T0LLMDOC"},
		"api_app_id": "A0LLMDOC", "trigger_id": "1111.2222.abcd", "channel": map[string]any{"id": "C0GPUALERT"},
		"container":    map[string]any{"type": "message_attachment", "message_ts": "1767225700.000100", "channel_id": "C0GPUALERT", "is_ephemeral": ephemeral},
		"message":      map[string]any{"ts": "1767225700.000100"},
		"response_url": responseURL,
		"actions":      []any{map[string]any{"type": "button", "action_id": action, "block_id": slackapp.ActionsBlock, "value": value, "action_ts": "1767225710.123456"}}}
	b, _ := json.Marshal(p)
	return "payload=" + url.QueryEscape(string(b))
}

// TestSlackInChannelDetailsRerun: "in channel" answers in the channel;
// "Details in thread" posts the details in the message's thread, from the
// kept run or, once it is gone, diagnosed again over the same window;
// "Re-run over 1h" diagnoses the target's model over the last hour.
func TestSlackInChannelDetailsRerun(t *testing.T) {
	h := newSlackHarness(t)
	d := slackFixtureDiagnosis(t)
	model := d.Targets[0].Target.Model
	code, ack := h.command(t, "diagnose 45m in channel")
	if code != 200 || ack.ResponseType != "in_channel" || !strings.Contains(ack.Text, "Diagnosing every target over the last 45m") {
		t.Fatalf("ack %d %+v", code, ack)
	}
	main := h.sink.next(t)
	if sel := h.lastReq(t).Options.Selector; sel != "" {
		t.Errorf("selector %q for every target", sel)
	}
	values := checkSlackMain(t, main, "in_channel", []string{"Details in thread", "Re-run over 1h"})
	var v slackButton
	if err := json.Unmarshal([]byte(values[0]), &v); err != nil || v.TargetModel != model || v.Window != "45m" || v.Run == "" {
		t.Fatalf("button value %s: %+v %v", values[0], v, err)
	}

	// Details, from the kept run: in the thread, in channel.
	calls := h.calls.Load()
	if w := h.do(slackSignedRequest("/slack/interactions", slackClick(h.sink.url("2"), slackapp.ActionDetails, values[0], false, "U1"), time.Now(), slackTestSecret)); w.Code != 200 || w.Body.Len() != 0 {
		t.Fatalf("click: %d %q", w.Code, w.Body.String())
	}
	want := len(slackDetailsOf(t, d))
	for i := range want {
		p := h.sink.next(t)
		if p.Payload["thread_ts"] != "1767225700.000100" || p.Payload["response_type"] != "in_channel" || p.Payload["replace_original"] != false {
			t.Errorf("detail %d: %v %v %v", i, p.Payload["thread_ts"], p.Payload["response_type"], p.Payload["replace_original"])
		}
		if probs := fakeslack.Check(p.Payload); len(probs) > 0 {
			t.Errorf("detail %d over the limits: %v", i, probs)
		}
	}
	if h.calls.Load() != calls {
		t.Error("details from a kept run diagnosed again")
	}

	// The same click again within seconds (a double click): nothing more.
	h.do(slackSignedRequest("/slack/interactions", slackClick(h.sink.url("2"), slackapp.ActionDetails, values[0], false, "U1"), time.Now().Add(time.Second), slackTestSecret))
	h.srv.wg.Wait()
	if n := len(h.sink.ch); n != 0 {
		t.Errorf("a double click posted %d more", n)
	}

	// Details of a run no longer kept: the same window diagnosed again.
	v.Run = "gone"
	b, _ := json.Marshal(v)
	h.do(slackSignedRequest("/slack/interactions", slackClick(h.sink.url("3"), slackapp.ActionDetails, string(b), true, "U2"), time.Now(), slackTestSecret))
	for range want {
		if p := h.sink.next(t); p.Payload["response_type"] != "ephemeral" || p.Payload["thread_ts"] != nil {
			t.Errorf("ephemeral detail: %v %v", p.Payload["response_type"], p.Payload["thread_ts"])
		}
	}
	if req := h.lastReq(t); h.calls.Load() != calls+1 || !req.Options.End.Equal(time.Unix(v.End, 0)) || req.Options.Window != 45*time.Minute {
		t.Errorf("details diagnosed again: %d calls, window %s ending %s (want %s)", h.calls.Load()-calls, req.Options.Window, req.Options.End, time.Unix(v.End, 0))
	}

	// Re-run over 1h: the target's model, the last hour, in channel.
	if w := h.do(slackSignedRequest("/slack/interactions", slackClick(h.sink.url("4"), slackapp.ActionRerun, values[1], false, "U1"), time.Now(), slackTestSecret)); w.Code != 200 {
		t.Fatalf("re-run click: %d", w.Code)
	}
	p := h.sink.next(t)
	req := h.lastReq(t)
	if req.Options.Selector != slackapp.ModelSelector(model) || req.Options.Window != time.Hour || time.Since(req.Options.End) > 10*time.Second {
		t.Errorf("re-run diagnosed %q over %s ending %s", req.Options.Selector, req.Options.Window, req.Options.End)
	}
	checkSlackMain(t, p, "in_channel", []string{"Details in thread", "Re-run over 1h"})
	if p.Payload["thread_ts"] != nil {
		t.Errorf("a re-run posted in a thread: %v", p.Payload["thread_ts"])
	}
}

func slackDetailsOf(t *testing.T, d *advisor.Diagnosis) []slack.WebhookMessage {
	t.Helper()
	msgs := report.SlackDiagnosis(d, report.SlackOptions{})
	if len(msgs[0].Details) == 0 {
		t.Fatal("the fixture's target has no details")
	}
	return msgs[0].Details
}

// TestSlackBusy: with every slot taken, a command is answered "busy" at
// once and runs nothing; a re-run click says so through its response_url.
func TestSlackBusy(t *testing.T) {
	h := newSlackHarness(t, func(c *Config) { c.MaxConcurrent = 1 })
	h.gate = make(chan struct{})
	if _, ack := h.command(t, "diagnose a"); !strings.Contains(ack.Text, "Diagnosing") {
		t.Fatalf("first: %+v", ack)
	}
	start := time.Now()
	code, ack := h.command(t, "diagnose b")
	if code != 200 || ack.ResponseType != "ephemeral" || !strings.Contains(ack.Text, "busy") || time.Since(start) > time.Second {
		t.Errorf("second: %d %+v after %s", code, ack, time.Since(start))
	}
	h.do(slackSignedRequest("/slack/interactions", slackClick(h.sink.url("5"), slackapp.ActionRerun, `{"tm":"b","i":0}`, true, "U1"), time.Now(), slackTestSecret))
	if p := h.sink.next(t); !strings.Contains(fmt.Sprint(p.Payload["text"]), "busy") || p.Path != "/commands/T0LLMDOC/5/xyz" {
		t.Errorf("busy click: %v", p)
	}
	close(h.gate)
	h.sink.next(t)
	h.srv.wg.Wait()
	if n := h.calls.Load(); n != 1 {
		t.Errorf("%d diagnoses, want 1", n)
	}
}

// TestSlackAnswersAtOnce: help, checklist and usage errors are answered in
// the acknowledgement, ephemeral, with nothing run.
func TestSlackAnswersAtOnce(t *testing.T) {
	h := newSlackHarness(t)
	for _, c := range []struct{ text, want string }{
		{"", "diagnoses LLM serving latency"},
		{"help", "`/llmdoctor diagnose [model] [window] [in channel]`"},
		{"HELP", "default 15m"},
		{"checklist llama-3-8b", "not available in `llmdoctor serve` yet"},
		{"frobnicate", "unknown command `frobnicate`"},
		{"Help", "from 15s to 7d"},
		{"diagnose llama 30d", "window `30d`: longer than 7d, the longest window llmdoctor diagnoses"},
		{"diagnose llama 10s", "window `10s`: shorter than 15s"},
		{"diagnose llama 100000h", "window `100000h`: longer than 7d"},
		{"diagnose a b", "one model at a time"},
		{"diagnose 1h 2h", "one window at a time"},
		{"diagnose window=soon", "window `soon`: not a duration like 30m"},
		{"diagnose " + strings.Repeat("m", 300), "at most 256"},
	} {
		code, ack := h.command(t, c.text)
		if code != 200 || ack.ResponseType != "ephemeral" || !strings.Contains(ack.Text, c.want) {
			t.Errorf("%q: %d %+v, want %q", c.text, code, ack, c.want)
		}
	}
	// Slack checks an app's certificate with ssl_check=1.
	if w := h.do(slackSignedRequest("/slack/commands", "ssl_check=1&token=x", time.Now(), slackTestSecret)); w.Code != 200 || w.Body.Len() != 0 {
		t.Errorf("ssl_check: %d %q", w.Code, w.Body.String())
	}
	// A response_url that is not Slack's is not posted to.
	for _, u := range []string{"https://evil.example.com/commands/1", "http://hooks.slack.com/commands/1", "", "ftp://127.0.0.1/x"} {
		w := h.do(slackSignedRequest("/slack/commands", slackCommandBody("diagnose x", u), time.Now(), slackTestSecret))
		if !strings.Contains(w.Body.String(), "cannot answer") {
			t.Errorf("response_url %q: %s", u, w.Body.String())
		}
	}
	h.srv.wg.Wait()
	if n := h.calls.Load(); n != 0 {
		t.Errorf("%d diagnoses run", n)
	}
	if n := len(h.sink.all()); n != 0 {
		t.Errorf("%d posts", n)
	}
}

// TestSlackFailures: a failed diagnosis is said to the asker alone.
func TestSlackFailures(t *testing.T) {
	h := newSlackHarness(t)
	h.result = func() (*advisor.Diagnosis, error) {
		return nil, &diagnosis.NoTargetError{Why: diagnosis.NoEngineMetrics}
	}
	h.command(t, "diagnose nosuch in channel")
	p := h.sink.next(t)
	if p.Payload["response_type"] != "ephemeral" || !strings.Contains(fmt.Sprint(p.Payload["text"]), "no serving-engine metrics for model `nosuch` over the last 15m") {
		t.Errorf("no target: %v", p.Payload)
	}
	h.result = func() (*advisor.Diagnosis, error) { return nil, errors.New("prometheus said <no>") }
	h.command(t, "diagnose x")
	if p := h.sink.next(t); !strings.Contains(fmt.Sprint(p.Payload["text"]), "could not diagnose model `x` over the last 15m: prometheus said &lt;no&gt;") {
		t.Errorf("error: %v", p.Payload)
	}
}

// TestSlackManyTargets: Slack takes five posts to one response_url; with
// seven targets, four are posted and the fifth post names the rest.
func TestSlackManyTargets(t *testing.T) {
	h := newSlackHarness(t)
	d := slackManyTargets(t, 7)
	h.result = func() (*advisor.Diagnosis, error) { return d, nil }
	h.command(t, "diagnose")
	for range 4 {
		checkSlackMain(t, h.sink.next(t), "ephemeral", []string{"Details", "Re-run over 1h"})
	}
	p := h.sink.next(t)
	if txt := fmt.Sprint(p.Payload["text"]); !strings.Contains(txt, "+3 more targets not shown") || !strings.Contains(txt, "model-6") {
		t.Errorf("last post: %s", txt)
	}
	h.srv.wg.Wait()
	if n := len(h.sink.all()); n != 5 {
		t.Errorf("%d posts, want 5", n)
	}
}

// TestSlackInChannelWithToken: with a bot token, "in channel" posts with
// chat.postMessage into the command's channel, the details in the
// thread; when the app is not in the channel, the answer goes through the
// response_url instead, with a note to the asker.
func TestSlackInChannelWithToken(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	h := newSlackHarness(t, func(c *Config) { c.SlackApp.Token, c.SlackApp.APIURL = fakeslack.Token, fs.APIURL() })
	h.command(t, "diagnose in channel", "channel_id", fakeslack.Channel)
	h.srv.wg.Wait()
	acc := fs.Accepted()
	if len(acc) < 2 || acc[0].ThreadTS != "" || acc[0].Channel != fakeslack.Channel {
		t.Fatalf("posted:\n%s", fs.Summary())
	}
	for _, r := range acc[1:] {
		if r.ThreadTS != acc[0].TS {
			t.Errorf("a detail outside the thread:\n%s", fs.Summary())
		}
	}
	if len(fs.Requests()) != len(acc) {
		t.Errorf("refused:\n%s", fs.Summary())
	}
	atts := acc[0].Payload["attachments"].([]any)
	blocks := atts[0].(map[string]any)["blocks"].([]any)
	last := blocks[len(blocks)-1].(map[string]any)
	if els := last["elements"].([]any); last["type"] != "actions" || len(els) != 1 || els[0].(map[string]any)["action_id"] != slackapp.ActionRerun {
		t.Errorf("buttons with the details in the thread: %v", last)
	}
	if n := len(h.sink.all()); n != 0 {
		t.Errorf("%d posts to the response_url", n)
	}

	h.command(t, "diagnose in channel", "channel_id", fakeslack.NotInChannel)
	note := h.sink.next(t)
	if txt := fmt.Sprint(note.Payload["text"]); note.Payload["response_type"] != "ephemeral" || !strings.Contains(txt, "not_in_channel") {
		t.Errorf("note: %v", note.Payload)
	}
	checkSlackMain(t, h.sink.next(t), "in_channel", []string{"Details in thread", "Re-run over 1h"})
}

// TestSlackAppManifest: the manifest users paste into api.slack.com points
// the slash command and the buttons at the routes served here, with the
// scopes they need.
func TestSlackAppManifest(t *testing.T) {
	b, err := os.ReadFile("../deploy/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Features struct {
			SlashCommands []struct {
				Command, URL, Description string
				UsageHint                 string `yaml:"usage_hint"`
				ShouldEscape              *bool  `yaml:"should_escape"`
			} `yaml:"slash_commands"`
			BotUser struct {
				DisplayName string `yaml:"display_name"`
			} `yaml:"bot_user"`
		}
		OAuth struct {
			Scopes struct{ Bot []string }
		} `yaml:"oauth_config"`
		Settings struct {
			Interactivity struct {
				IsEnabled  bool   `yaml:"is_enabled"`
				RequestURL string `yaml:"request_url"`
			}
		}
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Features.SlashCommands) != 1 {
		t.Fatalf("%d slash commands", len(m.Features.SlashCommands))
	}
	c := m.Features.SlashCommands[0]
	if c.Command != "/llmdoctor" || c.URL != "https://llmdoctor.example.com/slack/commands" || c.ShouldEscape == nil || *c.ShouldEscape {
		t.Errorf("slash command %+v", c)
	}
	if !m.Settings.Interactivity.IsEnabled || m.Settings.Interactivity.RequestURL != "https://llmdoctor.example.com/slack/interactions" {
		t.Errorf("interactivity %+v", m.Settings.Interactivity)
	}
	if got := strings.Join(m.OAuth.Scopes.Bot, ","); got != "commands,chat:write" {
		t.Errorf("bot scopes %s", got)
	}
	// The routes are served.
	h := newSlackHarness(t)
	for _, u := range []string{c.URL, m.Settings.Interactivity.RequestURL} {
		path := strings.TrimPrefix(u, "https://llmdoctor.example.com")
		if w := h.do(httptest.NewRequest(http.MethodPost, path, nil)); w.Code != http.StatusUnauthorized {
			t.Errorf("POST %s unsigned: %d, want 401", path, w.Code)
		}
	}
}
