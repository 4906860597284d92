package main

import (
	"encoding/json"
	"fmt"
	"github.com/llmdoctor/llmdoctor/sim/simtest"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
)

// The two models of podsProm: a bandwidth-bound MoE on two GPUs (a verdict
// only DCGM gives) and a queue-bound 8B on one.
const (
	moeModel   = "Qwen/Qwen3-30B-A3B"
	llamaModel = "meta-llama/Llama-3.1-8B-Instruct"
)

// podsProm starts a Prometheus holding two models served from two pods of
// one Kubernetes node, as it scrapes them: vLLM's series with model_name,
// the pod and its namespace; its cache_config_info without model_name;
// dcgm-exporter's, run with --kubernetes, without model_name but with the
// pod and namespace of the workload using each GPU. The windows end at end.
func podsProm(t *testing.T, end time.Time) string {
	t.Helper()
	promtest.Need(t)
	dir := t.TempDir()
	gpu := func(pod string) map[string]string {
		return map[string]string{"instance": "10.0.0.1:9400", "job": "dcgm", "Hostname": "gpu-node-1", "pod": pod, "namespace": "inference", "container": "vllm"}
	}
	om, _ := simtest.Deployments(t, dir, "pods", end.Add(-16*time.Minute), fixtureStep, []simtest.Deployment{
		{Scenario: "moe-bandwidth", Labels: map[string]string{"instance": "10.1.0.21:8000", "job": "vllm", "pod": "qwen-moe-0", "namespace": "inference"},
			GPULabels: gpu("qwen-moe-0")},
		{Scenario: "queue-bound", Labels: map[string]string{"instance": "10.1.0.22:8000", "job": "vllm", "pod": "llama-8b-0", "namespace": "inference"},
			GPULabels: gpu("llama-8b-0")},
	})
	tsdb := filepath.Join(dir, "tsdb")
	promtest.Backfill(t, om, tsdb)
	return promtest.Start(t, tsdb, "").URL
}

// selectedJSON is what the tests below read of a diagnosis.
type selectedJSON struct {
	Sources []struct {
		Kind   string          `json:"kind"`
		Scopes []advisor.Scope `json:"scopes"`
	} `json:"sources"`
	Targets []struct {
		Target   struct{ Model string } `json:"target"`
		Primary  struct{ Bottleneck string }
		Evidence map[string]any `json:"evidence"`
		Skipped  []struct{ Source string }
	} `json:"targets"`
}

// checkSelected holds a diagnosis of one model selected by model_name to
// what the issue asked: the GPU rules ran (nothing skipped for want of
// DCGM), on that model's GPUs only, with its KV cache configuration, and
// the source says how DCGM and cache_config_info were joined.
func checkSelected(t *testing.T, d selectedJSON, model string, gpus float64, verdict string) {
	t.Helper()
	if len(d.Targets) != 1 || d.Targets[0].Target.Model != model {
		t.Fatalf("targets %+v, want %s alone", d.Targets, model)
	}
	tg := d.Targets[0]
	for _, s := range tg.Skipped {
		if s.Source == "dcgm" {
			t.Errorf("%s: dcgm rules skipped for want of data", model)
		}
	}
	if n := num(tg.Evidence, "resource.gpus"); n != gpus {
		t.Errorf("%s: %v GPUs, want %v", model, n, gpus)
	}
	for _, p := range []string{"resource.dram_active.mean", "cond.gpu_blocks", "cond.kv_capacity_tokens"} {
		if n := num(tg.Evidence, p); n != n || n <= 0 {
			t.Errorf("%s: no %s", model, p)
		}
	}
	if tg.Primary.Bottleneck != verdict {
		t.Errorf("%s: verdict %s, want %s", model, tg.Primary.Bottleneck, verdict)
	}
	through := map[string]string{}
	for _, s := range d.Sources[0].Scopes {
		if s.Read {
			through[s.Families] = s.Through
		}
	}
	if through["dcgm"] != "pod" || through["vllm:cache_config_info"] != "instance" {
		t.Errorf("%s: scopes %+v", model, d.Sources[0].Scopes)
	}
}

