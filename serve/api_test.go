package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
)

func apiGet(s *Server, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w
}

// metricValue reads one series from /metrics, written as in the
// exposition (name{label="value",…}).
func scrapeValue(t *testing.T, s *Server, series string) float64 {
	t.Helper()
	w := apiGet(s, "/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(w.Body.String()))
	if err != nil {
		t.Fatalf("/metrics: %v\n%s", err, w.Body)
	}
	for name, f := range fams {
		for _, m := range f.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+`="`+l.GetValue()+`"`)
			}
			id := name
			if len(ls) > 0 {
				id += "{" + strings.Join(ls, ",") + "}"
			}
			if id != series {
				continue
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	t.Fatalf("no series %s in /metrics:\n%s", series, w.Body)
	return 0
}

// The API answers the JSON contract for a selector and window, and
// refuses bad parameters with 400 before diagnosing.
func TestAPIDiagnosis(t *testing.T) {
	h := newAMHarness(t, Config{}, false)
	w := apiGet(h.s, "/api/v1/diagnosis?selector=model_name%3D%22llama-3-8b%22&window=1h&end=2026-12-01T00:10:00Z")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var d advisor.Diagnosis
	if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil || d.Schema != advisor.Schema || d.Targets[0].Primary.Bottleneck != "queueing" {
		t.Fatalf("not the contract: %v %s", err, w.Body)
	}
	p := h.diagnoses()[0]
	if p.Options.Selector != `model_name="llama-3-8b"` || p.Options.Window != time.Hour || !p.Options.End.Equal(amNow.Add(-10*time.Minute)) {
		t.Fatalf("asked %q over %s ending %s", p.Options.Selector, p.Options.Window, p.Options.End)
	}
	if got := apiGet(h.s, "/api/v1/diagnosis"); got.Code != http.StatusOK {
		t.Fatalf("no parameters: %d %s", got.Code, got.Body)
	}
	if p := h.diagnoses()[1]; p.Options.Window != 15*time.Minute || p.Options.Selector != "" {
		t.Fatalf("defaults: %q over %s", p.Options.Selector, p.Options.Window)
	}
	for _, q := range []string{
		"selector=model_name", "selector=model_name%3Dx", `selector=%7Bmodel_name%3D%22x%22%7D`,
		"selector=a%3D%22x%22%20or%20vector(1)", "selector=a%3D%22x", "window=fortnight", "window=-5m", "window=30d", "window=100000h",
		"end=yesterday", "end=2099-01-01T00:00:00Z", "target=llama",
	} {
		w := apiGet(h.s, "/api/v1/diagnosis?"+q)
		if w.Code != http.StatusBadRequest || strings.Count(w.Body.String(), "\n") != 1 {
			t.Errorf("%s: %d %q, want 400 and one line", q, w.Code, w.Body)
		}
	}
	if n := len(h.diagnoses()); n != 2 {
		t.Fatalf("%d diagnoses ran, want 2", n)
	}
	// Windows as every front end reads them: days taken, one bound, the
	// same words.
	if got := apiGet(h.s, "/api/v1/diagnosis?window=1d12h"); got.Code != http.StatusOK || h.diagnoses()[2].Options.Window != 36*time.Hour {
		t.Errorf("window=1d12h: %d %s", got.Code, got.Body)
	}
	if got := apiGet(h.s, "/api/v1/diagnosis?window=30d").Body.String(); got != "window \"30d\": longer than 7d, the longest window llmdoctor diagnoses\n" {
		t.Errorf("window=30d: %q", got)
	}
}

// Failures of the pipeline map to statuses.
func TestAPIDiagnosisErrors(t *testing.T) {
	h := newAMHarness(t, Config{}, false)
	for _, tc := range []struct {
		err    error
		status int
	}{
		{&diagnosis.NoTargetError{Why: diagnosis.NoEngineMetrics}, http.StatusNotFound},
		{&diagnosis.ReadError{Kind: diagnosis.KindPrometheus, Err: &prom.Error{Kind: prom.NoMetrics}}, http.StatusNotFound},
		{&diagnosis.ReadError{Kind: diagnosis.KindPrometheus, Err: &prom.Error{Kind: prom.Unreachable, URL: "http://p", Detail: "refused"}}, http.StatusBadGateway},
		{&diagnosis.ReadError{Kind: diagnosis.KindPrometheus, Err: &prom.Error{Kind: prom.BadQuery, URL: "http://p"}}, http.StatusBadRequest},
		{&diagnosis.ReadError{Kind: diagnosis.KindPrometheus, Err: &prom.Error{Kind: prom.Timeout, URL: "http://p"}}, http.StatusGatewayTimeout},
		{&diagnosis.SourceError{Problem: diagnosis.PromWindowUnderScrape}, http.StatusBadRequest},
	} {
		h.result = func() (*advisor.Diagnosis, error) { return nil, tc.err }
		if w := apiGet(h.s, "/api/v1/diagnosis"); w.Code != tc.status {
			t.Errorf("%v: %d %s, want %d", tc.err, w.Code, w.Body, tc.status)
		}
	}
}

// A diagnosis that does not encode as JSON is a 500 that says so, never a
// 200 with an empty or cut body.
func TestAPIDiagnosisUnencodable(t *testing.T) {
	h := newAMHarness(t, Config{}, false)
	h.result = func() (*advisor.Diagnosis, error) {
		d := amDiagnosis()
		d.Window.Seconds = math.NaN()
		return d, nil
	}
	w := apiGet(h.s, "/api/v1/diagnosis")
	if w.Code != http.StatusInternalServerError || w.Header().Get("Content-Type") == "application/json" ||
		!strings.HasPrefix(w.Body.String(), "the diagnosis does not encode as JSON: ") {
		t.Fatalf("%d %s %q", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
}

// /readyz asks Prometheus a cheap query with the configured credentials.
func TestReadyz(t *testing.T) {
	var auth string
	up := true
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		if !up || r.URL.Path != "/prefix/api/v1/query" || r.URL.Query().Get("query") != "1" {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`)
	}))
	defer p.Close()
	h := newAMHarness(t, Config{}, false)
	h.s.cfg.Prom.Connection = prom.Connection{URL: p.URL + "/prefix/", BearerToken: "prom-token-123456"}
	if w := apiGet(h.s, "/readyz"); w.Code != http.StatusOK || auth != "Bearer prom-token-123456" {
		t.Fatalf("%d %s (Authorization %q)", w.Code, w.Body, auth)
	}
	up = false
	w := apiGet(h.s, "/readyz")
	if w.Code != http.StatusServiceUnavailable || strings.Count(w.Body.String(), "\n") != 1 || !strings.Contains(w.Body.String(), "HTTP 503") {
		t.Fatalf("Prometheus down: %d %q", w.Code, w.Body)
	}
	h.s.cfg.Prom.Connection = prom.Connection{URL: "http://user:hunter2-secret@127.0.0.1:1/"}
	w = apiGet(h.s, "/readyz")
	if w.Code != http.StatusServiceUnavailable || strings.Contains(w.Body.String(), "hunter2") || !strings.Contains(w.Body.String(), "unreachable") {
		t.Fatalf("Prometheus unreachable: %d %q", w.Code, w.Body)
	}
	if got := scrapeValue(t, h.s, "llmdoctor_prometheus_queries_total"); got != 3 {
		t.Errorf("%v queries counted, want 3", got)
	}
	if w := apiGet(h.s, "/healthz"); w.Code != http.StatusOK {
		t.Fatalf("healthz: %d", w.Code)
	}
}

// /metrics holds each target's latest verdict, findings and shares.
func TestMetrics(t *testing.T) {
	h := newAMHarness(t, Config{}, false)
	// An API call (any window, any selector) sets no verdict: anyone who
	// reaches the server could otherwise clear what alerts read.
	apiGet(h.s, "/api/v1/diagnosis?end=1000000000&window=1h")
	if body := apiGet(h.s, "/metrics").Body.String(); strings.Contains(body, "llmdoctor_verdict{") {
		t.Fatalf("an API call set a verdict:\n%s", body)
	}
	if _, err := h.s.Diagnose(context.Background(), Request{Latest: true}); err != nil {
		t.Fatal(err)
	}
	for series, want := range map[string]float64{
		`llmdoctor_verdict{bottleneck="queueing",model="llama-3-8b",served_by="vllm",status="found",target=""}`:                                  1,
		`llmdoctor_finding{bottleneck="queueing",model="llama-3-8b",rule="queue/ttft-dominated",served_by="vllm",severity="critical",target=""}`: 1,
		`llmdoctor_latency_share{model="llama-3-8b",served_by="vllm",stage="queue",target=""}`:                                                   1.8 / 1.95,
		`llmdoctor_latency_share{model="llama-3-8b",served_by="vllm",stage="decode",target=""}`:                                                  7 / 8.95,
		`llmdoctor_diagnosis_duration_seconds`:                                                      2,
		`llmdoctor_prometheus_queries_total`:                                                        46,
		`llmdoctor_slack_posts_total{result="ok"}`:                                                  0,
		`llmdoctor_last_diagnosis_timestamp_seconds{model="llama-3-8b",served_by="vllm",target=""}`: float64(amNow.Unix()),
		`llmdoctor_alertmanager_notifications_total{outcome="diagnosing"}`:                          0,
	} {
		if got := scrapeValue(t, h.s, series); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	// The next diagnosis replaces the verdict: one series per target.
	d := amDiagnosis()
	d.Targets[0].Primary = advisor.Primary{Bottleneck: "none", Status: "healthy"}
	d.Targets[0].Findings = nil
	h.result = func() (*advisor.Diagnosis, error) { return d, nil }
	if _, err := h.s.Diagnose(context.Background(), Request{Latest: true}); err != nil {
		t.Fatal(err)
	}
	body := apiGet(h.s, "/metrics").Body.String()
	if strings.Count(body, "llmdoctor_verdict{") != 1 || !strings.Contains(body, `status="healthy"`) || strings.Contains(body, "llmdoctor_finding{") {
		t.Fatalf("after a healthy diagnosis:\n%s", body)
	}
	// Posts count by result.
	h.send(amFiring("inference", "llama-3-8b").JSON())
	h.settle()
	if got := scrapeValue(t, h.s, `llmdoctor_slack_posts_total{result="ok"}`); got < 1 {
		t.Errorf("%v posts counted", got)
	}
}

// Targets kept are bounded and expire.
func TestMetricsBounded(t *testing.T) {
	m := newMetrics()
	var names []string
	for i := 0; i < maxTargets+10; i++ {
		names = append(names, fmt.Sprint("model-", i))
	}
	m.observe(amDiagnosis(names...), time.Second, amNow, true)
	if len(m.targets) != maxTargets {
		t.Fatalf("%d targets kept", len(m.targets))
	}
	m.now = func() time.Time { return amNow.Add(targetTTL + time.Minute) }
	if mfs, _ := m.reg.Gather(); len(mfs) == 0 {
		t.Fatal("nothing gathered")
	}
	if len(m.targets) != 0 {
		t.Fatalf("%d targets after their TTL", len(m.targets))
	}
}

// One model in two namespaces (--group-by model_name,namespace) is two
// targets and two series, not one that flips with each diagnosis.
func TestMetricsKeepGroupByTargetsApart(t *testing.T) {
	m := newMetrics()
	d := amDiagnosis("llama-3-8b", "llama-3-8b")
	d.Targets[0].Target.Labels = map[string]string{"model_name": "llama-3-8b", "namespace": "a"}
	d.Targets[1].Target.Labels = map[string]string{"model_name": "llama-3-8b", "namespace": "b"}
	d.Targets[1].Primary = advisor.Primary{Bottleneck: "none", Status: "healthy"}
	m.observe(d, time.Second, amNow, true)
	if len(m.targets) != 2 {
		t.Fatalf("%d targets kept, want 2", len(m.targets))
	}
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "llmdoctor_verdict" && len(mf.GetMetric()) != 2 {
			t.Errorf("%d verdict series, want 2", len(mf.GetMetric()))
		}
	}
}
