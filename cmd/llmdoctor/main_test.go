package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/expogen"
)

// runCLI runs the command in-process and captures stdout and stderr.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	oldOut, oldErr := os.Stdout, os.Stderr
	ro, wo, _ := os.Pipe()
	re, we, _ := os.Pipe()
	os.Stdout, os.Stderr = wo, we
	outc, errc := make(chan string), make(chan string)
	go func() { b, _ := io.ReadAll(ro); outc <- string(b) }()
	go func() { b, _ := io.ReadAll(re); errc <- string(b) }()
	code = run(args)
	wo.Close()
	we.Close()
	os.Stdout, os.Stderr = oldOut, oldErr
	return code, <-outc, <-errc
}

func example(name string) []string {
	dir := filepath.Join("..", "..", "examples", name)
	return []string{"--snapshot", filepath.Join(dir, "start.prom"), "--snapshot", filepath.Join(dir, "end.prom"),
		"--snapshot-interval", "15m"}
}

type diagnosisView struct {
	Schema  string `json:"schema"`
	Targets []struct {
		Primary struct {
			Bottleneck, Rule, Status string
			Unchecked                []string
		} `json:"primary"`
		Findings []struct {
			Rule, Severity string
			ExplainedBy    string `json:"explained_by"`
			Evidence       map[string]float64
		} `json:"findings"`
		Gaps []struct {
			Rule    string
			Missing []string
		} `json:"gaps"`
	} `json:"targets"`
}

func diagnoseJSON(t *testing.T, args ...string) diagnosisView {
	t.Helper()
	return diagnoseInto[diagnosisView](t, args...)
}

// diagnoseInto runs diagnose --format json, checks it ran and gave one target
// under the v1 schema, and decodes the diagnosis into the test's own view.
func diagnoseInto[T any](t *testing.T, args ...string) T {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"diagnose", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var head struct {
		Schema  string            `json:"schema"`
		Targets []json.RawMessage `json:"targets"`
	}
	var d T
	if err := json.Unmarshal([]byte(out), &head); err != nil || head.Schema != "llmdoctor.diagnosis/v1" || len(head.Targets) != 1 {
		t.Fatalf("schema %q, %d targets, %v:\n%s", head.Schema, len(head.Targets), err, out)
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	return d
}

// The primary bottleneck of each example window, from V1 exposition.
func TestExamplePrimaries(t *testing.T) {
	cases := map[string]string{
		"queueing":          "queueing",
		"prefill":           "prefill",
		"kv-capacity":       "kv-capacity",
		"decode":            "decode",
		"healthy":           "none",
		"v0.10-kv-capacity": "kv-capacity",
	}
	for ex, want := range cases {
		t.Run(ex, func(t *testing.T) {
			d := diagnoseJSON(t, example(ex)...)
			tg := d.Targets[0]
			if tg.Primary.Bottleneck != want {
				t.Fatalf("primary %q (%s), want %q", tg.Primary.Bottleneck, tg.Primary.Rule, want)
			}
			for _, f := range tg.Findings {
				if want == "none" && f.Severity == "critical" {
					t.Errorf("healthy window has critical finding %s", f.Rule)
				}
				if len(f.Evidence) == 0 {
					t.Errorf("finding %s cites no numbers", f.Rule)
				}
			}
		})
	}
}

// Queue wait is high in the KV window too, but the KV finding is the cause.
func TestKVExplainsQueueing(t *testing.T) {
	d := diagnoseJSON(t, example("kv-capacity")...)
	found := false
	for _, f := range d.Targets[0].Findings {
		if f.Rule == "queue/ttft-dominated" {
			found = true
			if !strings.HasPrefix(f.ExplainedBy, "kv/") {
				t.Fatalf("queueing finding explained by %q, want a kv rule", f.ExplainedBy)
			}
		}
	}
	if !found {
		t.Fatal("the queueing symptom should still be listed")
	}
}

// A V0 server has no queue/prefill histograms: gaps name them and the verdict
// says what could not be checked instead of calling the server healthy.
func TestV0IsInconclusiveNotHealthy(t *testing.T) {
	d := diagnoseJSON(t, example("v0-healthy")...)
	tg := d.Targets[0]
	if tg.Primary.Status != "inconclusive" || tg.Primary.Bottleneck == "none" {
		t.Fatalf("V0 verdict %+v", tg.Primary)
	}
	var missing []string
	for _, g := range tg.Gaps {
		missing = append(missing, g.Missing...)
	}
	all := strings.Join(missing, " ")
	for _, want := range []string{"stage.queue", "stage.prefill"} {
		if !strings.Contains(all, want) {
			t.Errorf("gaps do not name %s: %v", want, all)
		}
	}
}

func TestTextReportFits80ColumnsAndCitesNumbers(t *testing.T) {
	code, out, _ := runCLI(t, append([]string{"diagnose", "--color", "never"}, example("queueing")...)...)
	if code != 0 {
		t.Fatal("exit", code)
	}
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	for _, want := range []string{"VERDICT queueing", "of mean TTFT", "requests were waiting", "Next steps, cheapest first", "[config]"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour escape codes with --color never")
	}
}

func TestOneSnapshotSaysCumulative(t *testing.T) {
	code, out, _ := runCLI(t, "diagnose", "--color", "never", "--snapshot", filepath.Join("..", "..", "examples", "queueing", "end.prom"))
	if code != 0 || !strings.Contains(out, "since server start") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "page.prom")
	os.WriteFile(html, []byte("<html><body>Bad Gateway</body></html>"), 0o644)
	cut := filepath.Join(dir, "cut.prom")
	data, _ := os.ReadFile(filepath.Join("..", "..", "examples", "queueing", "end.prom"))
	os.WriteFile(cut, data[:len(data)/2], 0o644)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"fail-on matched", append([]string{"diagnose", "--fail-on", "critical", "--format", "json"}, example("queueing")...), 1, "--fail-on"},
		{"fail-on not matched", append([]string{"diagnose", "--fail-on", "critical", "--format", "json"}, example("healthy")...), 0, ""},
		{"no source", []string{"diagnose"}, 2, "nothing to read"},
		{"bad flag", []string{"diagnose", "--nope"}, 2, "unknown flag"},
		{"missing file", []string{"diagnose", "--snapshot", filepath.Join(dir, "none.prom")}, 2, "cannot read snapshot"},
		{"html file", []string{"diagnose", "--snapshot", html}, 2, "HTML page"},
		{"truncated file", []string{"diagnose", "--snapshot", cut}, 2, "malformed exposition"},
		{"unreachable server", []string{"diagnose", "--vllm", "127.0.0.1:1", "--duration", "0s"}, 2, "connection refused"},
		{"bad format", []string{"diagnose", "--format", "xml", "--snapshot", html}, 2, "--format"},
		{"bad fail-on", []string{"diagnose", "--fail-on", "fatal", "--snapshot", html}, 2, "unknown severity"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, c.code, errOut)
			}
			if c.want != "" && (!strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0) {
				t.Fatalf("stderr %q, want one line containing %q", errOut, c.want)
			}
		})
	}
}

