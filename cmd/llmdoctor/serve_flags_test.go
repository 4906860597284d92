package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	// Imported as server: robust_secrets_test.go declares a func serve in
	// this package.
	server "github.com/llmdoctor/llmdoctor/serve"
)

// serveConfig parses a serve command line into the server's
// configuration, as the command does before serving.
func serveConfig(t *testing.T, args ...string) (server.Config, error) {
	t.Helper()
	o := &serveOpts{}
	c := newServeWith(o)
	if err := c.Flags().Parse(args); err != nil {
		return server.Config{}, err
	}
	o.in = newInput(strings.NewReader(""))
	o.prom.in = o.in
	return o.prepare(c.Flags())
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// serve.yaml keys are flag names; a flag on the command line wins.
func TestServeConfigFile(t *testing.T) {
	token := writeTemp(t, "slack-token", "xoxb-serve-test-123\n")
	amToken := writeTemp(t, "am-token", "am-token-456\n")
	cfgFile := writeTemp(t, "serve.yaml", `# llmdoctor serve
prom: http://prometheus:9090
window: 30m
selector: namespace="inference"
listen: 127.0.0.1:9999
max-concurrent: 2
report-history: 5
external-url: https://llmdoctor.example.com
slack-channel: C0LLMDOC
slack-token-file: `+token+`
alertmanager-token-file: `+amToken+`
alertmanager-label: [model_name, model=model_name]
alertmanager-lead-in: 5m
prom-header: ["X-Scope-OrgID: team-a"]
`)
	cfg, err := serveConfig(t, "--config", cfgFile, "--window", "1h", "--max-concurrent", "3")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case cfg.Prom.Connection.URL != "http://prometheus:9090" || cfg.Prom.Options.Selector != `namespace="inference"`:
		t.Errorf("source %+v", cfg.Prom)
	case cfg.Prom.Options.Window != time.Hour || cfg.MaxConcurrent != 3:
		t.Errorf("the flags did not win: window %s, max-concurrent %d", cfg.Prom.Options.Window, cfg.MaxConcurrent)
	case cfg.Prom.Connection.Headers["X-Scope-OrgID"] != "team-a":
		t.Errorf("headers %v", cfg.Prom.Connection.Headers)
	case cfg.ExternalURL != "https://llmdoctor.example.com" || cfg.ReportHistory != 5:
		t.Errorf("external URL %q, report history %d", cfg.ExternalURL, cfg.ReportHistory)
	case cfg.Slack.Token != "xoxb-serve-test-123" || cfg.Slack.Channel != "C0LLMDOC":
		t.Errorf("Slack %+v", cfg.Slack)
	case cfg.Alertmanager == nil || cfg.Alertmanager.Token != "am-token-456" || cfg.Alertmanager.LeadIn != 5*time.Minute ||
		len(cfg.Alertmanager.Labels) != 2 || cfg.Alertmanager.Labels["model"] != "model_name" || cfg.Alertmanager.Labels["model_name"] != "model_name":
		t.Errorf("Alertmanager %+v", cfg.Alertmanager)
	case cfg.Rules == nil || len(cfg.Rules.Rules) == 0:
		t.Error("no rules loaded")
	}
	// Without a Slack destination: the API and metrics only.
	cfg, err = serveConfig(t, "--prom", "http://prometheus:9090")
	if err != nil || cfg.Alertmanager != nil || cfg.Slack.Token != "" || cfg.Prom.Options.Window != 15*time.Minute || cfg.MaxConcurrent != 4 ||
		cfg.ReportHistory != server.DefaultReportHistory {
		t.Fatalf("defaults: %v %+v", err, cfg)
	}
}

