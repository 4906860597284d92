package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/llmdoctor/llmdoctor/evidence"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/internal/redact"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/serve/core"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// DiagnosisPath is the API's diagnosis route; Slack messages link to it.
const DiagnosisPath = core.DiagnosisPath

// registerAPI adds /readyz, /api/v1/diagnosis and /metrics.
func (s *Server) registerAPI() error {
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.HandleFunc("GET "+DiagnosisPath, s.apiDiagnosis)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	return nil
}

// readyz answers 200 when Prometheus answers a cheap query, 503 with one
// line saying why otherwise.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := s.ping(ctx); err != nil {
		plain(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
		return
	}
	plain(w, http.StatusOK, "ok")
}

// plain writes a one-line text answer.
func plain(w http.ResponseWriter, status int, msg string) { core.Plain(w, status, msg) }

// pingProm sends the instant query "1" to the configured Prometheus with
// its credentials: an answer with "status":"success" is ready.
func (s *Server) pingProm(ctx context.Context) error {
	conn := s.cfg.Prom.Connection
	sec := &redact.Secrets{}
	conn.AddSecrets(sec)
	name := conn.Redacted()
	fail := func(format string, a ...any) error {
		return errors.New(sec.String(fmt.Sprintf("Prometheus at %s ", name) + fmt.Sprintf(format, a...)))
	}
	client, base, err := promClient(conn)
	if err != nil {
		return fail("%v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query=1", nil)
	if err != nil {
		return fail("cannot be queried: %v", err)
	}
	s.metrics.queries.Inc()
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fail("is unreachable: %v", err)
	}
	defer func() { _ = resp.Body.Close() }() // read only
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fail("answered HTTP %d to a test query", resp.StatusCode)
	}
	var v struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(body, &v) != nil || v.Status != "success" {
		return fail("answered a test query with something other than the Prometheus API's JSON")
	}
	return nil
}

// promClient is an HTTP client of the connection's, and the URL's base
// without userinfo or a trailing slash.
func promClient(c prom.Connection) (*http.Client, string, error) {
	rt, err := c.RoundTripper()
	if err != nil {
		return nil, "", err
	}
	u, _ := url.Parse(c.URL) // checked by RoundTripper
	u.User = nil
	return &http.Client{Transport: rt}, strings.TrimRight(u.String(), "/"), nil
}

