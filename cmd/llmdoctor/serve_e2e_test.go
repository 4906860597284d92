package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
	"github.com/llmdoctor/llmdoctor/sim"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }() // a port left taken shows as the server's listen failing
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess runs a server until the test ends, logging to a file whose
// contents a failing test shows, and waits until ready answers 200.
func startProcess(t *testing.T, name, ready string, bin string, args ...string) {
	t.Helper()
	logName := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logName)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // it may have exited already
		_ = cmd.Wait()         // killed: its exit status says nothing
		_ = logf.Close()       // the process wrote to it; the log is read back by name
		if t.Failed() {
			b, _ := os.ReadFile(logName)
			t.Logf("%s log:\n%s", name, tail(string(b), 40))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(ready); err == nil {
			_ = resp.Body.Close() // only the status is wanted
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not become ready at %s", name, ready)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// syncBuffer is a buffer written by one goroutine and read by another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The end-to-end test, with real parts: Prometheus holds a
// queue-bound deployment's last 20 minutes (the simulator's, backfilled)
// and evaluates an alerting rule on TTFT; Alertmanager routes the firing
// alert to llmdoctor serve, authenticated by a bearer token, and repeats
// it; a fake Slack that checks Slack's limits gets exactly one message,
// whose verdict is the scenario's: queueing.
func TestServeAlertmanagerEndToEnd(t *testing.T) {
	testkit.NeedHeavy(t, "Prometheus, Alertmanager and serve end to end")
	prometheus, _ := promtest.Need(t)
	alertmanager := testkit.Need(t, "prometheus-alertmanager", "prometheus-alertmanager", "alertmanager")
	began := time.Now()
	dir := t.TempDir()

	// The deployment's metrics, ending now.
	sc, err := sim.Load("queue-bound")
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = 20 * time.Minute
	end := time.Now().Truncate(time.Second)
	om := filepath.Join(dir, "queue-bound.om")
	f, err := os.Create(om)
	if err != nil {
		t.Fatal(err)
	}
	err = sim.Offline{OpenMetrics: f, Epoch: end.Add(-sc.Warmup - sc.Duration)}.Run(sc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	tsdb := filepath.Join(dir, "tsdb")
	promtest.Backfill(t, om, tsdb)
	t.Logf("20m of queue-bound simulated and backfilled in %s", time.Since(began).Round(100*time.Millisecond))

	promPort, amPort := freePort(t), freePort(t)
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	amURL := fmt.Sprintf("http://127.0.0.1:%d", amPort)

	// llmdoctor serve, posting to the fake Slack with a bot token.
	slack := fakeslack.Start()
	t.Cleanup(slack.Close)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const amToken = "e2e-alertmanager-token-5f1c"
	llmdoctor, stderr, cancel, served := serveInProcess(t, "--prom", promURL,
		"--slack-token-file", write("slack-token", fakeslack.Token), "--slack-channel", fakeslack.Channel, "--slack-api-url", slack.APIURL(),
		"--alertmanager-token-file", write("am-token", amToken),
		// The port is known once it listens: links name a placeholder.
		"--external-url", "http://llmdoctor.invalid")
	defer cancel()
	defer func() {
		if t.Failed() {
			t.Logf("llmdoctor serve's log:\n%s\nSlack got:\n%s", tail(stderr.String(), 40), slack.Summary())
		}
	}()

	// Alertmanager: one route to llmdoctor, group_wait short, repeating
	// the notification every few seconds.
	amDir := filepath.Join(dir, "am")
	if err := os.Mkdir(amDir, 0o755); err != nil {
		t.Fatal(err)
	}
	amConfig := write("am.yml", fmt.Sprintf(`route:
  receiver: llmdoctor
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 3s
receivers:
  - name: llmdoctor
    webhook_configs:
      - url: %s/alertmanager
        send_resolved: true
        http_config:
          authorization:
            credentials: %s
`, llmdoctor, amToken))
	startProcess(t, "alertmanager", amURL+"/-/ready", alertmanager, "--config.file="+amConfig, "--storage.path="+amDir,
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", amPort), "--web.external-url="+amURL, "--cluster.listen-address=")

	// Prometheus over the backfilled block, evaluating a TTFT alert every
	// second and sending it to Alertmanager.
	write("rules.yml", `groups:
  - name: llmdoctor-e2e
    interval: 1s
    rules:
      - alert: VLLMSlowFirstToken
        expr: histogram_quantile(0.9, sum by (le, model_name) (rate(vllm:time_to_first_token_seconds_bucket[5m]))) > 1
        labels: {severity: page}
        annotations:
          summary: "{{ $labels.model_name }}: p90 time to first token is {{ $value }}s"
`)
	promConfig := write("prometheus.yml", fmt.Sprintf(`global: {scrape_interval: 15s, evaluation_interval: 1s}
rule_files: [rules.yml]
alerting:
  alertmanagers:
    - static_configs: [{targets: ['127.0.0.1:%d']}]
`, amPort))
	startProcess(t, "prometheus", promURL+"/-/ready", prometheus, "--config.file="+promConfig, "--storage.tsdb.path="+tsdb,
		"--storage.tsdb.retention.time=100y", fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort), "--rules.alert.resend-delay=1s")

	// One message arrives; Alertmanager's repeats of the notification
	// post nothing more.
	promStarted := time.Now()
	var main []fakeslack.Request
	var first time.Duration
	for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		main = main[:0]
		for _, r := range slack.Requests() {
			if r.ThreadTS == "" {
				main = append(main, r)
			}
		}
		if len(main) > 0 && first == 0 {
			first = time.Since(promStarted)
			t.Logf("the message was posted %s after Prometheus was ready", first.Round(100*time.Millisecond))
		}
		if len(main) > 0 && scrapeCount(t, llmdoctor, `llmdoctor_alertmanager_notifications_total{outcome="duplicate"}`) >= 2 {
			break
		}
	}
	if len(main) != 1 {
		t.Fatalf("Slack got %d messages in the channel, want 1:\n%s", len(main), slack.Summary())
	}
	if n := scrapeCount(t, llmdoctor, `llmdoctor_alertmanager_notifications_total{outcome="duplicate"}`); n < 2 {
		t.Fatalf("Alertmanager's repeats did not arrive (%v duplicates)", n)
	}
	for _, r := range slack.Requests() {
		if r.Code != "" || len(r.Problems) > 0 {
			t.Errorf("Slack refused request #%d: %s %v", r.N, r.Code, r.Problems)
		}
	}
	msg := main[0]
	text, _ := msg.Payload["text"].(string)
	if !strings.HasPrefix(text, "VLLMSlowFirstToken firing · llmdoctor: ✗ CRITICAL: queueing on model ") {
		t.Fatalf("the message's verdict is not the scenario's (queueing): %q", text)
	}
	var blocks strings.Builder
	enc := json.NewEncoder(&blocks)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg.Payload["attachments"]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(blocks.String(), "Alertmanager: *VLLMSlowFirstToken* firing · diagnosed `model_name=") {
		t.Errorf("the message does not say which alert it answers:\n%s", blocks.String())
	}

	// The message's report link is the HTML page of the run that posted
	// it; the JSON API gives the same verdict; the metrics hold it.
	model := regexp.MustCompile(`queueing on model (\S+):`).FindStringSubmatch(text)
	if model == nil {
		t.Fatalf("no model in %q", text)
	}
	link := regexp.MustCompile(`<(https?://[^|>]+/report/[^|>]+)\|Full report>`).FindStringSubmatch(blocks.String())
	if link == nil {
		t.Fatalf("no report link in the message:\n%s", blocks.String())
	}
	t.Logf("report link: %s", html.UnescapeString(link[1]))
	resp, err := http.Get(strings.Replace(html.UnescapeString(link[1]), "http://llmdoctor.invalid", llmdoctor, 1))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close() // read only
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		!strings.Contains(string(page), html.EscapeString(model[1])) || !strings.Contains(string(page), "queueing") {
		t.Fatalf("the report link: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), tail(string(page), 20))
	}
	resp, err = http.Get(llmdoctor + "/api/v1/diagnosis?selector=" + url.QueryEscape(`model_name="`+model[1]+`"`))
	if err != nil {
		t.Fatal(err)
	}
	var d advisor.Diagnosis
	err = json.NewDecoder(resp.Body).Decode(&d)
	_ = resp.Body.Close() // read only
	if err != nil || len(d.Targets) != 1 || d.Targets[0].Primary.Bottleneck != "queueing" || d.Targets[0].Target.Model != model[1] {
		t.Fatalf("the API: %v %+v", err, d.Targets)
	}
	if n := scrapeCount(t, llmdoctor, fmt.Sprintf(`llmdoctor_verdict{bottleneck="queueing",model=%q,served_by="vllm",status="found",target=%q}`, model[1], "model_name="+model[1])); n != 1 {
		t.Errorf("llmdoctor_verdict for the target is %v", n)
	}
	if r, err := http.Get(llmdoctor + "/readyz"); err != nil || r.StatusCode != http.StatusOK {
		t.Errorf("/readyz with Prometheus up: %v %v", err, r)
	} else {
		_ = r.Body.Close() // only the status is wanted
	}

	// Shutdown is graceful and quick.
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve ended with %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}
	t.Logf("end to end in %s", time.Since(began).Round(100*time.Millisecond))
}

// scrapeCount reads one series' value from llmdoctor's /metrics (0 when
// absent).
func scrapeCount(t *testing.T, base, series string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer func() { _ = resp.Body.Close() }() // read only
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err != nil {
				t.Fatalf("%s in /metrics: value %q: %v", series, rest, err)
			}
			return v
		}
	}
	return 0
}

// serveInProcess starts llmdoctor serve --listen 127.0.0.1:0 with args in
// this process and returns its base URL once it listens, its log, what
// stops it and where its end is sent.
func serveInProcess(t *testing.T, args ...string) (base string, stderr *syncBuffer, stop context.CancelFunc, served <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &syncBuffer{}
	root := newRoot()
	root.SetArgs(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...))
	root.SetIn(strings.NewReader(""))
	root.SetOut(io.Discard)
	root.SetErr(stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`msg=listening addr=(\S+)`).FindStringSubmatch(stderr.String()); m != nil {
			return "http://" + m[1], stderr, cancel, done
		}
	}
	cancel()
	t.Fatalf("llmdoctor serve did not start:\n%s", stderr.String())
	return "", nil, nil, nil
}
