package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// At a terminal, stderr gets one line per message posted, never where to,
// and one note when a webhook left details out.
func TestSlackPostedLines(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	s := &slackFlags{}
	s.printPosted(&b, []slackkit.Result{
		{Target: "model llama", Via: slackkit.Webhook, Dropped: 3},
		{Target: "", Via: slackkit.Webhook, Dropped: 1},
	})
	want := "posted to Slack: model llama\n" +
		"posted to Slack: (no target)\n" +
		"note: an incoming webhook cannot start a thread, so 4 detail messages went unposted; post with a bot token (LLMDOCTOR_SLACK_TOKEN or --slack-token-file, and --slack-channel) to have them as replies\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	s.printPosted(&b, []slackkit.Result{{Target: "model llama", Via: slackkit.WebAPI, Channel: "C0LLMDOC", TS: "1.2", Replies: 2}})
	if want := "posted to Slack: model llama (2 in its thread)\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// Neither the webhook's URL nor the token reaches stdout or stderr of a
// run whose post fails, however it fails. (The scripts check the same
// through the command's own process; this runs it in-process, with the
// secrets given in files.)
func TestSlackFailureShowsNoSecret(t *testing.T) {
	t.Parallel()
	hookArgs := func(f *fakeslack.Server, dir string) []string {
		p := filepath.Join(dir, "hook")
		writeFile(t, p, f.WebhookURL()+"\n")
		return []string{"--slack-webhook-file", p}
	}
	tokenArgs := func(f *fakeslack.Server, dir string) []string {
		p := filepath.Join(dir, "token")
		writeFile(t, p, fakeslack.Token+"\n")
		return []string{"--slack-token-file", p, "--slack-channel", fakeslack.Channel, "--slack-api-url", f.APIURL()}
	}
	for _, c := range []struct {
		answer func(f *fakeslack.Server) fakeslack.Answer
		args   func(f *fakeslack.Server, dir string) []string
	}{
		{func(*fakeslack.Server) fakeslack.Answer { return fakeslack.Answer{Status: 404, Body: "no_service"} }, hookArgs},
		{func(f *fakeslack.Server) fakeslack.Answer {
			return fakeslack.Answer{Status: 200, Body: "<p>" + f.WebhookURL() + "</p>"}
		}, hookArgs},
		{func(f *fakeslack.Server) fakeslack.Answer {
			return fakeslack.Answer{Status: 400, Body: fakeslack.HookSecret}
		}, hookArgs},
		{func(*fakeslack.Server) fakeslack.Answer { return fakeslack.Answer{Status: 503} }, hookArgs},
		{func(*fakeslack.Server) fakeslack.Answer { return fakeslack.WebAPIError("invalid_auth") }, tokenArgs},
		{func(*fakeslack.Server) fakeslack.Answer { return fakeslack.Answer{Status: 404, Body: fakeslack.Token} }, tokenArgs},
		{func(*fakeslack.Server) fakeslack.Answer { return fakeslack.WebAPIError(fakeslack.Token) }, tokenArgs},
	} {
		f := fakeslack.Start()
		a := c.answer(f)
		f.Queue(a, a, a)
		args := append(append([]string{"diagnose", "--color", "never", "--output", "slack"}, example("queueing")...), c.args(f, t.TempDir())...)
		code, out, errOut := runCLI(t, args...)
		f.Close()
		if code != 2 || !strings.HasPrefix(errOut, "llmdoctor: posting ") || strings.Count(errOut, "\n") != 1 || !strings.Contains(out, "VERDICT") {
			t.Errorf("%+v: exit %d, stderr %q", a, code, errOut)
		}
		for _, x := range []string{fakeslack.HookSecret, fakeslack.Token, "/services/T0LLMDOC"} {
			if strings.Contains(out+errOut, x) {
				t.Errorf("%+v: output shows %s:\n%s", a, x, errOut)
			}
		}
	}
}