func TestConfigOverridesAndSuppressions(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "llmdoctor.yaml")
	os.WriteFile(cfg, []byte(`rules:
  queue/batch-full: {enabled: false}
  tail/under-load: {severity: info}
suppress:
  - rule: queue/ttft-dominated
    reason: known, capacity request filed
    until: 2999-01-01
`), 0o644)
	d := diagnoseJSON(t, append([]string{"--config", cfg}, example("queueing")...)...)
	for _, f := range d.Targets[0].Findings {
		switch f.Rule {
		case "queue/batch-full", "queue/ttft-dominated":
			t.Errorf("%s should be disabled or suppressed", f.Rule)
		case "tail/under-load":
			if f.Severity != "info" {
				t.Errorf("severity override ignored: %s", f.Severity)
			}
		}
	}
	os.WriteFile(cfg, []byte("rules:\n  queue/nope: {enabled: false}\n"), 0o644)
	code, _, errOut := runCLI(t, append([]string{"diagnose", "--config", cfg}, example("queueing")...)...)
	if code != 2 || !strings.Contains(errOut, "no such rule") {
		t.Fatalf("unknown rule in config: exit %d %q", code, errOut)
	}
	os.WriteFile(cfg, []byte("suppress:\n  - rule: queue/batch-full\n"), 0o644)
	code, _, errOut = runCLI(t, append([]string{"diagnose", "--config", cfg}, example("queueing")...)...)
	if code != 2 || !strings.Contains(errOut, "needs a reason") {
		t.Fatalf("suppression without reason: exit %d %q", code, errOut)
	}
}

func TestSeveralOutputsInOneRun(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.json")
	code, out, _ := runCLI(t, append([]string{"diagnose", "--color", "never", "--output", "json=" + p}, example("prefill")...)...)
	data, err := os.ReadFile(p)
	if code != 0 || err != nil || !bytes.Contains(data, []byte(`"bottleneck": "prefill"`)) || !strings.Contains(out, "VERDICT prefill") {
		t.Fatalf("exit %d err %v", code, err)
	}
}

