package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/llmdoctor/llmdoctor/serve/slackapp"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
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
	"github.com/llmdoctor/llmdoctor/serve/watch/watchtest"
)

// pagesFake is a server's pipeline and clock in the page tests: each
// diagnosis answers d, one minute after the one before.
type pagesFake struct {
	mu  sync.Mutex
	d   *advisor.Diagnosis
	now time.Time
}

func (f *pagesFake) set(d *advisor.Diagnosis) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.d = d
}

// newPagesServer is a server with a fake pipeline.
func newPagesServer(t testing.TB, cfg Config) (*Server, *pagesFake) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &pagesFake{now: amNow, d: watchtest.DiagOf(watchtest.QueueCrit)}
	s.now = func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.now
	}
	s.diag = func(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.now = f.now.Add(time.Minute)
		return f.d, nil
	}
	return s, f
}

// pagesRun runs one diagnosis of d through the server.
func pagesRun(t testing.TB, s *Server, f *pagesFake, d *advisor.Diagnosis, req Request) {
	t.Helper()
	f.set(d)
	if _, err := s.Diagnose(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

var latestWatch = Request{Latest: true, Trigger: TriggerWatch}

var hrefRe = regexp.MustCompile(`href="([^"]*)"`)

// pageLinks are the links of a page to this server (not the rules' docs
// online), as paths resolved against its own.
func pageLinks(t testing.TB, page, body string) []string {
	t.Helper()
	base, _ := url.Parse(page)
	var out []string
	for _, m := range hrefRe.FindAllStringSubmatch(body, -1) {
		u, err := url.Parse(html.UnescapeString(m[1]))
		if err != nil {
			t.Fatalf("%s links to %q: %v", page, m[1], err)
		}
		if u.Scheme != "" || u.Host != "" {
			continue
		}
		out = append(out, base.ResolveReference(u).RequestURI())
	}
	return out
}

// checkPage checks an HTML page's answer and headers.
func checkPage(t testing.TB, path string, w *httptest.ResponseRecorder, cache string) {
	t.Helper()
	h := w.Header()
	switch {
	case w.Code != http.StatusOK:
		t.Errorf("%s: %d %s", path, w.Code, w.Body)
	case h.Get("Content-Type") != "text/html; charset=utf-8":
		t.Errorf("%s: Content-Type %q", path, h.Get("Content-Type"))
	case h.Get("Content-Security-Policy") != "default-src 'none'; style-src 'unsafe-inline'; img-src data:":
		t.Errorf("%s: Content-Security-Policy %q", path, h.Get("Content-Security-Policy"))
	case h.Get("X-Content-Type-Options") != "nosniff":
		t.Errorf("%s: X-Content-Type-Options %q", path, h.Get("X-Content-Type-Options"))
	case cache != "" && h.Get("Cache-Control") != cache:
		t.Errorf("%s: Cache-Control %q, want %q", path, h.Get("Cache-Control"), cache)
	}
}

// checkOneLine checks a refusal: its status, and one plain line saying
// what it should.
func checkOneLine(t testing.TB, path string, w *httptest.ResponseRecorder, status int, want ...string) {
	t.Helper()
	body := w.Body.String()
	if w.Code != status || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") || strings.Count(body, "\n") != 1 || !strings.HasSuffix(body, "\n") {
		t.Errorf("%s: %d %q, want %d and one plain line", path, w.Code, body, status)
	}
	for _, s := range want {
		if !strings.Contains(body, s) {
			t.Errorf("%s: %q lacks %q", path, body, s)
		}
	}
}

// Only diagnoses of the latest window the server makes of its own accord
// are kept: an API call, over any window, keeps nothing, as it sets no
// metric. The index renders before any run and says how one comes.
func TestReportPagesOnlyLatestRuns(t *testing.T) {
	s, f := newPagesServer(t, Config{})
	w := apiGet(s, "/")
	checkPage(t, "/", w, "no-store")
	if body := w.Body.String(); !strings.Contains(body, "no target diagnosed yet") || !strings.Contains(body, "--watch") {
		t.Errorf("the empty index does not say how targets come:\n%s", body)
	}
	if api := apiGet(s, "/api/v1/diagnosis"); api.Code != http.StatusOK {
		t.Fatalf("API: %d %s", api.Code, api.Body)
	}
	pagesRun(t, s, f, watchtest.DiagOf(watchtest.M2Crit), Request{End: amNow.Add(-time.Hour), Trigger: TriggerAPI})
	pagesRun(t, s, f, watchtest.DiagOf(watchtest.M2Crit), Request{Selector: `model_name="m2"`, Window: time.Hour, Trigger: TriggerSlash})
	if got := s.history.all(); len(got) != 0 {
		t.Fatalf("diagnoses not of the latest window were kept: %+v", got)
	}
	if w := apiGet(s, "/report/m2"); w.Code != http.StatusNotFound {
		t.Errorf("/report/m2 before any run: %d", w.Code)
	}
	pagesRun(t, s, f, watchtest.DiagOf(watchtest.QueueCrit, watchtest.M2Healthy), latestWatch)
	all := s.history.all()
	if len(all) != 2 || len(all[0].runs) != 1 || all[0].runs[0].trigger != TriggerWatch {
		t.Fatalf("after a run of the latest window: %+v", all)
	}
	d, err := all[0].runs[0].diagnosis()
	if err != nil || len(d.Targets) != 1 || d.Schema != advisor.Schema {
		t.Fatalf("a run is the diagnosis narrowed to its target: %v %+v", err, d)
	}
	// Watch with an empty index says when it comes.
	fs := fakeslack.Start()
	defer fs.Close()
	ws, _ := newWatchServer(t, watchtest.BotDest(fs), WatchConfig{Enabled: true, Every: 7 * time.Minute})
	if body := apiGet(ws, "/").Body.String(); !strings.Contains(body, "every 7m") {
		t.Errorf("the empty index with the watch on:\n%s", body)
	}
}

// A target keeps the last N runs: the N+1th pushes the first out, whose
// page then says so; runs in one second get ids of their own.
func TestReportHistoryBounded(t *testing.T) {
	s, f := newPagesServer(t, Config{ReportHistory: 3})
	for i := 0; i < 4; i++ {
		pagesRun(t, s, f, watchtest.DiagOf(watchtest.QueueCrit), latestWatch)
	}
	v, ok := s.history.target("m1")
	if !ok || len(v.runs) != 3 {
		t.Fatalf("runs kept: %+v", v)
	}
	for i, want := range []string{"20261201-002400", "20261201-002300", "20261201-002200"} {
		if v.runs[i].id != want {
			t.Errorf("run %d is %s, want %s (newest first)", i, v.runs[i].id, want)
		}
		p := "/report/m1/" + want
		checkPage(t, p, apiGet(s, p), "private, max-age=86400, immutable")
	}
	checkPage(t, "/report/m1", apiGet(s, "/report/m1"), "no-store")
	checkOneLine(t, "first run", apiGet(s, "/report/m1/20261201-002100"), http.StatusNotFound, "20261201-002100", "no longer kept", "last 3 runs")
	checkOneLine(t, "future run", apiGet(s, "/report/m1/20261201-002500"), http.StatusNotFound, "no run")
	checkOneLine(t, "not a run id", apiGet(s, "/report/m1/latest"), http.StatusNotFound, "no run")
	checkOneLine(t, "unknown target", apiGet(s, "/report/nosuch"), http.StatusNotFound, "no report of target")
	checkOneLine(t, "unknown target's run", apiGet(s, "/report/nosuch/20261201-002400"), http.StatusNotFound, "no report of target")

	// Two runs in one second.
	s2, f2 := newPagesServer(t, Config{})
	s2.diag = func(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error) {
		return watchtest.DiagOf(watchtest.QueueCrit), nil
	}
	pagesRun(t, s2, f2, nil, latestWatch)
	pagesRun(t, s2, f2, nil, latestWatch)
	v, _ = s2.history.target("m1")
	if len(v.runs) != 2 || v.runs[0].id != "20261201-002000-2" || v.runs[1].id != "20261201-002000" {
		t.Fatalf("runs in one second: %s, %s", v.runs[0].id, v.runs[1].id)
	}
	for _, r := range v.runs {
		checkPage(t, r.id, apiGet(s2, "/report/m1/"+r.id), "")
	}
	if !runBefore("20261201-002000", "20261201-002000-2") || runBefore("20261201-002000-2", "20261201-002000") || runBefore("x", "20261201-002000") {
		t.Error("runBefore")
	}
	if _, _, ok := parseRunID("20261201-002000-1"); ok {
		t.Error("-1 is not an id the server makes")
	}
	if _, err := New(Config{ReportHistory: -1}); err == nil {
		t.Error("a negative history was taken")
	}
}

// At most maxTargets targets are kept; the one updated longest ago goes
// first.
func TestReportTargetsBounded(t *testing.T) {
	s, f := newPagesServer(t, Config{})
	s.history = newHistory(DefaultReportHistory, 3)
	model := func(m string) *advisor.Diagnosis {
		return watchtest.DiagOf(watchtest.TV{Model: m, Bottleneck: "queueing", Sev: "critical"})
	}
	for _, m := range []string{"m0", "m1", "m2", "m0", "m3"} {
		pagesRun(t, s, f, model(m), latestWatch)
	}
	var got []string
	for _, v := range s.history.all() {
		got = append(got, v.slug)
	}
	if strings.Join(got, " ") != "m3 m0 m2" {
		t.Fatalf("targets kept, most recently updated first: %v", got)
	}
	checkOneLine(t, "evicted target", apiGet(s, "/report/m1"), http.StatusNotFound, "no report of target", "last 3 targets")
	checkPage(t, "/report/m0", apiGet(s, "/report/m0"), "")
	if n := len(s.history.byKey) + len(s.history.bySlug) + s.history.order.Len(); n != 9 {
		t.Errorf("the maps and list hold %d entries, want 3 each", n)
	}
}

// A target's path segment is readable, lowercase [a-z0-9.-], never "." or
// "..", and unique: a second target of the same segment gets a short
// hash of its identity, the same whichever comes first.
func TestReportSlugs(t *testing.T) {
	for _, tc := range []struct {
		t    evidence.Target
		want string
	}{
		{evidence.Target{Model: "meta-llama/Llama-3.1-8B-Instruct"}, "meta-llama-llama-3.1-8b-instruct"},
		{evidence.Target{Model: "meta-llama/Llama-3.1-8B-Instruct", Instance: "10.0.0.7:8000",
			Labels: map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "Prod"}}, "meta-llama-llama-3.1-8b-instruct-10.0.0.7-8000-prod"},
		{evidence.Target{Model: "Qwen/Qwen2.5 – 72B  (AWQ)"}, "qwen-qwen2.5-72b-awq"},
		{evidence.Target{Model: ".."}, "all-series"},
		{evidence.Target{Model: "./x/.."}, "x"},
		{evidence.Target{}, "all-series"},
		{evidence.Target{Model: "模型"}, "all-series"},
		{evidence.Target{Model: strings.Repeat("a/", 100)}, strings.TrimRight(strings.Repeat("a-", 40), "-")},
	} {
		got := slugOf(tc.t)
		if got != tc.want || !regexp.MustCompile(`^[a-z0-9.-]+$`).MatchString(got) || got == "." || got == ".." || len(got) > slugMax {
			t.Errorf("slugOf(%+v) = %q, want %q", tc.t, got, tc.want)
		}
	}

	a := watchtest.TV{Model: "Team/Llama", Bottleneck: "queueing", Sev: "critical"}
	b := watchtest.TV{Model: "team-llama", Bottleneck: "", Sev: "healthy"}
	hash := func(m string) string {
		sum := sha256.Sum256([]byte(targetKeyOf(evidence.Target{Model: m, ServedBy: "vllm"})))
		return hex.EncodeToString(sum[:])[:6]
	}
	for _, order := range [][]watchtest.TV{{a, b}, {b, a}} {
		s, f := newPagesServer(t, Config{})
		pagesRun(t, s, f, watchtest.DiagOf(order...), latestWatch)
		first, second := "team-llama", "team-llama-"+hash(order[1].Model)
		for slug, model := range map[string]string{first: order[0].Model, second: order[1].Model} {
			v, ok := s.history.target(slug)
			if !ok {
				t.Fatalf("no target %s: %+v", slug, s.history.all())
			}
			d, err := v.runs[0].diagnosis()
			if err != nil || d.Targets[0].Target.Model != model || v.name != "model "+model {
				t.Errorf("%s is %q (%v), want model %s", slug, v.name, err, model)
			}
			checkPage(t, slug, apiGet(s, "/report/"+slug), "")
		}
	}
}

