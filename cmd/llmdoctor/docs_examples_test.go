package main

import (
	"encoding/json"
	"fmt"
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/probe/validation"
	"github.com/llmdoctor/llmdoctor/sim"
	"github.com/llmdoctor/llmdoctor/simrun/accuracy"
)

// Every example in README.md and docs/ runs: the usage lines, the commands
// and flag values in the prose, the request-file example, the accuracy
// report's reproduction and the message helpers' sample outputs. (The rule,
// fixtures and config of docs/writing-rules.md, docs/verdict.md's worked
// examples and the README's sample report have tests of their own in
// docs_test.go; generated pages are checked for staleness where generated.)

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runs checks a command exits with one of codes, and returns its stdout.
func runs(t *testing.T, codes []int, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	for _, c := range codes {
		if code == c {
			return out
		}
	}
	t.Fatalf("llmdoctor %s: exit %d, want %v: %s", strings.Join(args, " "), code, codes, errOut)
	return ""
}

var ran = []int{0}

// liveSim serves a scenario's simulator in real time (speed virtual
// seconds per real second): vLLM at URL/metrics, DCGM at dcgm/metrics, so
// that both are given as host:port, as the README writes them.
func liveSim(t *testing.T, scenario string, speed float64) (vllmURL, dcgmHost string) {
	t.Helper()
	sc, err := sim.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	h := simHandler(t, sc, 0, speed)
	v := httptest.NewServer(h)
	d := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = "/dcgm" + r.URL.Path
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(v.Close)
	t.Cleanup(d.Close)
	return v.URL, strings.TrimPrefix(d.URL, "http://")
}

