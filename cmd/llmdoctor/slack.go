package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/internal/redact"
	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// slackPost is the --output value that posts to Slack instead of writing
// a file (--output slack=FILE writes the messages' JSON, as any format).
const slackPost = "slack"

// The environment variables that hold a Slack destination, so that it
// need not be on the command line.
const (
	envSlackWebhook = "LLMDOCTOR_SLACK_WEBHOOK"
	envSlackToken   = "LLMDOCTOR_SLACK_TOKEN"
)

// slackDeadline bounds posting every message of a run, retries included.
const slackDeadline = 2 * time.Minute

// slackSleep waits between tries of a post; nil is a real wait. The tests
// set it once, before any run, so that a retry costs them no time.
var slackSleep func(ctx context.Context, d time.Duration) error

// slackFlags are the flags of --output slack: where to post and what to
// link to.
type slackFlags struct {
	// post is set by outputFlags.parse for a bare --output slack.
	post bool

	webhookFile, tokenFile, channel, apiURL string
	reportURL, graphURL                     string

	// dest is the destination prepare read; webhookFrom and tokenFrom
	// name where its credential came from, for errors.
	dest                   slackkit.Destination
	webhookFrom, tokenFrom string
}

func (s *slackFlags) add(f *pflag.FlagSet) {
	f.StringVar(&s.webhookFile, "slack-webhook-file", "", "with --output slack: file holding the incoming webhook's URL (- for stdin; or set "+envSlackWebhook+")")
	f.StringVar(&s.tokenFile, "slack-token-file", "", "with --output slack: file holding a bot token with chat:write (- for stdin; or set "+envSlackToken+"); needs --slack-channel")
	f.StringVar(&s.channel, "slack-channel", "", "with a bot token: ID of the channel to post to (C…); details go in the message's thread")
	f.StringVar(&s.apiURL, "slack-api-url", "", "with a bot token: Slack Web API base URL, for GovSlack or a proxy (default "+slackkit.DefaultAPIURL+")")
	f.StringVar(&s.reportURL, "report-url", "", "with --output slack: link each message to the full report at this URL")
	f.StringVar(&s.graphURL, "graph-url", "", "with --output slack: link each message to a Prometheus graph or Grafana view of the window")
}

// check refuses the Slack flags without --output slack, before anything
// is read: they would do nothing.
func (s *slackFlags) check() error {
	if s.post {
		return nil
	}
	for _, f := range []struct{ name, value string }{{"--slack-webhook-file", s.webhookFile}, {"--slack-token-file", s.tokenFile},
		{"--slack-channel", s.channel}, {"--slack-api-url", s.apiURL}, {"--report-url", s.reportURL}, {"--graph-url", s.graphURL}} {
		if f.value != "" {
			return usageErr("%s applies to --output slack, which posts the report to Slack", f.name)
		}
	}
	return nil
}

// stdinUses are the Slack flags that may read standard input.
func (s *slackFlags) stdinUses() []stdinUse {
	return []stdinUse{{"--slack-webhook-file", []string{s.webhookFile}}, {"--slack-token-file", []string{s.tokenFile}}}
}

// prepare reads the destination for --output slack and refuses one that
// cannot be posted to, before the diagnosis runs. It never echoes a
// credential.
func (s *slackFlags) prepare(in *input) error {
	if !s.post {
		return nil
	}
	secret := func(env, flag, path string) (value, from string, err error) {
		value, from = strings.TrimSpace(os.Getenv(env)), env
		if path == "" {
			return value, from, nil
		}
		b, err := in.read(path)
		if err != nil {
			return "", flag, usageErr("%s: %w", flag, err)
		}
		if value = strings.TrimSpace(string(b)); value == "" {
			return "", flag, usageErr("%s %s is empty", flag, path)
		}
		return value, flag, nil
	}
	var err error
	d := slackkit.Destination{Channel: s.channel, APIURL: s.apiURL}
	if d.WebhookURL, s.webhookFrom, err = secret(envSlackWebhook, "--slack-webhook-file", s.webhookFile); err != nil {
		return err
	}
	if d.Token, s.tokenFrom, err = secret(envSlackToken, "--slack-token-file", s.tokenFile); err != nil {
		return err
	}
	var ce *slackkit.ConfigError
	if err := d.Validate(); errors.As(err, &ce) {
		return s.configProblem(ce.Problem)
	} else if err != nil {
		return usageErr("%w", err)
	}
	if d.WebhookURL != "" && s.apiURL != "" {
		return usageErr("--slack-api-url applies to a bot token: an incoming webhook is posted to at its own URL")
	}
	s.dest = d
	return nil
}