// The index lists every target with its latest verdict, the most severe
// first, and every link on it (latest reports, older runs, navigation)
// answers a page.
func TestReportIndex(t *testing.T) {
	s, f := newPagesServer(t, Config{})
	targets := []watchtest.TV{{Model: "m-ok", Bottleneck: "", Sev: "healthy"}, {Model: "m-unknown", Bottleneck: "", Sev: "inconclusive"}, {Model: "m-warn", Bottleneck: "queueing", Sev: "warning"}, {Model: "m-crit", Bottleneck: "decode", Sev: "critical"}}
	pagesRun(t, s, f, watchtest.DiagOf(targets...), Request{Latest: true, Trigger: TriggerAlertmanager})
	pagesRun(t, s, f, watchtest.DiagOf(targets...), latestWatch)
	pagesRun(t, s, f, watchtest.DiagOf(targets[1:]...), Request{Latest: true, Trigger: TriggerSlash})

	entries := s.indexEntries()
	var order []string
	for _, e := range entries {
		order = append(order, e.Name+"="+e.Status+"/"+e.Severity+"/"+e.Bottleneck)
	}
	want := "model m-crit=found/critical/decode model m-warn=found/warning/queueing model m-unknown=inconclusive//unknown model m-ok=healthy//none"
	if strings.Join(order, " ") != want {
		t.Errorf("index order:\n%s\nwant\n%s", strings.Join(order, " "), want)
	}
	if e := entries[0]; e.Href != "/report/m-crit" || len(e.Runs) != 2 || e.Summary == "" || !e.At.Equal(amNow.Add(3*time.Minute)) ||
		!strings.Contains(e.Runs[0].Text, "watch") || !strings.Contains(e.Runs[1].Text, "alertmanager") || !strings.Contains(e.Runs[0].Text, "CRITICAL: decode") {
		t.Errorf("the critical target's entry: %+v", e)
	}
	if e := entries[3]; len(e.Runs) != 1 || !e.At.Equal(amNow.Add(2*time.Minute)) {
		t.Errorf("the healthy target, not in the last run: %+v", e)
	}

	w := apiGet(s, "/")
	checkPage(t, "/", w, "no-store")
	body := w.Body.String()
	for _, tv := range targets {
		if !strings.Contains(body, tv.Model) {
			t.Errorf("the index does not name %s", tv.Model)
		}
	}
	// Every link of every page reached from the index answers a page.
	seen := map[string]bool{"/": true}
	queue := pageLinks(t, "/", body)
	if len(queue) < len(targets)+7+1 {
		t.Errorf("the index has %d links: %v", len(queue), queue)
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		w := apiGet(s, p)
		checkPage(t, p, w, "")
		queue = append(queue, pageLinks(t, p, w.Body.String())...)
	}
	// The index and its reloading form, four latest reports and theirs,
	// and every run kept: 2 of m-ok, 3 of each other.
	if len(seen) != 2+4+4+2+3*3 {
		t.Errorf("%d pages reached: %v", len(seen), seen)
	}
}

