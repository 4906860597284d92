package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	// Imported as server: robust_secrets_test.go declares a func serve in
	// this package.
	server "github.com/llmdoctor/llmdoctor/serve"
)

// The environment variables that hold the Slack app's credentials.
const (
	envSlackSigningSecret = "LLMDOCTOR_SLACK_SIGNING_SECRET"
	envSlackAppToken      = "LLMDOCTOR_SLACK_APP_TOKEN"
)

// addSlackAppFlags declares the flags of the slash command and the
// interactions on serve's flag set, filling c. The app is on when c has a
// signing secret after parsing (the flag's file or the variable);
// registerSlackApp decides from c. The credentials are read when the flag
// is set (on the command line or from serve.yaml), so c holds them, never
// their paths; a flag's value as printed is its path.
func addSlackAppFlags(f *pflag.FlagSet, c *server.SlackAppConfig) {
	c.SigningSecret = strings.TrimSpace(os.Getenv(envSlackSigningSecret))
	c.Token = strings.TrimSpace(os.Getenv(envSlackAppToken))
	f.Var(&slackSecretFile{into: &c.SigningSecret}, "slack-signing-secret-file",
		"file holding the Slack app's signing secret (or set "+envSlackSigningSecret+"); turns on /slack/commands and /slack/interactions")
	f.Var(&slackSecretFile{into: &c.Token}, "slack-app-token-file",
		"file holding the Slack app's bot token (or set "+envSlackAppToken+"), to post answers asked for \"in channel\" with their details in a thread (default: the token of --slack-token-file, if any)")
	c.MaxBody = server.DefaultSlackMaxBody
	f.Int64Var(&c.MaxBody, "slack-max-body", server.DefaultSlackMaxBody, "largest request from Slack taken, in bytes; a larger one is refused (413)")
	f.StringSliceVar(&c.ResponseHosts, "slack-response-hosts", []string{"hooks.slack.com", "hooks.slack-gov.com"},
		"hosts a Slack response_url may point at (https only): answers go nowhere else")
}

// slackSecretFile is a flag naming a file whose content (trimmed) is a secret:
// it is read when the flag is set, and the flag prints only the path.
type slackSecretFile struct {
	path string
	into *string
}

func (s *slackSecretFile) String() string { return s.path }
func (s *slackSecretFile) Type() string   { return "FILE" }

func (s *slackSecretFile) Set(path string) error {
	if path == "-" {
		return errors.New("does not read standard input: give the file's path")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return fmt.Errorf("%s is empty", path)
	}
	s.path, *s.into = path, v
	return nil
}