// configProblem words a destination's problem as the flags and variables
// that set it.
func (s *slackFlags) configProblem(p slackkit.Problem) error {
	switch p {
	case slackkit.NoDestination:
		return usageErr("--output slack posts to Slack: set %s or --slack-webhook-file FILE (an incoming webhook), or %s or --slack-token-file FILE (a bot token) with --slack-channel ID",
			envSlackWebhook, envSlackToken)
	case slackkit.BothDestinations:
		return usageErr("%s gives an incoming webhook and %s a bot token: keep one Slack destination", s.webhookFrom, s.tokenFrom)
	case slackkit.TokenWithoutChannel:
		return usageErr("a bot token (%s) posts to a channel: give --slack-channel with the channel's ID (C…, at the bottom of its details)", s.tokenFrom)
	case slackkit.ChannelWithWebhook:
		return usageErr("--slack-channel applies to a bot token: an incoming webhook (%s) posts to the channel it was created for", s.webhookFrom)
	case slackkit.BadWebhookURL:
		return usageErr("%s does not hold a URL like https://hooks.slack.com/services/…", s.webhookFrom)
	case slackkit.BadAPIURL:
		return usageErr("--slack-api-url %q is not a URL like %s", s.apiURL, slackkit.DefaultAPIURL)
	}
	return usageErr("%w", &slackkit.ConfigError{Problem: p})
}

func (s *slackFlags) options() report.SlackOptions {
	return report.SlackOptions{ReportURL: s.reportURL, GraphURL: s.graphURL}
}

// postDiagnosis posts a diagnosis for --output slack; nothing without it.
func (o *outputFlags) postDiagnosis(ctx context.Context, stderr io.Writer, d *advisor.Diagnosis) error {
	if !o.slack.post {
		return nil
	}
	return o.slack.send(ctx, stderr, report.SlackDiagnosis(d, o.slack.options()))
}

// postChecklist posts a checklist for --output slack; nothing without it.
func (o *outputFlags) postChecklist(ctx context.Context, stderr io.Writer, c *advisor.Checklist) error {
	if !o.slack.post {
		return nil
	}
	return o.slack.send(ctx, stderr, report.SlackChecklist(c, o.slack.options()))
}

// send posts the messages. At a terminal, stderr gets a line per message
// posted (never the URL or token); a failure is one line and exit 2.
func (s *slackFlags) send(ctx context.Context, stderr io.Writer, msgs []report.SlackMessage) error {
	ctx, cancel := context.WithTimeout(ctx, slackDeadline)
	defer cancel()
	res, err := (&slackkit.Poster{Dest: s.dest, Sleep: slackSleep}).Post(ctx, msgs)
	if isTerminal(stderr) {
		s.printPosted(stderr, res)
	}
	if err != nil {
		return &exitError{2, s.explain(err)}
	}
	return nil
}

// printPosted says what was posted, a line a message, and once that a
// webhook left the details out.
func (s *slackFlags) printPosted(w io.Writer, res []slackkit.Result) {
	dropped := 0
	for _, r := range res {
		target := r.Target
		if target == "" {
			target = "(no target)"
		}
		line := "posted to Slack: " + target
		if r.Replies > 0 {
			line += fmt.Sprintf(" (%d in its thread)", r.Replies)
		}
		note(w, "%s\n", line)
		dropped += r.Dropped
	}
	if dropped > 0 {
		note(w, "note: an incoming webhook cannot start a thread, so %d detail message%s went unposted; post with a bot token (%s or --slack-token-file, and --slack-channel) to have them as replies\n",
			dropped, plural(dropped), envSlackToken)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// explain words a failed post: Slack's answer, then which flag or
// variable to check. The destination's credentials are masked once more.
func (s *slackFlags) explain(err error) string {
	msg := err.Error()
	var e *slackkit.Error
	if errors.As(err, &e) {
		check := map[slackkit.Setting]string{
			slackkit.CheckWebhook: s.webhookFrom,
			slackkit.CheckToken:   s.tokenFrom,
			slackkit.CheckChannel: "--slack-channel",
			slackkit.CheckAPIURL:  "--slack-api-url",
		}[e.Check]
		if e.Check == slackkit.CheckAPIURL && s.apiURL == "" {
			check = "--slack-api-url (unset: " + slackkit.DefaultAPIURL + ")"
		}
		if check != "" {
			msg += " (check " + check + ")"
		}
	}
	sec := &redact.Secrets{}
	s.dest.AddSecrets(sec)
	return sec.String(msg)
}

// postProbe posts a probe for --output slack; nothing without it.
func (o *outputFlags) postProbe(ctx context.Context, stderr io.Writer, r *probe.Result) error {
	if !o.slack.post {
		return nil
	}
	return o.slack.send(ctx, stderr, report.SlackProbe(r, o.slack.options()))
}
