package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	// Imported as server: robust_secrets_test.go declares a func serve in
	// this package.
	server "github.com/llmdoctor/llmdoctor/serve"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// --watch turns the watch on and the other watch flags fill its config;
// the server applies the defaults, and refuses the other flags without
// --watch, since they would do nothing.
func TestWatchFlags(t *testing.T) {
	parse := func(args ...string) server.WatchConfig {
		t.Helper()
		f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		var c server.WatchConfig
		addWatchFlags(f, &c)
		if err := f.Parse(args); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := parse(); c != (server.WatchConfig{}) {
		t.Errorf("no flags: %+v", c)
	}
	c := parse("--watch", "--every", "1m", "--hold", "3", "--state-file", "/var/lib/llmdoctor/s.json", "--watch-selector", `namespace="prod"`)
	if !c.Enabled || c.Every != time.Minute || c.Hold != 3 || c.StateFile != "/var/lib/llmdoctor/s.json" || c.Selector != `namespace="prod"` {
		t.Errorf("every flag: %+v", c)
	}
	hook := slackkit.Destination{WebhookURL: "https://hooks.slack.com/services/T0/B0/x"}
	for _, args := range [][]string{{"--every", "1m"}, {"--hold", "3"}, {"--state-file", "s.json"}, {"--watch-selector", `a="b"`}} {
		c := parse(args...)
		if _, err := server.New(server.Config{Slack: hook, Watch: &c}); err == nil || !strings.Contains(err.Error(), "the watch is off") {
			t.Errorf("%s without --watch: %v", args[0], err)
		}
	}
	c = parse("--watch")
	if _, err := server.New(server.Config{Slack: hook, Watch: &c}); err != nil {
		t.Errorf("--watch alone: %v", err)
	}
}

// The serve command's flags and variables, once it exists, are those the
// Kubernetes Deployment uses.
func TestDeployArgsAreServeFlags(t *testing.T) {
	var srv *cobra.Command
	for _, c := range newRoot().Commands() {
		if c.Name() == "serve" {
			srv = c
		}
	}
	if srv == nil {
		t.Skip("no serve command yet")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kubernetes", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string
						Env  []struct{ Name string }
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("the Deployment's args do not start with serve: %v", c.Args)
	}
	var src strings.Builder
	for _, dir := range []string{".", filepath.Join("..", "..", "internal", "serve")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				b, _ := os.ReadFile(f)
				src.Write(b)
			}
		}
	}
	for _, a := range c.Args[1:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || srv.Flags().Lookup(name) == nil {
			t.Errorf("the Deployment passes %s, which llmdoctor serve does not have", a)
		}
	}
	for _, e := range c.Env {
		if !regexp.MustCompile(`"` + e.Name + `"`).MatchString(src.String()) {
			t.Errorf("the Deployment sets %s, which llmdoctor serve does not read", e.Name)
		}
	}
}