// readmeUsage maps each line of the README's Usage block to runs of it with
// its placeholders filled in.
var readmeUsage = map[string]func(t *testing.T){
	`llmdoctor demo [--scenario NAME] [--list] [--engine sglang]`: func(t *testing.T) {
		if out := runs(t, ran, "demo", "--scenario", "queue-bound", "--color", "never"); !strings.Contains(out, "VERDICT queueing") {
			t.Errorf("demo --scenario queue-bound:\n%s", out)
		}
		if out := runs(t, ran, "demo", "--scenario", "queue-bound", "--engine", "sglang", "--color", "never", "--details"); !strings.Contains(out, "VERDICT queueing") ||
			!strings.Contains(out, "sglang:num_queue_reqs") {
			t.Errorf("demo --engine sglang:\n%s", out)
		}
		if out := runs(t, ran, "demo", "--list"); !strings.Contains(out, "queue-bound") {
			t.Errorf("demo --list:\n%s", out)
		}
	},
	`llmdoctor diagnose --prom http://prometheus:9090 [--window 15m] [--end T | --at T] [--selector 'namespace="prod"'] [--group-by model_name] [--print-queries]`: func(t *testing.T) {
		promtest.Need(t)
		fx := backfilledProm(t)
		end := strconv.FormatInt(fx.ends["queue-bound"].Unix(), 10)
		// The backfill has no namespace label; engine is one it has. The
		// tenant header of the prose goes along (Prometheus ignores it).
		out := runs(t, ran, "diagnose", "--format", "json", "--prom", fx.url, "--window", "15m", "--end", end,
			"--selector", `engine="0"`, "--group-by", "model_name", "--prom-header", "X-Scope-OrgID: team")
		if !strings.Contains(out, `"bottleneck": "queueing"`) {
			t.Errorf("--prom on queue-bound:\n%.600s", out)
		}
		at := strconv.FormatInt(fx.ends["queue-bound"].Add(-7*time.Minute).Unix(), 10)
		code, out, errOut := runCLI(t, "diagnose", "--format", "json", "--prom", fx.url, "--at", at, "--print-queries")
		if code != 0 || !strings.Contains(out, `"bottleneck": "queueing"`) || !strings.HasPrefix(errOut, "query 1 · ") {
			t.Errorf("--at --print-queries: exit %d\n%.600s\n%.600s", code, out, errOut)
		}
	},
	`llmdoctor diagnose --target http://127.0.0.1:8000 [--target …] [--dcgm host:9400] [--duration 60s] [--interval 5s] [--engine auto]`: func(t *testing.T) {
		a, gpus := liveSim(t, "healthy", 60)
		b, _ := liveSim(t, "healthy", 60)
		var d struct {
			Targets []struct {
				Evidence map[string]any `json:"evidence"`
			} `json:"targets"`
		}
		// --vllm is --target's older name: both add replicas.
		out := runs(t, ran, "diagnose", "--format", "json", "--target", a, "--vllm", b, "--dcgm", gpus,
			"--duration", "1s", "--interval", "250ms", "--engine", "auto")
		if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Targets) != 1 {
			t.Fatalf("%v:\n%.600s", err, out)
		}
		if n := evidence.TreeNumber(d.Targets[0].Evidence, "service.instances"); n != 2 {
			t.Errorf("two replicas gave %v instances", n)
		}
	},
	`llmdoctor diagnose --snapshot start.prom --snapshot end.prom [--snapshot-interval 15m]`: func(t *testing.T) {
		if p := diagnoseJSON(t, example("queueing")...).Targets[0].Primary; p.Bottleneck != "queueing" {
			t.Errorf("verdict %+v", p)
		}
	},
	`llmdoctor diagnose --log vllm.log                (a metrics source of its own: not beside --prom, --target or --snapshot)`: func(t *testing.T) {
		logFile := filepath.Join("..", "..", "collectors", "logs", "testdata", "v1-kv-full.log")
		diagnoseJSON(t, "--log", logFile)
		args := append([]string{"diagnose", "--log", logFile}, example("queueing")...)
		if code, _, stderr := runCLI(t, args...); code != 2 || !strings.Contains(stderr, "one kind of metrics source") {
			t.Errorf("--log beside snapshots: exit %d, %q; want 2 and one kind of metrics source", code, stderr)
		}
	},
	`llmdoctor diagnose --bench run.json | --requests requests.jsonl   (alone or beside a metrics source)`: func(t *testing.T) {
		for _, src := range [][]string{{"--bench", benchFile("bench-detailed.json")}, {"--requests", benchFile("requests.jsonl")}} {
			diagnoseJSON(t, src...)
		}
		beside := diagnoseJSON(t, append(example("queueing"), "--bench", benchFile("bench-detailed.json"))...)
		if beside.Targets[0].Primary.Bottleneck == "" {
			t.Errorf("bench beside snapshots: %+v", beside.Targets[0].Primary)
		}
	},
	`llmdoctor checklist …same sources… [--slo ttft_p99=2s,itl_p99=100ms,e2e_p99=30s] [--strict] [--format junit]`: func(t *testing.T) {
		out := runs(t, []int{0, 1}, "checklist", "--bench", benchFile("bench-detailed.json"),
			"--slo", "ttft_p99=2s,itl_p99=100ms,e2e_p99=30s", "--strict", "--format", "junit")
		if !strings.HasPrefix(out, "<?xml") || !strings.Contains(out, "slo/ttft-p99") {
			t.Errorf("checklist junit:\n%.400s", out)
		}
	},
	`llmdoctor sim --scenario NAME --listen 127.0.0.1:8000 [--speed 10] [--engine sglang]`: func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		done := make(chan int, 1)
		go func() {
			code, _, _ := runCLI(t, "sim", "--scenario", "queue-bound", "--listen", addr, "--speed", "10", "--engine", "sglang")
			done <- code
		}()
		served := false
		for deadline := time.Now().Add(10 * time.Second); !served && time.Now().Before(deadline); {
			select {
			case code := <-done:
				t.Fatalf("sim exited %d before serving", code)
			default:
			}
			for _, path := range []string{"/metrics", "/dcgm/metrics"} {
				resp, err := http.Get("http://" + addr + path)
				if err != nil {
					served = false
					break
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close() // read only
				served = resp.StatusCode == 200 && len(body) > 0 && (path != "/metrics" || strings.Contains(string(body), "sglang:num_running_reqs"))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !served {
			t.Fatal("sim did not serve /metrics and /dcgm/metrics")
		}
		// Ctrl-C stops it: the server holds the interrupt while it serves.
		p, _ := os.FindProcess(os.Getpid())
		if err := p.Signal(os.Interrupt); err != nil {
			t.Skip("cannot interrupt on this platform:", err)
		}
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("sim exited %d on Ctrl-C", code)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("sim did not stop on Ctrl-C")
		}
	},
	`llmdoctor rules list | show ID | lint DIR | test [DIR]`: func(t *testing.T) {
		runs(t, ran, "rules", "list")
		runs(t, ran, "rules", "show", "queue/ttft-dominated")
		dir := writingRulesDir(t)
		if out := runs(t, ran, "rules", "lint", dir); out != "1 rule OK\n" {
			t.Errorf("rules lint: %q", out)
		}
		runs(t, ran, "rules", "test")
		runs(t, ran, "rules", "test", dir)
	},
	`llmdoctor explain FIELD                          (unit, meaning, how to obtain it, which rules read it)`: func(t *testing.T) {
		if out := runs(t, ran, "explain", "stage.queue.mean"); !strings.Contains(out, "READ BY  3 rules: lora/slots-full, queue/ttft-dominated, router/uneven") {
			t.Errorf("explain stage.queue.mean:\n%s", out)
		}
	},
	`llmdoctor config init | check [PATH]             (a commented llmdoctor.yaml at the defaults; check one as a run would)`: func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "llmdoctor.yaml")
		runs(t, ran, "config", "init", path)
		if out := runs(t, ran, "config", "check", path); !strings.Contains(out, "OK (0 rule overrides, 0 suppressions)") {
			t.Errorf("config check of config init's file:\n%s", out)
		}
	},
	`llmdoctor compare before.json after.json [--fail-on-regression ttft_p99=10%] [--format markdown]`: func(t *testing.T) {
		dir := t.TempDir()
		var saved []string
		for _, name := range []string{"queueing", "queueing"} {
			p := filepath.Join(dir, fmt.Sprintf("%d.json", len(saved)))
			out := runs(t, ran, append([]string{"diagnose", "--format", "json"}, example(name)...)...)
			if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			saved = append(saved, p)
		}
		if out := runs(t, ran, "compare", saved[0], saved[1], "--fail-on-regression", "ttft_p99=10%", "--format", "markdown"); !strings.Contains(out, "**= no change**") {
			t.Errorf("compare of one diagnosis with itself:\n%s", out)
		}
	},
	"llmdoctor whatif …same sources… | --scenario NAME [--assume max_num_seqs=32] [--format json]": func(t *testing.T) {
		out := runs(t, ran, "whatif", "--scenario", "queue-bound", "--assume", "max_num_seqs=32", "--color", "never")
		if !strings.Contains(out, "✓ REPRODUCED") || !strings.Contains(out, "max_num_seqs 32 → 128") || !strings.Contains(out, "assumed (--assume)") {
			t.Errorf("whatif --scenario queue-bound:\n%s", out)
		}
		out = runs(t, ran, append([]string{"whatif", "--format", "json"}, example("queueing")...)...)
		var res struct {
			Schema  string `json:"schema"`
			Targets []struct {
				Why string `json:"why"`
			} `json:"targets"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Schema != "llmdoctor.whatif/v1" || len(res.Targets) != 1 {
			t.Errorf("whatif --format json on the example snapshots: %v\n%.600s", err, out)
		}
		// demo --whatif replays the same calibration as whatif --scenario.
		if testkit.Heavy() {
			out = runs(t, ran, "demo", "--scenario", "queue-bound", "--whatif", "--color", "never")
			if !strings.Contains(out, "whatif max_num_seqs 32 → 128") {
				t.Errorf("demo --whatif:\n%s", out)
			}
		}
	},
	"llmdoctor probe --target http://127.0.0.1:8000 [--slo ttft_p99=1s,itl_p99=80ms] [--rates 2,4,8] [--launch 80%] [--dry-run]": func(t *testing.T) {
		url, sent := serveSimAPI(t, "queue-bound", 10)
		args := []string{"probe", "--target", url, "--slo", "ttft_p99=1s,itl_p99=80ms", "--rates", "2,4,8", "--launch", "80%", "--dry-run"}
		if out := runs(t, ran, args...); !strings.Contains(strings.Join(strings.Fields(out), " "), "open-loop rate per second 2 (60), 4 (120), 8 (240)") || sent.Load() != 0 {
			t.Errorf("probe --dry-run sent %d:\n%s", sent.Load(), out)
		}
		if testkit.Heavy() {
			// The simulator runs ten times real time: rates ten times the
			// line's keep the run short.
			out := runs(t, ran, "probe", "--target", url, "--slo", "ttft_p99=1s,itl_p99=80ms", "--rates", "20,40,80",
				"--max-rate", "200", "--step-time", "3s", "--launch", "80%", "--color", "never")
			if !strings.Contains(out, "CAPACITY") || !strings.Contains(out, "Pre-launch run") {
				t.Errorf("probe --rates --launch:\n%s", out)
			}
		}
	},
	"llmdoctor checklist --probe --target http://127.0.0.1:8000 [--slo ttft_p99=1s] [--launch 80%] [--max-requests 1000]": func(t *testing.T) {
		url, sent := serveSimAPI(t, "queue-bound", 10)
		if out := runs(t, ran, "checklist", "--probe", "--target", url, "--slo", "ttft_p99=1s", "--launch", "80%", "--max-requests", "1000", "--dry-run"); !strings.Contains(out, "the pre-launch run") || sent.Load() != 0 {
			t.Errorf("checklist --probe --dry-run sent %d:\n%s", sent.Load(), out)
		}
		// The whole run: TestChecklistProbeChecksThePreLaunchRun.
	},
	"llmdoctor demo --probe [--slo ttft_p99=1s]       (the probe end to end against the built-in simulator, under a minute)": func(t *testing.T) {
		if !testkit.Heavy() {
			t.Skip("demo --probe runs in real time (under a minute): " + testkit.HeavyEnv + "=1")
		}
		out := runs(t, ran, "demo", "--probe", "--slo", "ttft_p99=1s", "--color", "never")
		if !strings.Contains(out, "✓ CAPACITY concurrency 32") || !strings.Contains(out, "(the first load past the SLO): queueing") {
			t.Errorf("demo --probe:\n%s", out)
		}
	},
	`llmdoctor docs man DIR                           (a man page per command, from its help text)`: func(t *testing.T) {
		dir := t.TempDir()
		runs(t, ran, "docs", "man", dir)
		if b, err := os.ReadFile(filepath.Join(dir, "llmdoctor-diagnose.1")); err != nil || !strings.Contains(string(b), "Exit status:") {
			t.Errorf("docs man: %v\n%.300s", err, b)
		}
	},
}

// writingRulesDir lays out the rule and fixtures of docs/writing-rules.md:
// the rule with the next steps of its Next steps section, and every case
// (a block whose first line names slow-ttft.tests/).
func writingRulesDir(t *testing.T) string {
	t.Helper()
	blocks := yamlBlocks(t, "writing-rules.md")
	dir := t.TempDir()
	tests := filepath.Join(dir, "team", "slow-ttft.tests")
	if err := os.MkdirAll(tests, 0o755); err != nil {
		t.Fatal(err)
	}
	rule := blocks[0]
	for _, b := range blocks[1:] {
		if strings.HasPrefix(b, "next:\n") {
			rule = regexp.MustCompile(`(?ms)^next:.*?\n(why:)`).ReplaceAllLiteralString(rule, b+"why:")
		}
		if name, ok := strings.CutPrefix(strings.SplitN(b, "\n", 2)[0], "# slow-ttft.tests/"); ok {
			if err := os.WriteFile(filepath.Join(tests, strings.SplitN(name, ":", 2)[0]), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rule == blocks[0] {
		t.Fatal("docs/writing-rules.md has no next: block to give the rule")
	}
	if err := os.WriteFile(filepath.Join(dir, "team", "slow-ttft.yaml"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The README's Usage block: every line has runs above, every flag it names
// exists on its command.
func TestReadmeUsageRuns(t *testing.T) {
	m := regexp.MustCompile("(?s)## Usage\n\n```\n(.*?)```").FindStringSubmatch(readDoc(t, "README.md"))
	if m == nil {
		t.Fatal("README has no Usage block")
	}
	flag := regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
		line = strings.TrimSpace(line)
		t.Run(line, func(t *testing.T) {
			// In parallel, but for sim's: its Ctrl-C goes to the whole
			// process, so it runs alone, before the others start.
			if !strings.HasPrefix(line, "llmdoctor sim ") {
				t.Parallel()
			}
			run, ok := readmeUsage[line]
			if !ok {
				t.Fatalf("README usage line %q has no run in readmeUsage (docs_examples_test.go): add one", line)
			}
			words := strings.Fields(line)
			cmd, _, err := newRoot().Find(words[1:2])
			if err != nil || cmd.Name() != words[1] {
				t.Fatalf("no command %q: %v", words[1], err)
			}
			for _, f := range flag.FindAllString(line, -1) {
				if cmd.Flag(strings.TrimPrefix(f, "--")) == nil {
					t.Errorf("llmdoctor %s has no flag %s", words[1], f)
				}
			}
			run(t)
		})
	}
}

// Flags of other programs the docs name (vLLM's server and benchmark).
var foreignFlags = func() map[string]bool {
	m := map[string]bool{"--save-result": true, "--save-detailed": true, "--append-result": true}
	// Serving engines' own flags, as their catalogues name them.
	flag := regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	for _, e := range engine.Engines() {
		var texts []string
		for _, f := range e.Knobs {
			texts = append(texts, f)
		}
		for _, h := range e.How {
			texts = append(texts, h)
		}
		for _, c := range e.Catalogue {
			texts = append(texts, c.Obtain, c.Meaning)
		}
		for _, t := range texts {
			for _, x := range flag.FindAllString(t, -1) {
				m[x] = true
			}
		}
	}
	// The peer simulator's, as docs/probe.md's validation configures it.
	for _, c := range validation.PeerCases {
		for _, x := range flag.FindAllString(c.Flags, -1) {
			m[x] = true
		}
	}
	return m
}()

// Every flag the README and the guides in docs/ name exists on a command.
func TestDocsNameRealFlags(t *testing.T) {
	known := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add := func(f *pflag.Flag) { known["--"+f.Name] = true }
		c.InitDefaultHelpFlag() // cobra adds these two when it runs
		c.InitDefaultVersionFlag()
		c.Flags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, x := range c.Commands() {
			walk(x)
		}
	}
	walk(newRoot())
	docs, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	docs = append(docs, filepath.Join("..", "..", "README.md"))
	flag := regexp.MustCompile("(?:^|[\\s`(\\[])(--[a-z][a-z0-9-]*)")
	for _, p := range docs {
		if filepath.Base(p) == "robustness.md" {
			continue // generated from tests that run every flag it names
		}
		b, _ := os.ReadFile(p)
		for _, m := range flag.FindAllStringSubmatch(string(b), -1) {
			if f := m[1]; !known[f] && !foreignFlags[f] {
				t.Errorf("%s names %s, which no llmdoctor command has", filepath.Base(p), f)
			}
		}
	}
}

// The prose's examples: the quick start, the flag values listed as a|b|c,
// saved expositions from curl, the JSON keys the README promises, and the
// counts it gives.
func TestReadmeProseExamplesRun(t *testing.T) {
	readme := readDoc(t, "README.md")
	t.Run("quick start", func(t *testing.T) {
		if !strings.Contains(readme, "go run ./cmd/llmdoctor demo\n") {
			t.Fatal("the quick start no longer runs the demo: update this test")
		}
		if out := runs(t, ran, "demo", "--color", "never"); !strings.Contains(out, "VERDICT") {
			t.Errorf("demo:\n%.400s", out)
		}
	})
	t.Run("flag values", func(t *testing.T) {
		alts := regexp.MustCompile("`(--[a-z-]+) ([a-z]+(?:\\|[a-z]+)+)`").FindAllStringSubmatch(readme, -1)
		if len(alts) < 3 {
			t.Fatalf("found %d flag value lists", len(alts))
		}
		for _, a := range alts {
			for _, v := range strings.Split(a[2], "|") {
				// --fail-on matches on the queueing window: exit 1 is the point.
				runs(t, []int{0, 1}, append([]string{"diagnose", a[1], v}, example("queueing")...)...)
			}
		}
		p := filepath.Join(t.TempDir(), "path")
		runs(t, ran, append([]string{"diagnose", "--output", "json=" + p}, example("queueing")...)...)
		if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), `"schema": "llmdoctor.diagnosis/v1"`) {
			t.Errorf("--output json=path wrote %v %.200s", err, b)
		}
	})
	t.Run("curl snapshots", func(t *testing.T) {
		if !strings.Contains(readme, "curl -s host:8000/metrics > t0.prom") {
			t.Fatal("the curl example changed: update this test")
		}
		sc, err := sim.Load("queue-bound")
		if err != nil {
			t.Fatal(err)
		}
		u := serveStepped(t, sc) // every fetch moves the clock one step
		dir := t.TempDir()
		var args []string
		for i := 0; i < 2; i++ {
			resp, err := http.Get(u + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close() // read only
			p := filepath.Join(dir, "t"+strconv.Itoa(i)+".prom")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--snapshot", p)
		}
		diagnoseJSON(t, append(args, "--snapshot-interval", "15s")...)
	})
	t.Run("JSON keys", func(t *testing.T) {
		para := regexp.MustCompile("(?s)`--format json` is the contract.*?\n\n").FindString(readme)
		keys := regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(para, -1)
		if len(keys) < 10 {
			t.Fatalf("found %d keys in the JSON paragraph", len(keys))
		}
		seen := map[string]bool{}
		var collect func(v any)
		collect = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, y := range x {
					seen[k] = true
					collect(y)
				}
			case []any:
				for _, y := range x {
					collect(y)
				}
			}
		}
		outputs := []string{}
		dirs, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*", "end.prom"))
		for _, d := range dirs {
			d = filepath.Dir(d)
			outputs = append(outputs, runs(t, ran, append([]string{"diagnose", "--format", "json"}, example(filepath.Base(d))...)...))
		}
		// Members are per engine or per replica: two replicas have them.
		sc, _ := sim.Load("healthy")
		outputs = append(outputs, runs(t, ran, "diagnose", "--format", "json", "--vllm", serveStepped(t, sc), "--vllm", serveStepped(t, sc),
			"--scrapes", "4", "--interval", "1ms"))
		// A configuration file is named; the checklist has its own counts.
		cfgFile := filepath.Join(t.TempDir(), "llmdoctor.yaml")
		if err := os.WriteFile(cfgFile, []byte("min_share: 0.2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, runs(t, ran, append([]string{"diagnose", "--format", "json", "--config", cfgFile}, example("queueing")...)...),
			runs(t, []int{0, 1}, append([]string{"checklist", "--format", "json"}, example("queueing")...)...))
		for _, o := range outputs {
			var v any
			if err := json.Unmarshal([]byte(o), &v); err != nil {
				t.Fatal(err)
			}
			collect(v)
		}
		for _, k := range keys {
			if !seen[k[1]] {
				t.Errorf("the README names JSON key %q; no example's diagnosis has it", k[1])
			}
		}
	})
	t.Run("counts", func(t *testing.T) {
		words := map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
			"eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14}
		number := func(s string) int {
			s = strings.ToLower(s)
			if n, ok := words[s]; ok {
				return n
			}
			tens := map[string]int{"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}
			a, b, _ := strings.Cut(s, "-")
			return tens[a] + words[b]
		}
		m := regexp.MustCompile(`(\S+) built-in rules and (\S+) checklist items`).FindStringSubmatch(readme)
		if m == nil {
			t.Fatal("the README no longer counts its rules: update this test")
		}
		set, _, err := loadRules("-", nil)
		if err != nil {
			t.Fatal(err)
		}
		items, err := checklistOnly(set)
		if err != nil {
			t.Fatal(err)
		}
		if number(m[1]) != len(set.Rules) || number(m[2]) != len(items) {
			t.Errorf("the README says %s rules and %s checklist items; there are %d and %d", m[1], m[2], len(set.Rules), len(items))
		}
		s := regexp.MustCompile(`runs one of (\S+) simulator scenarios`).FindStringSubmatch(readme)
		all, err := sim.Scenarios()
		if s == nil || err != nil || number(s[1]) != len(all) {
			t.Errorf("the README's scenario count %v; there are %d (%v)", s, len(all), err)
		}
	})
}

