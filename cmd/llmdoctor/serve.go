package main

import (
	"context"
	"errors"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/internal/redact"
	server "github.com/llmdoctor/llmdoctor/serve"
)

// The environment variables that hold the Alertmanager receiver's
// credentials.
const (
	envAMToken    = "LLMDOCTOR_ALERTMANAGER_TOKEN"
	envAMPassword = "LLMDOCTOR_ALERTMANAGER_PASSWORD"
)

type serveOpts struct {
	prom           promFlags
	listen         string
	configFile     string
	externalURL    string
	maxConcurrent  int
	requestTimeout time.Duration
	reportHistory  int
	groupBy        []string
	rulesConfig    string
	rulesDirs      []string
	slack          slackFlags

	amTokenFile, amUser string
	amLabels            []string
	amLeadIn            time.Duration

	slackApp server.SlackAppConfig
	watch    server.WatchConfig

	in *input
}

func newServe() *cobra.Command { return newServeWith(&serveOpts{}) }

// newServeWith is the serve command filling o.
func newServeWith(o *serveOpts) *cobra.Command {
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve diagnoses over HTTP: an Alertmanager receiver posting to Slack, an API, and findings as metrics",
		Long: "serve diagnoses a Prometheus-compatible source on demand and keeps what it found as\n" +
			"metrics. With a Slack destination it receives Alertmanager's webhook on POST\n" +
			"/alertmanager, diagnoses each firing alert group over the time since it began and\n" +
			"posts one message per group (a resolution replies in its thread). With a signing\n" +
			"secret it answers the /llmdoctor slash command; with --watch it diagnoses every\n" +
			"target every --every and posts when a verdict changes. GET / lists every target it\n" +
			"diagnosed, with its verdict, and GET /report/{target} is its HTML report, the\n" +
			"page Slack messages link to with --external-url (the last --report-history runs of\n" +
			"each target, kept in memory: lost on restart). GET /api/v1/diagnosis?selector=…&window=…\n" +
			"answers the JSON contract, GET /metrics the verdicts and findings, GET /healthz and\n" +
			"/readyz the probes. Settings come from flags or from --config serve.yaml (a flag's\n" +
			"name as key); flags win. docs/slack.md has the setup." +
			exitStatus("0  it stopped on SIGINT or SIGTERM, requests in flight answered",
				"2  bad usage, an unreadable settings file, or an address it cannot listen on"),
		Example: "  LLMDOCTOR_SLACK_TOKEN=xoxb-… llmdoctor serve --prom http://prometheus:9090 --slack-channel C0123ABCD \\\n" +
			"      --alertmanager-token-file /secrets/am-token --external-url https://llmdoctor.example.com\n" +
			"  llmdoctor serve --config serve.yaml",
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			o.in = newInput(cmd.InOrStdin())
			o.prom.in = o.in
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := c.Flags()
	o.prom.add(f)
	// Each diagnosis ends when it runs.
	hide(f, "end")
	f.Lookup("window").Usage = "default window of a diagnosis (an alert group that began earlier gets a longer one)"
	f.Lookup("selector").Usage = `label matchers that narrow every query, e.g. namespace="prod"; series without their labels (DCGM's) are joined through instance, pod, node or host`
	f.StringVar(&o.listen, "listen", ":8080", "address to serve HTTP on")
	f.StringVar(&o.configFile, "config", "", "serve.yaml: settings as flag-name: value (docs/slack.md); flags on the command line win")
	f.StringVar(&o.externalURL, "external-url", "", "this server's URL as users reach it, for the report link in Slack messages (to GET /report/…)")
	f.IntVar(&o.reportHistory, "report-history", server.DefaultReportHistory, "runs of each target kept for the report pages (GET / and /report/…), in memory: lost on restart")
	f.IntVar(&o.maxConcurrent, "max-concurrent", 4, "diagnoses in flight at once; more are answered busy (HTTP 429)")
	f.DurationVar(&o.requestTimeout, "request-timeout", time.Minute, "longest one diagnosis may take")
	f.StringSliceVar(&o.groupBy, "group-by", []string{"model_name"}, "labels that make one target")
	f.StringVar(&o.rulesConfig, "rules-config", "", "rule configuration file, as diagnose --config (per-rule enabled, severity, params; suppressions); default ./llmdoctor.yaml if present")
	f.StringArrayVar(&o.rulesDirs, "rules", nil, "directory of extra rule files; repeatable")
	f.StringVar(&o.slack.webhookFile, "slack-webhook-file", "", "file holding the incoming webhook's URL (- for stdin; or set "+envSlackWebhook+")")
	f.StringVar(&o.slack.tokenFile, "slack-token-file", "", "file holding a bot token with chat:write (- for stdin; or set "+envSlackToken+"); needs --slack-channel")
	f.StringVar(&o.slack.channel, "slack-channel", "", "with a bot token: ID of the channel to post to (C…); details and resolutions go in each message's thread")
	f.StringVar(&o.slack.apiURL, "slack-api-url", "", "with a bot token: Slack Web API base URL, for GovSlack or a proxy (default https://slack.com/api/)")
	f.StringVar(&o.amTokenFile, "alertmanager-token-file", "", "file holding the bearer token Alertmanager sends (http_config authorization; or set "+envAMToken+")")
	f.StringVar(&o.amUser, "alertmanager-user", "", "basic-auth user Alertmanager sends (http_config basic_auth); the password comes from "+envAMPassword)
	f.StringArrayVar(&o.amLabels, "alertmanager-label", nil, "alert label whose value selects the target, as LABEL or LABEL=METRIC_LABEL; repeatable (default model_name and namespace)")
	f.DurationVar(&o.amLeadIn, "alertmanager-lead-in", server.DefaultLeadIn, "how long before an alert group began its diagnosis window starts (never shorter than --window)")
	addSlackAppFlags(f, &o.slackApp)
	addWatchFlags(f, &o.watch)
	return c
}