func TestUserRulesLintAndTest(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "team", "slow-ttft.tests"), 0o755)
	os.WriteFile(filepath.Join(dir, "team", "slow-ttft.yaml"), []byte(`id: team/slow-ttft
title: TTFT p99 above our SLO
layer: stage
bottleneck: queueing
severity: warning
params: {slo: 2}
thresholds: {slo: "our contract with the chat team"}
when: stage.ttft.p99 > params.slo
says: "p99 TTFT {{dur .stage.ttft.p99}} is above {{dur .params.slo}}"
`), 0o644)
	os.WriteFile(filepath.Join(dir, "team", "slow-ttft.tests", "fired.yaml"), []byte("evidence:\n  stage.ttft: {count: 100, p99: 3}\nmessage: [\"3.00s\"]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "team", "slow-ttft.tests", "quiet.yaml"), []byte("evidence:\n  stage.ttft: {count: 100, p99: 1}\n"), 0o644)
	if code, out, errOut := runCLI(t, "rules", "lint", dir); code != 0 {
		t.Fatalf("lint: %d %s %s", code, out, errOut)
	}
	code, out, _ := runCLI(t, "rules", "test", dir)
	if code != 0 || !strings.Contains(out, "2 passed, 0 failed") {
		t.Fatalf("rules test: %d %s", code, out)
	}
	os.WriteFile(filepath.Join(dir, "team", "broken.yaml"), []byte("id: team/broken\ntitle: t\nlayer: stage\nbottleneck: queueing\nseverity: warning\nwhen: stage.nope > 1\nsays: x\n"), 0o644)
	code, _, errOut := runCLI(t, "rules", "lint", dir)
	if code != 1 || !strings.Contains(errOut, "broken.yaml:6: rule team/broken") {
		t.Fatalf("lint of a broken rule: %d %q", code, errOut)
	}
}

// The example snapshots are what the generator writes.
func TestExamplesAreFresh(t *testing.T) {
	for rel, want := range expogen.Files() {
		got, err := os.ReadFile(filepath.Join("..", "..", "examples", rel))
		if err != nil || string(got) != want {
			t.Errorf("examples/%s is stale: run go run ./internal/expogen/write examples", rel)
		}
	}
}

// A model size from the config gives the decode floor for a model the
// presets do not know.
func TestConfigModelWeightBytes(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "llmdoctor.yaml")
	os.WriteFile(cfg, []byte("models:\n  Qwen/Qwen3-30B-A3B: {weight_bytes: 61e9}\n"), 0o644)
	code, out, errOut := runCLI(t, "demo", "--scenario", "moe-bandwidth", "--format", "json", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, `"rule": "gpu/decode-floor"`) && strings.Contains(out, `"missing": [`+"\n"+`            "stage.decode_floor"`) {
		t.Fatal("decode floor still missing with a configured model size")
	}
	if !strings.Contains(out, `"decode_floor"`) || !strings.Contains(out, `"weight_bytes": 61000000000`) {
		t.Fatalf("no decode floor in the evidence:\n%s", out[:min(len(out), 2000)])
	}
}

// From periodic stats lines alone: a full KV cache with waiting requests is
// kv-capacity; a long queue with room in the cache and prompts dwarfing
// generation is queueing or prefill, never KV. V0 and V1 forms, and a log of
// three lines, whose thinness the report states.
func TestLogVerdicts(t *testing.T) {
	dir := filepath.Join("..", "..", "collectors", "logs", "testdata")
	for _, c := range []struct {
		file string
		want []string
	}{
		{"v1-kv-full.log", []string{"kv-capacity"}},
		{"v0-kv-full.log", []string{"kv-capacity"}},
		{"v1-kv-full-short.log", []string{"kv-capacity"}},
		{"v1-prefill-queue.log", []string{"queueing", "prefill"}},
		{"v0-prefill-queue.log", []string{"queueing", "prefill"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			code, out, errOut := runCLI(t, "diagnose", "--format", "json", "--log", filepath.Join(dir, c.file))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var d struct {
				Notes   []string
				Targets []struct {
					Primary struct{ Bottleneck, Rule, Status string }
				}
			}
			json.Unmarshal([]byte(out), &d)
			got := d.Targets[0].Primary.Bottleneck
			if !contains(c.want, got) {
				t.Fatalf("verdict %s (%s), want one of %v", got, d.Targets[0].Primary.Rule, c.want)
			}
			if strings.Contains(c.file, "short") && !strings.Contains(strings.Join(d.Notes, " "), "only 3 stats lines") {
				t.Fatalf("a three-line log must say its evidence is thin: %v", d.Notes)
			}
		})
	}
}