// ?refresh= takes 10 to 3600 seconds on the index and the latest reports;
// anything else is refused in one line.
func TestReportRefresh(t *testing.T) {
	s, f := newPagesServer(t, Config{})
	pagesRun(t, s, f, watchtest.DiagOf(watchtest.QueueCrit), latestWatch)
	if body := apiGet(s, "/").Body.String(); strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("the index reloads by default:\n%s", body)
	}
	for _, p := range []string{"/?refresh=60", "/?refresh=10", "/?refresh=3600", "/report/m1?refresh=30"} {
		w := apiGet(s, p)
		checkPage(t, p, w, "no-store")
		want := regexp.MustCompile(`refresh=(\d+)`).FindStringSubmatch(p)[1]
		if !strings.Contains(w.Body.String(), `<meta http-equiv="refresh" content="`+want+`">`) {
			t.Errorf("%s: the page was not given refresh %s:\n%s", p, want, w.Body)
		}
	}
	for _, p := range []string{"/?refresh=9", "/?refresh=3601", "/?refresh=abc", "/?refresh=", "/?refresh=1e2", "/?refresh=-60",
		"/?refresh=60&refresh=60", "/?reload=60", "/report/m1?refresh=5", "/report/m1/20261201-002100?refresh=60"} {
		checkOneLine(t, p, apiGet(s, p), http.StatusBadRequest)
	}
	checkOneLine(t, "bad refresh", apiGet(s, "/?refresh=5"), http.StatusBadRequest, "10 to 3600")
}