// A diagnosis selected by model_name, as every alert and slash command
// makes one, keeps the GPU exporter's series and vLLM's cache_config_info,
// which carry no model_name: each model gets its own GPUs, its own cache
// configuration and the verdict they give, and the report says how.
func TestSelectorKeepsGPUsAndCacheConfig(t *testing.T) {
	t.Parallel()
	end := time.Now().Add(-time.Hour).Truncate(time.Minute)
	prom := podsProm(t, end)
	at := strconv.FormatInt(end.Unix(), 10)
	for _, tc := range []struct {
		model, verdict string
		gpus           float64
	}{{moeModel, "memory-bandwidth", 2}, {llamaModel, "queueing", 1}} {
		sel := fmt.Sprintf("model_name=%q", tc.model)
		checkSelected(t, diagnoseInto[selectedJSON](t, "--prom", prom, "--end", at, "--selector", sel), tc.model, tc.gpus, tc.verdict)
		code, out, errOut := runCLI(t, "diagnose", "--prom", prom, "--end", at, "--selector", sel, "--color", "never")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		flat := strings.Join(strings.Fields(out), " ")
		if want := "dcgm joined to " + sel + " through pod"; !strings.Contains(flat, want) || strings.Contains(flat, "no dcgm data") {
			t.Errorf("%s: the text does not say %q, or skips DCGM:\n%s", tc.model, want, out)
		}
	}
}

// An alert labelled with its model, through llmdoctor serve's Alertmanager
// receiver, is diagnosed with the model's GPUs: the bandwidth verdict only
// DCGM gives, posted to Slack, with a report page that says how DCGM was
// joined; the API's diagnosis of the same model agrees.
func TestAlertmanagerDiagnosisKeepsGPUs(t *testing.T) {
	t.Parallel()
	prom := podsProm(t, time.Now().Truncate(time.Second))
	slack := fakeslack.Start()
	t.Cleanup(slack.Close)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const amToken = "selector-alertmanager-token-8d2e"
	base, stderr, cancel, served := serveInProcess(t, "--prom", prom,
		"--slack-token-file", write("slack-token", fakeslack.Token), "--slack-channel", fakeslack.Channel, "--slack-api-url", slack.APIURL(),
		"--alertmanager-token-file", write("am-token", amToken), "--external-url", "http://llmdoctor.invalid")
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Logf("serve ended with %v", err) // how it ends is its own tests' matter
		}
	}()
	defer func() {
		if t.Failed() {
			t.Logf("llmdoctor serve's log:\n%s\nSlack got:\n%s", tail(stderr.String(), 40), slack.Summary())
		}
	}()

	// Alertmanager's notification, as 0.25 sends it.
	started := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	note := fmt.Sprintf(`{"receiver":"llmdoctor","status":"firing","alerts":[{"status":"firing",
"labels":{"alertname":"VLLMSlowTokens","instance":"10.1.0.21:8000","job":"vllm","model_name":%q,"namespace":"inference","severity":"page"},
"annotations":{"summary":"slow"},"startsAt":%q,"endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prometheus/graph","fingerprint":"5e1f0a7c2b9d4e63"}],
"groupLabels":{"alertname":"VLLMSlowTokens"},"commonLabels":{"alertname":"VLLMSlowTokens"},"commonAnnotations":{},
"externalURL":"http://alertmanager","version":"4","groupKey":"{}:{alertname=\"VLLMSlowTokens\"}","truncatedAlerts":0}`, moeModel, started)
	req, _ := http.NewRequest(http.MethodPost, base+"/alertmanager", strings.NewReader(note))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+amToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // read only
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the receiver answered %d", resp.StatusCode)
	}
	var msg *fakeslack.Request
	for deadline := time.Now().Add(60 * time.Second); msg == nil && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, r := range slack.Requests() {
			if r.ThreadTS == "" {
				msg = &r
				break
			}
		}
	}
	if msg == nil {
		t.Fatal("nothing was posted to Slack")
	}
	text, _ := msg.Payload["text"].(string)
	if !strings.Contains(text, "memory-bandwidth on model "+moeModel) {
		t.Errorf("the alert's diagnosis is not the one DCGM gives (memory-bandwidth): %q", text)
	}
	var blocks strings.Builder
	enc := json.NewEncoder(&blocks)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg.Payload["attachments"]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(blocks.String(), "no dcgm data") {
		t.Errorf("the message says DCGM rules were skipped:\n%s", blocks.String())
	}
	link := regexp.MustCompile(`<(https?://[^|>]+/report/[^|>]+)\|Full report>`).FindStringSubmatch(blocks.String())
	if link == nil {
		t.Fatalf("no report link in the message:\n%s", blocks.String())
	}
	page := get(t, strings.Replace(html.UnescapeString(link[1]), "http://llmdoctor.invalid", base, 1))
	if want := html.EscapeString(fmt.Sprintf("dcgm joined to model_name=%q through pod", moeModel)); !strings.Contains(page, want) {
		t.Errorf("the report page does not say %s", want)
	}

	// The API, as a slash command asks.
	var d selectedJSON
	body := get(t, base+"/api/v1/diagnosis?selector="+url.QueryEscape(fmt.Sprintf("model_name=%q", moeModel)))
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("%v: %.300s", err, body)
	}
	checkSelected(t, d, moeModel, 2, "memory-bandwidth")
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // read only
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %.300s", u, resp.StatusCode, b)
	}
	return string(b)
}