func (o *serveOpts) run(cmd *cobra.Command) error {
	cfg, err := o.prepare(cmd.Flags())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return usageErr("--listen %s: %v", o.listen, err)
	}
	stderr := cmd.ErrOrStderr()
	cfg.Listen = o.listen
	cfg.Logger = slog.New(slog.NewTextHandler(redactWriter{stderr, o.secrets()}, nil))
	srv, err := server.New(cfg)
	if err != nil {
		_ = ln.Close() // the server's error is the one to tell
		return &exitError{2, err.Error()}
	}
	// Ctrl-C (see run) or SIGTERM: stop taking requests, finish those in
	// flight and the posts they started.
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
	defer stop()
	cfg.Logger.Info("listening", "addr", ln.Addr().String(), "prometheus", cfg.Prom.Connection.Redacted(), "slack", slackVia(cfg),
		"alertmanager", cfg.Alertmanager != nil)
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		return &exitError{2, err.Error()}
	}
	return nil
}

// prepare reads serve.yaml, then turns the flags into the server's
// configuration.
func (o *serveOpts) prepare(f *pflag.FlagSet) (server.Config, error) {
	if o.configFile != "" {
		if err := o.applyConfig(f); err != nil {
			return server.Config{}, err
		}
	}
	if err := o.stdinUses(); err != nil {
		return server.Config{}, err
	}
	return o.config(f)
}

func slackVia(cfg server.Config) string {
	if cfg.Slack.WebhookURL == "" && cfg.Slack.Token == "" {
		return "none"
	}
	return string(cfg.Slack.Via())
}

// config turns the flags into the server's configuration, refusing what
// cannot work before anything is served.
func (o *serveOpts) config(f *pflag.FlagSet) (server.Config, error) {
	var cfg server.Config
	d := &diagnoseOpts{prom: o.prom, groupBy: o.groupBy, in: o.in}
	if f.Changed("end") {
		return cfg, usageErr("--end does not apply to serve: each diagnosis ends when it runs")
	}
	if o.prom.url == "" {
		return cfg, usageErr("serve diagnoses from Prometheus: give --prom URL (Prometheus, Thanos, Mimir, VictoriaMetrics)")
	}
	if u, err := url.Parse(o.prom.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		conn, _ := o.prom.connection()
		return cfg, d.mask(o.prom.explain(&prom.Error{Kind: prom.BadURL, URL: conn.Redacted()}))
	}
	p, err := o.prom.source()
	if err != nil {
		return cfg, d.mask(err)
	}
	p.Options.GroupBy = o.groupBy
	if err := (diagnosis.Sources{Prom: p, GroupBy: o.groupBy}).Validate(); err != nil {
		return cfg, d.explain(err)
	}
	if _, err := prom.ParseMatchers(p.Options.Selector); err != nil {
		return cfg, usageErr("--selector: %v", err)
	}
	cfg.Prom = *p
	switch {
	case o.maxConcurrent < 1:
		return cfg, usageErr("--max-concurrent %d: want at least 1", o.maxConcurrent)
	case o.requestTimeout <= 0:
		return cfg, usageErr("--request-timeout %s: want a positive duration such as 1m", units.ShortDuration(o.requestTimeout))
	case o.reportHistory < 1:
		return cfg, usageErr("--report-history %d: keep at least 1 run of each target", o.reportHistory)
	}
	cfg.MaxConcurrent, cfg.RequestTimeout, cfg.ReportHistory = o.maxConcurrent, o.requestTimeout, o.reportHistory
	if o.externalURL != "" {
		u, err := url.Parse(o.externalURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, usageErr("--external-url %q: want this server's URL, like https://llmdoctor.example.com", o.externalURL)
		}
		cfg.ExternalURL = o.externalURL
	}
	if cfg.Rules, cfg.RuleConfig, err = loadRulesFlag(o.in, o.rulesConfig, o.rulesDirs); err != nil {
		return cfg, err
	}
	if err := o.prepareSlack(); err != nil {
		return cfg, err
	}
	cfg.Slack = o.slack.dest
	if cfg.Alertmanager, err = o.alertmanager(f); err != nil {
		return cfg, err
	}
	cfg.SlackApp, cfg.Watch = &o.slackApp, &o.watch
	return cfg, nil
}