// slackLinks are the "Full report" links of a message's payload.
func slackLinks(t testing.TB, payload map[string]any) []string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(payload); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`<(https?://[^|>]+)\|Full report>`).FindAllStringSubmatch(b.String(), -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// fetchReport fetches a Slack link from a test server of s (the link's
// external URL and path prefix replaced by the test server's), and checks
// that it is the report page of a target named name.
func fetchReport(t *testing.T, s *Server, link, external, name string) {
	t.Helper()
	path, ok := strings.CutPrefix(link, external)
	if !ok || !strings.HasPrefix(path, "/report/") {
		t.Fatalf("link %s is not a report page under %s", link, external)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // read only
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || resp.Header.Get("Content-Security-Policy") != reportCSP {
		t.Fatalf("%s: %d %v\n%s", link, resp.StatusCode, resp.Header, body)
	}
	if !strings.Contains(string(body), html.EscapeString(name)) {
		t.Errorf("%s does not name %s:\n%s", link, name, body)
	}
}

// With --external-url, each Slack message's "Full report" is the HTML
// page of the run that made it, for that message's target: the
// Alertmanager receiver's, the watch's and the slash command's. A
// failure's "try again" is still the JSON API.
func TestReportSlackLinks(t *testing.T) {
	const external = "https://llmdoctor.example.com"
	t.Run("alertmanager", func(t *testing.T) {
		h := newAMHarness(t, Config{}, false)
		d := amDiagnosis("meta-llama/Llama-3.1-8B-Instruct", "a-healthy")
		h.result = func() (*advisor.Diagnosis, error) { return d, nil }
		h.send(amFiring("inference", "a-healthy", "meta-llama/Llama-3.1-8B-Instruct").JSON())
		h.settle()
		acc := h.slack.Accepted()
		if len(acc) < 2 {
			t.Fatalf("posted:\n%s", h.slack.Summary())
		}
		// The alert's namespace narrows each model: the runs are the
		// narrowed targets', whose pages say so.
		main := slackLinks(t, acc[0].Payload)
		if len(main) != 1 || main[0] != external+"/report/meta-llama-llama-3.1-8b-instruct--namespace-inference/20261201-002000" {
			t.Fatalf("the main message's links: %v", main)
		}
		fetchReport(t, h.s, main[0], external, `model meta-llama/Llama-3.1-8B-Instruct · namespace="inference"`)
		fetchReport(t, h.s, main[0], external, `narrowed run: it covers only the series of model meta-llama/Llama-3.1-8B-Instruct matching namespace="inference"`)
		fetchReport(t, h.s, main[0], external, "asked by Alertmanager (alert VLLMQueueBacklog)")
		var other []string
		for _, r := range acc[1:] {
			other = append(other, slackLinks(t, r.Payload)...)
		}
		if len(other) != 1 || other[0] != external+"/report/a-healthy--namespace-inference/20261201-002000" {
			t.Fatalf("the other target's message in the thread links to %v", other)
		}
		fetchReport(t, h.s, other[0], external, `model a-healthy · namespace="inference"`)

		// A failure links to the JSON API, to try again; it answers.
		h.result = func() (*advisor.Diagnosis, error) {
			return nil, &diagnosis.NoTargetError{Why: diagnosis.NoEngineMetrics}
		}
		h.send(amFiring("other", "x").JSON())
		h.settle()
		acc = h.slack.Accepted()
		text, _ := acc[len(acc)-1].Payload["text"].(string)
		api := regexp.MustCompile(`try again: (\S+)`).FindStringSubmatch(html.UnescapeString(text))
		if api == nil || !strings.HasPrefix(api[1], external+DiagnosisPath+"?") {
			t.Fatalf("failure message %q", text)
		}
		h.result = func() (*advisor.Diagnosis, error) { return amDiagnosis(), nil }
		if w := apiGet(h.s, strings.TrimPrefix(api[1], external)); w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("the API link: %d %s", w.Code, w.Body)
		}
	})
	t.Run("watch", func(t *testing.T) {
		fs := fakeslack.Start()
		defer fs.Close()
		// Under a path prefix: the links between pages keep it.
		s, err := New(Config{Slack: watchtest.BotDest(fs), Watch: &WatchConfig{Enabled: true, Hold: 1}, ExternalURL: external + "/llmdoctor/"})
		if err != nil {
			t.Fatal(err)
		}
		s.watch.SetPace(0)
		fd := &watchtest.FakeDiag{}
		s.diag = fd.Diagnose
		models := []string{"Qwen/Qwen2.5-72B", "mistral-7b-watch"}
		watchRuns(t, s, fd, watchtest.Seq(watchtest.TV{Model: models[0], Bottleneck: "queueing", Sev: "critical"}, watchtest.TV{Model: models[1], Bottleneck: "decode", Sev: "warning"}))
		m := watchtest.Mains(fs)
		if len(m) != 2 {
			t.Fatalf("posted:\n%s", fs.Summary())
		}
		for i, slug := range []string{"qwen-qwen2.5-72b", "mistral-7b-watch"} {
			links := slackLinks(t, m[i].Payload)
			if len(links) != 1 || !regexp.MustCompile(`^`+external+`/llmdoctor/report/`+slug+`/\d{8}-\d{6}$`).MatchString(links[0]) {
				t.Fatalf("post %d links to %v", i, links)
			}
			fetchReport(t, s, links[0], external+"/llmdoctor", models[i])
		}
		for _, p := range pageLinks(t, "/report/qwen-qwen2.5-72b", apiGet(s, "/report/qwen-qwen2.5-72b").Body.String()) {
			if !strings.HasPrefix(p, "/llmdoctor/") {
				t.Errorf("a page links to %s, outside the external URL's path", p)
			}
		}
	})
	t.Run("slash command", func(t *testing.T) {
		h := newSlackHarness(t, func(c *Config) { c.ExternalURL = external })
		h.command(t, "diagnose")
		p := h.sink.next(t)
		model := slackFixtureDiagnosis(t).Targets[0].Target.Model
		links := slackLinks(t, p.Payload)
		if len(links) != 1 || !strings.HasPrefix(links[0], external+"/report/"+slugOf(slackFixtureDiagnosis(t).Targets[0].Target)+"/") {
			t.Fatalf("the answer links to %v", links)
		}
		fetchReport(t, h.srv, links[0], external, model)
	})
	t.Run("no external URL", func(t *testing.T) {
		fs := fakeslack.Start()
		defer fs.Close()
		s, fd := newWatchServer(t, watchtest.BotDest(fs), WatchConfig{Enabled: true, Hold: 1})
		watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit))
		if links := slackLinks(t, watchtest.Mains(fs)[0].Payload); len(links) != 0 {
			t.Errorf("links without --external-url: %v", links)
		}
		if len(s.history.all()) != 1 {
			t.Error("the run was not kept")
		}
	})
}