// apiDiagnosis is GET /api/v1/diagnosis?selector=…&window=…&end=…: the
// diagnosis in its JSON contract (llmdoctor.diagnosis/v1).
func (s *Server) apiDiagnosis(w http.ResponseWriter, r *http.Request) {
	req, err := s.parseRequest(r.URL.Query())
	if err != nil {
		plain(w, http.StatusBadRequest, err.Error())
		return
	}
	// Never Latest: an API call sets no metric and keeps no run.
	req.Trigger = TriggerAPI
	d, err := s.Diagnose(r.Context(), req)
	if err != nil {
		status, msg := httpError(err)
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "5")
		}
		plain(w, status, msg)
		return
	}
	// Encoded whole before the status goes out: a diagnosis that does not
	// encode is a 500 that says so, not an empty 200.
	var b bytes.Buffer
	if err := report.JSON(&b, d); err != nil {
		plain(w, http.StatusInternalServerError, "the diagnosis does not encode as JSON: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b.Bytes())
}

// parseRequest reads the API's parameters: selector (label matchers, as
// --selector), window (as prom.ParseWindow reads it: 15m, 1h30m, 1d;
// default the server's), end (RFC
// 3339 or Unix seconds; default now).
func (s *Server) parseRequest(q url.Values) (Request, error) {
	var req Request
	for k := range q {
		switch k {
		case "selector", "window", "end":
		default:
			return req, fmt.Errorf("unknown parameter %q: want selector, window and end", k)
		}
	}
	req.Selector = strings.TrimSpace(q.Get("selector"))
	if _, err := prom.ParseMatchers(req.Selector); err != nil {
		return req, fmt.Errorf("selector: %w", err)
	}
	if v := q.Get("window"); v != "" {
		d, err := prom.ParseWindow(v)
		if err != nil {
			return req, err
		}
		req.Window = d
	}
	if v := q.Get("end"); v != "" {
		t, err := parseTime(v)
		if err != nil {
			return req, fmt.Errorf("end: %w", err)
		}
		if t.After(s.now().Add(time.Minute)) {
			return req, fmt.Errorf("end %s is in the future", v)
		}
		req.End = t
	}
	return req, nil
}

func parseTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	// Unix seconds within what a time.Duration from 1970 can hold.
	if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f < 9e9 {
		return time.Unix(0, int64(f*1e9)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-11-30T12:00:00Z) or Unix seconds", v)
}

// httpError is the status and one line for a failed diagnosis.
func httpError(err error) (int, string) {
	var (
		se *diagnosis.SourceError
		ne *diagnosis.NoTargetError
		pe *prom.Error
	)
	switch {
	case errors.Is(err, ErrBusy):
		return http.StatusTooManyRequests, err.Error()
	case errors.As(err, &se):
		return http.StatusBadRequest, err.Error()
	case errors.As(err, &ne):
		return http.StatusNotFound, "nothing to diagnose: " + err.Error()
	case errors.As(err, &pe):
		switch pe.Kind {
		case prom.BadQuery:
			return http.StatusBadRequest, err.Error()
		case prom.NoMetrics:
			return http.StatusNotFound, "nothing to diagnose: " + err.Error()
		case prom.Timeout:
			return http.StatusGatewayTimeout, err.Error()
		}
		return http.StatusBadGateway, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "the diagnosis took longer than the server's request timeout"
	case errors.Is(err, context.Canceled):
		return 499, "canceled"
	}
	return http.StatusInternalServerError, err.Error()
}

// Metrics.

// maxTargets bounds the targets the metrics remember; targetTTL drops a
// target not diagnosed for that long (a model taken down).
const (
	maxTargets = 500
	targetTTL  = 24 * time.Hour
)

var (
	verdictDesc = prometheus.NewDesc("llmdoctor_verdict",
		"1 for the current verdict of each target (its latest diagnosis): the bottleneck and status (found, healthy, inconclusive).",
		[]string{"model", "served_by", "target", "bottleneck", "status"}, nil)
	findingDesc = prometheus.NewDesc("llmdoctor_finding",
		"1 for each finding of the latest diagnosis of each target.",
		[]string{"model", "served_by", "target", "rule", "severity", "bottleneck"}, nil)
	shareDesc = prometheus.NewDesc("llmdoctor_latency_share",
		"Share of mean time to first token spent in each stage (queue, prefill, front); for decode, its share of mean end-to-end latency.",
		[]string{"model", "served_by", "target", "stage"}, nil)
	lastDesc = prometheus.NewDesc("llmdoctor_last_diagnosis_timestamp_seconds",
		"When each target was last diagnosed, in Unix seconds.",
		[]string{"model", "served_by", "target"}, nil)
)

// metrics are the server's registry: counters of its own work, and a
// collector of each target's latest diagnosis. Label values come from
// diagnoses only (targets the pipeline found, rules of the rule set), and
// at most maxTargets targets are kept.
type metrics struct {
	reg      *prometheus.Registry
	duration prometheus.Histogram
	queries  prometheus.Counter
	posts    *prometheus.CounterVec

	mu      sync.Mutex
	targets map[targetKey]*targetState
	now     func() time.Time
}

// targetKey names a target by its model, engine and the group-by labels
// that select it (target="model_name=…,namespace=…"), so two targets of one
// model in two namespaces stay two series.
type targetKey struct{ model, servedBy, labels string }

func keyOf(t evidence.Target) targetKey {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(t.Labels)) {
		parts = append(parts, k+"="+t.Labels[k])
	}
	return targetKey{t.Model, t.ServedBy, strings.Join(parts, ",")}
}

type targetState struct {
	bottleneck, status string
	findings           [][3]string // rule, severity, bottleneck
	shares             map[string]float64
	at                 time.Time
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "llmdoctor_diagnosis_duration_seconds",
			Help:    "Time one diagnosis took: querying Prometheus and judging, failed ones included.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120}}),
		queries: prometheus.NewCounter(prometheus.CounterOpts{Name: "llmdoctor_prometheus_queries_total",
			Help: "Queries sent to Prometheus: those of every diagnosis answered, and readiness checks."}),
		posts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmdoctor_slack_posts_total",
			Help: "Slack messages posted (result ok, thread replies included) or that failed after retries (result error)."}, []string{"result"}),
		targets: map[targetKey]*targetState{},
		now:     time.Now,
	}
	m.posts.WithLabelValues("ok")
	m.posts.WithLabelValues("error")
	m.reg.MustRegister(m.duration, m.queries, m.posts, (*targetCollector)(m))
	return m
}