// prepareSlack reads the Slack destination as --output slack does, when
// one is given at all: serve without Slack serves the API and metrics.
func (o *serveOpts) prepareSlack() error {
	s := &o.slack
	given := os.Getenv(envSlackWebhook) != "" || os.Getenv(envSlackToken) != "" || s.webhookFile != "" || s.tokenFile != ""
	if !given {
		for _, x := range []struct{ flag, v string }{{"--slack-channel", s.channel}, {"--slack-api-url", s.apiURL}} {
			if x.v != "" {
				return usageErr("%s applies to a bot token: set %s or --slack-token-file FILE", x.flag, envSlackToken)
			}
		}
		return nil
	}
	s.post = true
	return s.prepare(o.in)
}

// alertmanager configures the receiver: on with a Slack destination.
func (o *serveOpts) alertmanager(f *pflag.FlagSet) (*server.AlertmanagerConfig, error) {
	var given []string
	for _, name := range []string{"alertmanager-token-file", "alertmanager-user", "alertmanager-label", "alertmanager-lead-in"} {
		if f.Changed(name) {
			given = append(given, "--"+name)
		}
	}
	if !o.slack.post {
		if len(given) > 0 {
			return nil, usageErr("%s: the Alertmanager receiver posts to Slack: set %s or %s (or their file flags)", given[0], envSlackWebhook, envSlackToken)
		}
		return nil, nil
	}
	c := &server.AlertmanagerConfig{Token: strings.TrimSpace(os.Getenv(envAMToken)), LeadIn: o.amLeadIn}
	if o.amTokenFile != "" {
		b, err := o.in.read(o.amTokenFile)
		if err != nil {
			return nil, usageErr("--alertmanager-token-file: %v", err)
		}
		if c.Token = strings.TrimSpace(string(b)); c.Token == "" {
			return nil, usageErr("--alertmanager-token-file %s is empty", o.amTokenFile)
		}
	}
	if o.amUser != "" {
		c.User, c.Password = o.amUser, os.Getenv(envAMPassword)
		if c.Password == "" {
			return nil, usageErr("--alertmanager-user needs the password in %s", envAMPassword)
		}
	}
	if o.amLeadIn <= 0 {
		return nil, usageErr("--alertmanager-lead-in %s: want a positive duration such as 10m", units.ShortDuration(o.amLeadIn))
	}
	if len(o.amLabels) > 0 {
		c.Labels = map[string]string{}
		for _, l := range o.amLabels {
			alert, metric, ok := strings.Cut(l, "=")
			if !ok {
				metric = alert
			}
			alert, metric = strings.TrimSpace(alert), strings.TrimSpace(metric)
			if !validLabel(alert) || !validLabel(metric) {
				return nil, usageErr("--alertmanager-label %q: want LABEL or ALERT_LABEL=METRIC_LABEL, names of letters, digits and _", l)
			}
			c.Labels[alert] = metric
		}
	}
	return c, nil
}

func validLabel(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// stdinUses refuses standard input asked for by two flags.
func (o *serveOpts) stdinUses() error {
	for _, x := range []struct{ flag, path string }{{"--prom-ca", o.prom.ca}, {"--prom-cert", o.prom.cert}, {"--prom-key", o.prom.key}} {
		if x.path == "-" {
			return usageErr("%s does not read standard input: give the PEM file's path", x.flag)
		}
	}
	return oneStdin(append([]stdinUse{
		{"--config", []string{o.configFile}},
		{"--rules-config", []string{o.rulesConfig}},
		{"--prom-token-file", []string{o.prom.tokenFile}},
		{"--alertmanager-token-file", []string{o.amTokenFile}},
	}, o.slack.stdinUses()...)...)
}

// secrets are the credentials the flags carry, masked in every log line.
func (o *serveOpts) secrets() *redact.Secrets {
	s := (&diagnoseOpts{prom: o.prom, in: o.in}).secrets()
	o.slack.dest.AddSecrets(s)
	s.Add(strings.TrimSpace(os.Getenv(envAMToken)), os.Getenv(envAMPassword), o.slackApp.SigningSecret, o.slackApp.Token)
	if o.amTokenFile != "" {
		if b, err := o.in.read(o.amTokenFile); err == nil {
			s.Add(strings.TrimSpace(string(b)))
		}
	}
	return s
}