// Diagnoses record while pages are read (go test -race).
func TestReportPagesConcurrent(t *testing.T) {
	s, _ := newPagesServer(t, Config{ReportHistory: 3, MaxConcurrent: 64})
	s.history = newHistory(3, 5)
	var clock sync.Mutex
	now := amNow
	s.now = func() time.Time {
		clock.Lock()
		defer clock.Unlock()
		now = now.Add(time.Second)
		return now
	}
	var calls atomic.Int64
	s.diag = func(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error) {
		n := int(calls.Add(1))
		var ts []watchtest.TV
		for i := range 3 {
			ts = append(ts, watchtest.TV{Model: fmt.Sprintf("m%d", (n+i)%8), Bottleneck: "queueing", Sev: "critical"})
		}
		return watchtest.DiagOf(ts...), nil
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				trigger := []string{TriggerWatch, TriggerAlertmanager, TriggerSlash}[(g+i)%3]
				if _, err := s.Diagnose(context.Background(), Request{Latest: true, Trigger: trigger}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				w := apiGet(s, "/")
				if w.Code != http.StatusOK {
					t.Errorf("/: %d", w.Code)
					return
				}
				for _, p := range pageLinks(t, "/", w.Body.String()) {
					if c := apiGet(s, p).Code; c != http.StatusOK && c != http.StatusNotFound {
						t.Errorf("%s: %d", p, c)
					}
				}
			}
		}()
	}
	wg.Wait()
	if n := len(s.history.all()); n != 5 {
		t.Errorf("%d targets kept, want 5", n)
	}
	for _, v := range s.history.all() {
		if len(v.runs) > 3 {
			t.Errorf("%s keeps %d runs", v.slug, len(v.runs))
		}
	}
}