// What cannot work is refused before anything is served, in one line
// naming the flag or key.
func TestServeConfigRefusals(t *testing.T) {
	slack := []string{"--slack-token-file", writeTemp(t, "token", "xoxb-x"), "--slack-channel", "C0"}
	empty := writeTemp(t, "empty", "\n")
	yamlFile := func(body string) []string { return []string{"--config", writeTemp(t, "serve.yaml", body)} }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give --prom URL"},
		{[]string{"--prom", "http://p:9090", "--end", "2026-01-01T00:00:00Z"}, "--end does not apply to serve"},
		{[]string{"--prom", "prometheus:9090"}, "--prom"},
		{[]string{"--prom", "http://p:9090", "--window", "0s"}, `invalid argument "0s" for "--window" flag: shorter than 15s`},
		{[]string{"--prom", "http://p:9090", "--window", "30d"}, `invalid argument "30d" for "--window" flag: longer than 7d`},
		{[]string{"--prom", "http://p:9090", "--selector", "namespace=prod"}, "--selector"},
		{[]string{"--prom", "http://p:9090", "--max-concurrent", "0"}, "--max-concurrent 0"},
		{[]string{"--prom", "http://p:9090", "--request-timeout", "0s"}, "--request-timeout"},
		{[]string{"--prom", "http://p:9090", "--report-history", "0"}, "--report-history 0"},
		{yamlFile("prom: http://p:9090\nreport-history: -3\n"), "--report-history -3"},
		{[]string{"--prom", "http://p:9090", "--external-url", "llmdoctor.example.com"}, "--external-url"},
		{[]string{"--prom", "http://p:9090", "--slack-channel", "C0"}, "--slack-channel applies to a bot token"},
		{[]string{"--prom", "http://p:9090", "--alertmanager-token-file", empty}, "the Alertmanager receiver posts to Slack"},
		{append([]string{"--prom", "http://p:9090", "--alertmanager-token-file", empty}, slack...), "is empty"},
		{append([]string{"--prom", "http://p:9090", "--alertmanager-user", "am"}, slack...), "LLMDOCTOR_ALERTMANAGER_PASSWORD"},
		{append([]string{"--prom", "http://p:9090", "--alertmanager-label", "model-name"}, slack...), "--alertmanager-label"},
		{append([]string{"--prom", "http://p:9090", "--alertmanager-lead-in", "0s"}, slack...), "--alertmanager-lead-in"},
		{[]string{"--prom", "http://p:9090", "--rules-config", "-", "--prom-token-file", "-"}, "standard input"},
		{yamlFile("prom: http://p:9090\nwindw: 15m\n"), `unknown key "windw"`},
		{yamlFile("prom: http://p:9090\nconfig: other.yaml\n"), "config cannot be set in the file"},
		{yamlFile("prom: [http://a, http://b]\n"), "prom takes one value"},
		{yamlFile("prom: http://p:9090\nwindow: soon\n"), "window"},
		{yamlFile("prom: http://p:9090\nend: now\n"), `unknown key "end"`},
		{yamlFile("prom: {url: http://p:9090\n"), "serve.yaml"},
	} {
		_, err := serveConfig(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", tc.args, err, tc.want)
		}
	}
	// Through the command line: exit 2 with one line.
	code, _, errOut := runCLI(t, "serve", "--listen", "127.0.0.1:0")
	if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "--prom") {
		t.Fatalf("serve without --prom: %d %q", code, errOut)
	}
}

// Credentials never reach an error line.
func TestServeConfigMasksSecrets(t *testing.T) {
	_, err := serveConfig(t, "--prom", "http://user:hunter2-hunter2@prometheus:9090", "--window", "0s")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("%v", err)
	}
}

// serve.yaml is decoded into a typed struct, strictly: each error names
// its line, and says what the key takes.
func TestServeFileErrorsNameTheLine(t *testing.T) {
	for body, want := range map[string]string{
		"prom: http://p:9090\n\nwindw: 15m\n":              `line 3: unknown key "windw": keys are serve's flag names`,
		"prom: http://p:9090\nmax-concurrent: two\n":       "line 2: max-concurrent takes a whole number",
		"prom: http://p:9090\nwatch: sometimes\n":          "line 2: watch takes true or false",
		"prom: http://p:9090\nlisten: [a, b]\n":            "line 2: listen takes one value",
		"prom: http://p:9090\ngroup-by: {a: b}\n":          "line 2: group-by: want a value or a list of values",
		"prom: http://p:9090\nprom: http://q:9090\n":       "line 2",
		"prom: http://p:9090\n# the window\nwindow: 30d\n": `line 3: window: invalid argument "30d" for "--window" flag: longer than 7d`,
		"prom: http://p:9090\nconfig: other.yaml\n":        "line 2: config cannot be set in the file",
		"- prom\n": "line 1: want settings as key: value",
		"prom: http://p:9090\nrequest-timeout: soon\n":             `line 2: request-timeout: invalid argument "soon"`,
		"prom: http://p:9090\nalertmanager-label: [a, b]\nhold: x": "line 3: hold takes a whole number",
	} {
		_, err := serveConfig(t, "--config", writeTemp(t, "serve.yaml", body))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", body, err, want)
		}
	}
}

// Every flag of serve is a key of serve.yaml, and every key a flag.
func TestServeFileHasEveryFlag(t *testing.T) {
	f := newServe().Flags()
	keys := map[string]bool{}
	ty := reflect.TypeFor[serveFile]()
	for i := 0; i < ty.NumField(); i++ {
		k := ty.Field(i).Tag.Get("yaml")
		keys[k] = true
		if fl := f.Lookup(k); fl == nil || fl.Hidden {
			t.Errorf("serve.yaml key %s is no flag of serve", k)
		}
	}
	f.VisitAll(func(fl *pflag.Flag) {
		if !fl.Hidden && !keys[fl.Name] {
			t.Errorf("--%s has no serve.yaml key", fl.Name)
		}
	})
}

func TestServeFileScalarList(t *testing.T) {
	cfg, err := serveConfig(t, "--config", writeTemp(t, "serve.yaml", "prom: http://p:9090\ngroup-by: namespace\nwindow: 1d\n"))
	if err != nil || len(cfg.Prom.Options.GroupBy) != 1 || cfg.Prom.Options.GroupBy[0] != "namespace" || cfg.Prom.Options.Window != 24*time.Hour {
		t.Fatalf("%v %v %s", err, cfg.Prom.Options.GroupBy, cfg.Prom.Options.Window)
	}
}