// observe counts one diagnosis; d is nil when it failed.
func (m *metrics) observe(d *advisor.Diagnosis, took time.Duration, now time.Time, latest bool) {
	m.duration.Observe(took.Seconds())
	if d == nil {
		return
	}
	for _, src := range d.Sources {
		if src.Kind == diagnosis.KindPrometheus {
			m.queries.Add(float64(src.Queries))
		}
	}
	if !latest {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range d.Targets {
		k := keyOf(t.Target)
		if _, ok := m.targets[k]; !ok && len(m.targets) >= maxTargets {
			m.expire(now)
			if len(m.targets) >= maxTargets {
				continue
			}
		}
		st := &targetState{bottleneck: t.Primary.Bottleneck, status: t.Primary.Status, shares: latencyShares(t.LatencyMap), at: now}
		for _, f := range t.Findings {
			st.findings = append(st.findings, [3]string{f.Rule, f.Severity, f.Bottleneck})
		}
		m.targets[k] = st
	}
}

func (m *metrics) expire(now time.Time) {
	for k, st := range m.targets {
		if now.Sub(st.at) > targetTTL {
			delete(m.targets, k)
		}
	}
}

// latencyShares are the latency map's parts as shares.
func latencyShares(l advisor.LatencyMap) map[string]float64 {
	out := map[string]float64{}
	if l.TTFT != nil && *l.TTFT > 0 {
		for stage, v := range map[string]*float64{"queue": l.Queue, "prefill": l.Prefill, "front": l.Front} {
			if v != nil {
				out[stage] = *v / *l.TTFT
			}
		}
	}
	if l.Decode != nil && l.E2E != nil && *l.E2E > 0 {
		out["decode"] = *l.Decode / *l.E2E
	}
	return out
}

// posted counts what a post sent: each message Slack took, and a failure.
func (m *metrics) posted(res []slackkit.Result, err error) {
	n := 0
	for _, r := range res {
		n += 1 + r.Replies
	}
	m.posts.WithLabelValues("ok").Add(float64(n))
	if err != nil {
		m.posts.WithLabelValues("error").Inc()
	}
}

// targetCollector collects the targets' latest diagnoses.
type targetCollector metrics

func (c *targetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{verdictDesc, findingDesc, shareDesc, lastDesc} {
		ch <- d
	}
}

func (c *targetCollector) Collect(ch chan<- prometheus.Metric) {
	m := (*metrics)(c)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire(m.now())
	keys := make([]targetKey, 0, len(m.targets))
	for k := range m.targets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].model != keys[j].model {
			return keys[i].model < keys[j].model
		}
		if keys[i].servedBy != keys[j].servedBy {
			return keys[i].servedBy < keys[j].servedBy
		}
		return keys[i].labels < keys[j].labels
	})
	// Two targets of one model (served by two engines) would repeat a
	// series without served_by: the first is sent.
	seen := map[string]bool{}
	emit := func(desc *prometheus.Desc, v float64, labels ...string) {
		id := desc.String() + "\xff" + strings.Join(labels, "\xff")
		if seen[id] {
			return
		}
		seen[id] = true
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	for _, k := range keys {
		st := m.targets[k]
		emit(verdictDesc, 1, k.model, k.servedBy, k.labels, st.bottleneck, st.status)
		emit(lastDesc, float64(st.at.UnixMilli())/1000, k.model, k.servedBy, k.labels)
		for _, f := range st.findings {
			emit(findingDesc, 1, k.model, k.servedBy, k.labels, f[0], f[1], f[2])
		}
		stages := make([]string, 0, len(st.shares))
		for stage := range st.shares {
			stages = append(stages, stage)
		}
		sort.Strings(stages)
		for _, stage := range stages {
			emit(shareDesc, st.shares[stage], k.model, k.servedBy, k.labels, stage)
		}
	}
}