// A run whose selector narrows its target (an alert's instance="x" on a
// target grouped by model) is kept apart from the target's: a page of its
// own, named and slugged after the narrowing, that says in a note what it
// covered. The target's page and the index keep the whole target's latest
// run; a selector the target's identity implies (a slash command's
// model_name) narrows nothing.
func TestReportNarrowedRuns(t *testing.T) {
	s, f := newPagesServer(t, Config{})
	pagesRun(t, s, f, watchtest.DiagOf(watchtest.TV{Model: "m1", Bottleneck: "", Sev: "healthy"}), latestWatch)
	alert := Request{Selector: `instance="x"`, Window: 40 * time.Minute, End: amNow.Add(2 * time.Minute), Latest: true,
		Trigger: TriggerAlertmanager, Reason: "alert VLLMQueueBacklog"}
	pagesRun(t, s, f, watchtest.DiagOf(watchtest.TV{Model: "m1", Bottleneck: "queueing", Sev: "critical"}), alert)

	whole, ok := s.history.target("m1")
	if !ok || len(whole.runs) != 1 || whole.runs[0].trigger != TriggerWatch || whole.name != "model m1" {
		t.Fatalf("the whole target took the narrowed run: %+v", whole)
	}
	narrow, ok := s.history.target("m1--instance-x")
	if !ok || len(narrow.runs) != 1 || narrow.runs[0].trigger != TriggerAlertmanager || narrow.name != `model m1 · instance="x"` {
		t.Fatalf("the narrowed run: %+v (%+v)", narrow, s.history.all())
	}

	// The index tells them apart: the whole target's latest is the
	// watch's healthy run; the narrowed one is named so.
	entries := s.indexEntries()
	byName := map[string]string{}
	for _, e := range entries {
		byName[e.Name] = e.Href + " " + e.Status + "/" + e.Severity
	}
	if len(entries) != 2 || byName["model m1"] != "/report/m1 healthy/" || byName[`model m1 · instance="x"`] != "/report/m1--instance-x found/critical" {
		t.Errorf("index entries: %v", byName)
	}
	index := html.UnescapeString(apiGet(s, "/").Body.String())
	if !strings.Contains(index, `model m1 · instance="x"`) {
		t.Errorf("the index does not name the narrowed target:\n%s", index)
	}

	page := func(p string) string {
		t.Helper()
		w := apiGet(s, p)
		checkPage(t, p, w, "")
		return html.UnescapeString(w.Body.String())
	}
	for _, p := range []string{"/report/m1--instance-x", "/report/m1--instance-x/" + narrow.runs[0].id} {
		body := page(p)
		for _, want := range []string{
			`note: narrowed run: it covers only the series of model m1 matching instance="x", not the whole target`,
			"asked by Alertmanager (alert VLLMQueueBacklog) · selector instance=\"x\" · window 40m ending 2026-12-01 00:22:00 UTC",
			`href="/report/m1">the whole target: latest report of model m1</a>`,
			// The heading and title name the narrowed target, not the model alone.
			`<h2>model m1 · instance="x"`, `<title>queueing · model m1 · instance="x" · llmdoctor</title>`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q:\n%s", p, want, body)
			}
		}
	}
	for _, p := range []string{"/report/m1", "/report/m1/" + whole.runs[0].id} {
		body := page(p)
		if strings.Contains(body, "instance") || strings.Contains(body, "CRITICAL") {
			t.Errorf("%s shows the narrowed run:\n%s", p, body)
		}
		if !strings.Contains(body, "note: this run covers every series of model m1 · asked by the watch · no selector") {
			t.Errorf("%s does not say what it covers:\n%s", p, body)
		}
	}

	// A slash command's model_name="m1" is the target's own: its run is
	// the whole target's latest.
	pagesRun(t, s, f, watchtest.DiagOf(watchtest.TV{Model: "m1", Bottleneck: "decode", Sev: "warning"}), Request{Selector: slackapp.ModelSelector("m1"), Window: time.Hour, Latest: true, Trigger: TriggerSlash})
	if whole, _ = s.history.target("m1"); len(whole.runs) != 2 || whole.runs[0].trigger != TriggerSlash {
		t.Errorf("the slash command's run of m1: %+v", whole)
	}
	if body := page("/report/m1"); !strings.Contains(body, `note: this run covers every series of model m1 · asked by a slash command · selector model_name="m1" · window 1h`) {
		t.Errorf("the slash command's run does not say what it covers:\n%s", body)
	}
	if len(s.history.all()) != 2 {
		t.Errorf("targets: %+v", s.history.all())
	}
}