// The per-request example of docs/requests.md reads as JSONL, and as CSV
// with the same names for columns.
func TestRequestsDocExampleReads(t *testing.T) {
	doc := readDoc(t, filepath.Join("docs", "requests.md"))
	m := regexp.MustCompile("(?s)```json\n(.*?)\n```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/requests.md has no JSON example")
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(m[1]), &rec); err != nil {
		t.Fatalf("the example is not JSON: %v", err)
	}
	dir := t.TempDir()
	// Enough copies for the exact percentiles (min_samples) to be judged.
	jsonl := filepath.Join(dir, "requests.jsonl")
	if err := os.WriteFile(jsonl, []byte(strings.Repeat(m[1]+"\n", 25)), 0o644); err != nil {
		t.Fatal(err)
	}
	var cols, vals []string
	for k, v := range rec {
		cols = append(cols, k)
		b, _ := json.Marshal(v)
		vals = append(vals, strings.Trim(string(b), `"`))
	}
	csv := filepath.Join(dir, "requests.csv")
	if err := os.WriteFile(csv, []byte(strings.Join(cols, ",")+"\n"+strings.Repeat(strings.Join(vals, ",")+"\n", 25)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{jsonl, csv} {
		code, out, errOut := runCLI(t, "diagnose", "--format", "json", "--requests", p)
		var d struct {
			Sources []struct{ Error string } `json:"sources"`
			Targets []struct {
				Evidence map[string]any `json:"evidence"`
			} `json:"targets"`
		}
		if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || len(d.Targets) != 1 {
			t.Fatalf("%s: exit %d %v %s", p, code, err, errOut)
		}
		for _, s := range d.Sources {
			if strings.Contains(s.Error, "could not be read") {
				t.Errorf("%s: %s", p, s.Error)
			}
		}
		ev := d.Targets[0].Evidence
		if ttft := evidence.TreeNumber(ev, "service.client_ttft.p50"); ttft != 0.118 {
			t.Errorf("%s: client TTFT p50 %v, the example says 0.118", p, ttft)
		}
		if share := evidence.TreeNumber(ev, "service.network_share"); !(share > 0) {
			t.Errorf("%s: server_ttft gave no network share (%v)", p, share)
		}
	}
}

// docs/accuracy.md's reproduction: write scenario N of the accuracy set as
// a file, then run the demo on it.
func TestAccuracyDocReproductionRuns(t *testing.T) {
	doc := readDoc(t, filepath.Join("docs", "accuracy.md"))
	m := regexp.MustCompile("```\ngo run \\./simrun/accuracy/gen -draw (\\d+) -o (\\S+)\ngo run \\./cmd/llmdoctor demo --scenario (\\S+)\n").FindStringSubmatch(doc)
	if m == nil || m[2] != m[3] {
		t.Fatalf("docs/accuracy.md's reproduction changed or writes one file and runs another: %q", m)
	}
	i, _ := strconv.Atoi(m[1])
	sc, _, err := accuracy.Scenario(accuracy.Seed, i)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSuffix(filepath.Base(m[2]), ".yaml"); sc.Name != want {
		t.Errorf("scenario %d is named %s, the doc's file %s", i, sc.Name, m[2])
	}
	p := filepath.Join(t.TempDir(), filepath.Base(m[2]))
	if _, err := accuracy.WriteScenario(i, p); err != nil {
		t.Fatal(err)
	}
	if out := runs(t, ran, "demo", "--scenario", p, "--color", "never"); !strings.Contains(out, "simulated scenario "+sc.Name) {
		t.Errorf("demo on %s:\n%.300s", p, out)
	}
}

// The message helpers of docs/writing-rules.md give the outputs it shows.
func TestWritingRulesHelpersGiveTheirExamples(t *testing.T) {
	doc := readDoc(t, filepath.Join("docs", "writing-rules.md"))
	for _, want := range []string{"`dur` (seconds → `412ms`)", "`tokens` (`12.0k`)", "`times a b` (`4.20×`)", "`bps` (`1.28 TB/s`)",
		"`sub a b` (a − b, for `{{dur (sub .stage.ttft.mean .stage.prefill.mean)}}`)", `{{index .text "service.ttft_p99_outlier"}}`,
		"`atleast a b` (true when a is a number ≥ b, false when missing"} {
		if !strings.Contains(doc, want) {
			t.Fatalf("docs/writing-rules.md no longer says %s: update this test", want)
		}
	}
	for _, c := range []struct{ got, want string }{
		{units.Duration(0.412), "412ms"}, {units.Tokens(12000), "12.0k"}, {units.BytesPerSecond(1.28e12), "1.28 TB/s"},
	} {
		if c.got != c.want {
			t.Errorf("helper gives %q, the doc shows %q", c.got, c.want)
		}
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "doc", "helpers.tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "doc", "helpers.yaml"), `id: doc/helpers
title: the message helpers as documented
layer: stage
bottleneck: queueing
severity: info
when: stage.ttft.mean > 0
says: "{{dur .stage.ttft.mean}} {{times .stage.ttft.mean .stage.prefill.mean}} {{dur (sub .stage.ttft.mean .stage.prefill.mean)}} {{pct .stage.prefill.mean .stage.ttft.mean}}{{index .text \"service.ttft_p99_outlier\"}}{{if atleast .stage.prefill.mean 0.05}} long{{end}}{{if atleast .stage.prefill.mean 1}} slow{{end}}"
`)
	writeFile(t, filepath.Join(dir, "doc", "helpers.tests", "fired.yaml"),
		"evidence:\n  stage.ttft: {count: 100, mean: 0.412}\n  stage.prefill: {count: 100, mean: 0.0981}\nmessage: [\"412ms 4.20× 314ms 24%an unnamed instance long\"]\n")
	if out := runs(t, ran, "rules", "test", dir); out != "1 passed, 0 failed\n" {
		t.Errorf("helpers: %s", out)
	}
}

// Each benchmark command of docs/performance.md names a package and a
// pattern that selects benchmarks in it: the commands are minutes long, so
// this test runs none, but none of them can silently measure nothing.
func TestPerformanceDocNamesRealBenchmarks(t *testing.T) {
	doc := readDoc(t, filepath.Join("docs", "performance.md"))
	cmd := regexp.MustCompile(`go test (\./\S+) .*-bench '?([^' ]+)'?`)
	decl := regexp.MustCompile(`(?m)^func (Benchmark\w+)\(`)
	found := cmd.FindAllStringSubmatch(doc, -1)
	if len(found) < 5 {
		t.Fatalf("found %d benchmark commands in docs/performance.md", len(found))
	}
	for _, m := range found {
		pkg, pattern := m[1], m[2]
		re, err := regexp.Compile(pattern)
		if err != nil {
			t.Errorf("%s: -bench %q: %v", pkg, pattern, err)
			continue
		}
		files, _ := filepath.Glob(filepath.Join("..", "..", pkg, "*_test.go"))
		matched := false
		for _, f := range files {
			b, _ := os.ReadFile(f)
			for _, d := range decl.FindAllStringSubmatch(string(b), -1) {
				matched = matched || re.MatchString(d[1])
			}
		}
		if !matched {
			t.Errorf("go test %s -bench %s selects no benchmark", pkg, pattern)
		}
	}
}
