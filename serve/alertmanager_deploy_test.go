package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// exposedMetrics are the metric families a server with every part of this
// file on exposes once it has diagnosed a target.
func exposedMetrics(t *testing.T) (names map[string]bool, series []string) {
	t.Helper()
	h := newAMHarness(t, Config{}, false)
	if _, err := h.s.Diagnose(context.Background(), Request{Latest: true}); err != nil {
		t.Fatal(err)
	}
	names = map[string]bool{}
	for _, line := range strings.Split(apiGet(h.s, "/metrics").Body.String(), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[1] == "TYPE" {
			names[f[2]] = true
		} else if len(f) == 2 && !strings.HasPrefix(line, "#") {
			series = append(series, f[0])
		}
	}
	return names, series
}

// The receiver snippet is a configuration Alertmanager takes, and sends
// what the receiver reads: to /alertmanager, resolutions too, with a
// bearer token.
func TestDeployAlertmanagerReceiver(t *testing.T) {
	amtool := testkit.Need(t, "prometheus-alertmanager", "amtool")
	path := filepath.Join(deployDir, "alertmanager", "llmdoctor-receiver.yml")
	if out, err := exec.Command(amtool, "check-config", path).CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(path)
	var cfg struct {
		Receivers []struct {
			Name           string `yaml:"name"`
			WebhookConfigs []struct {
				URL          string `yaml:"url"`
				SendResolved bool   `yaml:"send_resolved"`
				HTTPConfig   struct {
					Authorization struct {
						Type            string `yaml:"type"`
						CredentialsFile string `yaml:"credentials_file"`
					} `yaml:"authorization"`
				} `yaml:"http_config"`
			} `yaml:"webhook_configs"`
		} `yaml:"receivers"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range cfg.Receivers {
		for _, w := range r.WebhookConfigs {
			found = true
			if !strings.HasSuffix(w.URL, "/alertmanager") || !w.SendResolved || w.HTTPConfig.Authorization.Type != "Bearer" ||
				w.HTTPConfig.Authorization.CredentialsFile == "" {
				t.Errorf("webhook config %+v", w)
			}
		}
	}
	if !found {
		t.Fatal("no webhook receiver in the snippet")
	}
}

// The example alerting rules load, name only metrics the server exposes,
// and fire on the series it exposes: a fresh verdict alerts, a stale one
// does not, and staleness has its own alert.
func TestDeployAlertRules(t *testing.T) {
	promtool := testkit.Need(t, "prometheus", "promtool")
	rulesPath, err := filepath.Abs(filepath.Join(deployDir, "prometheus", "llmdoctor-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", rulesPath).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	names, series := exposedMetrics(t)
	b, _ := os.ReadFile(rulesPath)
	checkMetricNames(t, "llmdoctor-alerts.yml", string(b), names)

	// The series of the server's own /metrics, fresh or not.
	input := func(fresh bool) string {
		var s strings.Builder
		for _, x := range series {
			values := "1x60"
			switch {
			case !strings.HasPrefix(x, "llmdoctor_verdict{") && !strings.HasPrefix(x, "llmdoctor_finding{") &&
				!strings.HasPrefix(x, "llmdoctor_last_diagnosis_timestamp_seconds{"):
				continue
			case strings.HasPrefix(x, "llmdoctor_last_diagnosis_timestamp_seconds") && fresh:
				values = "0+60x60" // diagnosed every minute
			case strings.HasPrefix(x, "llmdoctor_last_diagnosis_timestamp_seconds"):
				values = "0x60" // once, at the start
			}
			fmt.Fprintf(&s, "      - series: '%s'\n        values: '%s'\n", x, values)
		}
		return s.String()
	}
	test := fmt.Sprintf(`rule_files: [%q]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
%s    alert_rule_test:
      - eval_time: 20m
        alertname: LLMServingBottleneck
        exp_alerts:
          - exp_labels: {severity: warning, model: llama-3-8b, served_by: vllm, bottleneck: queueing}
            exp_annotations: {summary: "llama-3-8b: llmdoctor finds a queueing bottleneck"}
      - eval_time: 20m
        alertname: LLMServingCriticalFinding
        exp_alerts:
          - exp_labels: {severity: critical, model: llama-3-8b, rule: queue/ttft-dominated, bottleneck: queueing}
            exp_annotations:
              summary: "llama-3-8b: queue/ttft-dominated (queueing)"
              runbook_url: "https://github.com/llmdoctor/llmdoctor/blob/main/docs/rules/queue/ttft-dominated.md"
      - eval_time: 50m
        alertname: LLMDoctorStale
        exp_alerts: []
  - interval: 1m
    input_series:
%s    alert_rule_test:
      - eval_time: 50m
        alertname: LLMServingBottleneck
        exp_alerts: []
      - eval_time: 50m
        alertname: LLMServingCriticalFinding
        exp_alerts: []
      - eval_time: 50m
        alertname: LLMDoctorStale
        exp_alerts:
          - exp_labels: {severity: info, model: llama-3-8b, served_by: vllm}
            exp_annotations: {summary: "llmdoctor has not diagnosed llama-3-8b for 50m 0s"}
`, rulesPath, input(true), input(false))
	testPath := filepath.Join(t.TempDir(), "test.yml")
	if err := os.WriteFile(testPath, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", testPath).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n%s", err, out, test)
	}
	if _, err := os.Stat(filepath.Join("..", "docs", "rules", "queue", "ttft-dominated.md")); err != nil {
		t.Errorf("the runbook link's page: %v", err)
	}
}

// The Grafana panels are panel JSON on metrics the server exposes.
func TestDeployGrafanaPanels(t *testing.T) {
	names, _ := exposedMetrics(t)
	paths, _ := filepath.Glob(filepath.Join(deployDir, "grafana", "*.json"))
	if len(paths) == 0 {
		t.Fatal("no panel under deploy/grafana")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var panel struct {
			Type, Title string
			Targets     []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			}
		}
		if err := json.Unmarshal(b, &panel); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if panel.Type == "" || panel.Title == "" || len(panel.Targets) == 0 {
			t.Errorf("%s is not a panel with queries", p)
		}
		for _, q := range panel.Targets {
			if q.RefID == "" || q.Expr == "" {
				t.Errorf("%s: a query without refId or expr", p)
			}
			checkMetricNames(t, filepath.Base(p), q.Expr, names)
		}
	}
}

// checkMetricNames fails for a llmdoctor_ metric text names that the
// server does not expose.
func checkMetricNames(t *testing.T, file, text string, names map[string]bool) {
	t.Helper()
	var used []string
	for _, m := range regexp.MustCompile(`\bllmdoctor_[a-z_]+`).FindAllString(text, -1) {
		if !names[m] {
			t.Errorf("%s names %s, which llmdoctor serve does not expose", file, m)
		}
		used = append(used, m)
	}
	sort.Strings(used)
	if len(used) == 0 {
		t.Errorf("%s names none of llmdoctor's metrics", file)
	}
}