// A selector's matchers narrow a target unless its identity fixes their
// label to a value they accept; one that cannot be read narrows by all of
// it.
func TestNarrowing(t *testing.T) {
	byModel := evidence.Target{Model: "m1", Labels: map[string]string{"model_name": "m1"}}
	byInstance := evidence.Target{Model: "m1", Instance: "10.0.0.7:8000", Labels: map[string]string{"model_name": "m1", "instance": "10.0.0.7:8000"}}
	for _, tc := range []struct {
		sel    string
		t      evidence.Target
		want   string
		parts  string
		unread bool
	}{
		{"", byModel, "", "", false},
		{`model_name="m1"`, byModel, "", "", false},
		{`model_name=~"m0|m1"`, byModel, "", "", false},
		{`model_name!="m2"`, byModel, "", "", false},
		{`model_name='m1', instance = "10.0.0.7:8000"`, byModel, `instance="10.0.0.7:8000"`, "instance 10.0.0.7:8000", false},
		{`instance="10.0.0.7:8000",namespace=~"prod|staging"`, byInstance, `namespace=~"prod|staging"`, "namespace prod|staging", false},
		{"instance=`10.0.0.7:8000`", byInstance, "", "", false},
		{`model_name=~"m1.+"`, byModel, `model_name=~"m1.+"`, "model_name m1.+", false},
		{`model_name="m1"`, evidence.Target{Model: "m1"}, "", "", false},
		{`namespace='it\'s "x"'`, byModel, `namespace="it's \"x\""`, `namespace it's "x"`, false},
		{`namespace="prod" or 1`, byModel, `namespace="prod" or 1`, `namespace="prod" or 1`, true},
	} {
		got, parts := narrowing(tc.sel, tc.t)
		if got != tc.want || strings.Join(parts, " ") != tc.parts {
			t.Errorf("narrowing(%s, %v) = %q %q, want %q %q", tc.sel, tc.t, got, parts, tc.want, tc.parts)
		}
		if _, ok := prom.ParseSelector(tc.sel); ok == tc.unread {
			t.Errorf("ParseSelector(%s) ok = %v", tc.sel, ok)
		}
	}
	if got := slugify([]string{"instance", "10.0.0.7:8000", "namespace", "prod|staging"}, "narrowed"); got != "instance-10.0.0.7-8000-namespace-prod-staging" {
		t.Errorf("slugify: %s", got)
	}
}
