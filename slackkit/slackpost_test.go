package slackkit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/llmdoctor/llmdoctor/internal/redact"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
)

// msg is a hand-built message as the renderer makes them: a header, a
// section and a colour bar, with details for the thread.
func msg(target string, details int) Message {
	h := slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "QUEUE-BOUND · "+target, false, false))
	s := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*Queueing* is 62% of TTFT", false, false), nil, nil)
	m := Message{Target: target, Severity: "warning", Main: slack.WebhookMessage{
		Text:        "QUEUE-BOUND · " + target + ": queueing is 62% of TTFT",
		Blocks:      &slack.Blocks{BlockSet: []slack.Block{h, s}},
		Attachments: []slack.Attachment{{Color: "#d9a400"}},
	}}
	for i := range details {
		t := fmt.Sprintf("finding %d of %s", i+1, target)
		m.Details = append(m.Details, slack.WebhookMessage{Text: t,
			Blocks: &slack.Blocks{BlockSet: []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, t, false, false), nil, nil)}}})
	}
	return m
}

// poster posts to the fake without sleeping: it records the waits.
func poster(d Destination, waits *[]time.Duration) *Poster {
	return &Poster{Dest: d, Sleep: func(_ context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return nil
	}}
}

func webhookTo(f *fakeslack.Server) Destination { return Destination{WebhookURL: f.WebhookURL()} }

func tokenTo(f *fakeslack.Server, channel string) Destination {
	return Destination{Token: fakeslack.Token, Channel: channel, APIURL: f.APIURL()}
}

// noSecret fails when an error's text holds a credential of the fake, or
// is not one line.
func noSecret(t *testing.T, err error) {
	t.Helper()
	s := err.Error()
	for _, x := range []string{fakeslack.HookSecret, fakeslack.Token, "/services/T0LLMDOC/B0LLMDOC/"} {
		if strings.Contains(s, x) {
			t.Errorf("the error shows a secret (%s): %s", x, s)
		}
	}
	if strings.Contains(s, "\n") {
		t.Errorf("the error is not one line: %q", s)
	}
}

func TestWebhookPostsEachMainMessage(t *testing.T) {
	t.Parallel()
	f := fakeslack.Start()
	defer f.Close()
	var waits []time.Duration
	res, err := poster(webhookTo(f), &waits).Post(context.Background(), []Message{msg("llama", 3), msg("mistral", 0)})
	if err != nil {
		t.Fatal(err)
	}
	if want := "#1 webhook text blocks=2 attachments=1 → ok\n#2 webhook text blocks=2 attachments=1 → ok\n"; f.Summary() != want {
		t.Errorf("the fake received:\n%s\nwant:\n%s", f.Summary(), want)
	}
	if len(res) != 2 || res[0].Target != "llama" || res[0].Dropped != 3 || res[1].Dropped != 0 || res[0].TS != "" {
		t.Errorf("results: %+v", res)
	}
	// The payload is the rendered message as JSON, channel left out.
	p := f.Requests()[0].Payload
	if p["text"] != msg("llama", 0).Main.Text || p["channel"] != nil || p["thread_ts"] != nil {
		t.Errorf("payload: %v", p)
	}
	if len(waits) != 0 {
		t.Errorf("waited %v", waits)
	}
}

// Each of the webhook's refusals is one line naming Slack's code and what
// to check, sent once (a 4xx will not change on a retry).
func TestWebhookErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		answer fakeslack.Answer
		want   string
		check  Setting
	}{
		{fakeslack.Answer{Status: 400, Body: "invalid_payload"}, "incoming webhook answered HTTP 400 invalid_payload: Slack refused the message itself", CheckMessage},
		{fakeslack.Answer{Status: 400, Body: "no_text"}, "answered HTTP 400 no_text: Slack refused the message itself", CheckMessage},
		{fakeslack.Answer{Status: 404, Body: "no_service"}, "answered HTTP 404 no_service: the webhook was removed or disabled, or its URL is wrong", CheckWebhook},
		{fakeslack.Answer{Status: 403, Body: "action_prohibited"}, "answered HTTP 403 action_prohibited: a workspace admin", CheckWebhook},
		{fakeslack.Answer{Status: 410, Body: "channel_is_archived"}, "channel_is_archived: the webhook's channel is archived", CheckWebhook},
		// HTTP 200 is not enough: Slack's webhook says "ok".
		{fakeslack.Answer{Status: 200, Body: "accepted"}, `answered HTTP 200 accepted: not Slack's "ok": is the URL an incoming webhook (https://hooks.slack.com/services/…)?`, CheckWebhook},
		{fakeslack.Answer{Status: 400, Body: "some_new_code"}, `answered HTTP 400 some_new_code: see https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks#handling_errors`, CheckNothing},
		{fakeslack.Answer{Status: 200, Body: "<html>login at https://sso.example.com/?next=" + fakeslack.HookSecret + "</html>"},
			`answered HTTP 200 with 78 bytes of text/plain: not Slack's "ok": is the URL an incoming webhook`, CheckWebhook},
		{fakeslack.Answer{Status: 200, Body: ""}, `answered HTTP 200 with an empty body: not Slack's "ok"`, CheckWebhook},
		{fakeslack.Answer{Status: 401, Body: ""}, `answered HTTP 401 with an empty body: is the URL an incoming webhook`, CheckWebhook},
	} {
		t.Run(c.answer.Body, func(t *testing.T) {
			t.Parallel()
			f := fakeslack.Start()
			defer f.Close()
			f.Queue(c.answer)
			var waits []time.Duration
			res, err := poster(webhookTo(f), &waits).Post(context.Background(), []Message{msg("llama", 1), msg("mistral", 0)})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T)", err, err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "posting llama to Slack: ") {
				t.Errorf("error:\n%s\nwant it to hold:\n%s", err, c.want)
			}
			if e.Check != c.check || e.Tries != 1 || len(waits) != 0 || len(res) != 0 {
				t.Errorf("check %v tries %d waits %v results %v", e.Check, e.Tries, waits, res)
			}
			if len(f.Requests()) != 1 {
				t.Errorf("posting went on after a refusal:\n%s", f.Summary())
			}
			noSecret(t, err)
		})
	}
}

// Why the webhook is not posted with slack-go's PostWebhookCustomHTTPContext:
// it takes any HTTP 200 for success and drops the code of a refusal. (If
// this test fails, slack-go has learnt both and may post instead.)
func TestSlackGoWebhookLosesSlacksAnswer(t *testing.T) {
	t.Parallel()
	f := fakeslack.Start()
	defer f.Close()
	f.Queue(fakeslack.Answer{Status: 200, Body: "invalid_payload"}, fakeslack.Answer{Status: 400, Body: "invalid_payload"})
	m := msg("llama", 0).Main
	if err := slack.PostWebhookCustomHTTPContext(context.Background(), f.WebhookURL(), http.DefaultClient, &m); err != nil {
		t.Errorf("slack-go now refuses a 200 that is not ok: %v", err)
	}
	err := slack.PostWebhookCustomHTTPContext(context.Background(), f.WebhookURL(), http.DefaultClient, &m)
	if err == nil || strings.Contains(err.Error(), "invalid_payload") {
		t.Errorf("slack-go now keeps the code: %v", err)
	}
}

func TestWebAPIPostsDetailsInTheThread(t *testing.T) {
	t.Parallel()
	f := fakeslack.Start()
	defer f.Close()
	var waits []time.Duration
	res, err := poster(tokenTo(f, fakeslack.Channel), &waits).Post(context.Background(), []Message{msg("llama", 2), msg("mistral", 1)})
	if err != nil {
		t.Fatal(err)
	}
	want := `#1 chat.postMessage channel=C0LLMDOC text blocks=2 attachments=1 → ok
#2 chat.postMessage channel=C0LLMDOC reply to #1 text blocks=1 → ok
#3 chat.postMessage channel=C0LLMDOC reply to #1 text blocks=1 → ok
#4 chat.postMessage channel=C0LLMDOC text blocks=2 attachments=1 → ok
#5 chat.postMessage channel=C0LLMDOC reply to #4 text blocks=1 → ok
`
	if f.Summary() != want {
		t.Errorf("the fake received:\n%s\nwant:\n%s", f.Summary(), want)
	}
	reqs := f.Requests()
	if len(res) != 2 || res[0].TS != reqs[0].TS || res[0].Channel != fakeslack.Channel || res[0].Replies != 2 || res[1].Replies != 1 || res[0].Dropped != 0 {
		t.Errorf("results: %+v", res)
	}
	if reqs[1].ThreadTS != reqs[0].TS || reqs[4].ThreadTS != reqs[3].TS || reqs[0].ThreadTS != "" {
		t.Errorf("thread_ts: %+v", reqs)
	}
	if reqs[1].Payload["text"] != "finding 1 of llama" {
		t.Errorf("reply payload: %v", reqs[1].Payload)
	}
}

// The Web API refuses under HTTP 200, with "ok":false and a code.
func TestWebAPIErrorsUnder200(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		dest   func(f *fakeslack.Server) Destination
		answer *fakeslack.Answer
		want   string
		check  Setting
	}{
		{"not in channel", func(f *fakeslack.Server) Destination { return tokenTo(f, fakeslack.NotInChannel) }, nil,
			"chat.postMessage answered not_in_channel: the app is not a member of channel C0NOTIN: invite it (/invite @your-app) or give it the chat:write.public scope", CheckChannel},
		{"channel not found", func(f *fakeslack.Server) Destination { return tokenTo(f, "gpu-alerts") }, nil,
			"chat.postMessage answered channel_not_found: the token sees no channel gpu-alerts: give the channel's ID", CheckChannel},
		{"wrong token", func(f *fakeslack.Server) Destination {
			d := tokenTo(f, fakeslack.Channel)
			d.Token = "xoxb-wrong-token-3b9f"
			return d
		}, nil, "chat.postMessage answered invalid_auth: Slack refused the token", CheckToken},
		{"missing scope", func(f *fakeslack.Server) Destination { return tokenTo(f, fakeslack.Channel) },
			&fakeslack.Answer{Status: 200, Body: `{"ok":false,"error":"missing_scope","needed":"chat:write","provided":"channels:read"}`},
			"answered missing_scope (needs chat:write): the token lacks the chat:write scope", CheckToken},
		{"blocks refused", func(f *fakeslack.Server) Destination { return tokenTo(f, fakeslack.Channel) },
			&fakeslack.Answer{Status: 200, Body: `{"ok":false,"error":"invalid_blocks"}`}, "answered invalid_blocks: Slack refused the message itself", CheckMessage},
		{"unknown code", func(f *fakeslack.Server) Destination { return tokenTo(f, fakeslack.Channel) },
			&fakeslack.Answer{Status: 200, Body: `{"ok":false,"error":"team_not_ready"}`}, "answered team_not_ready: see https://docs.slack.dev/reference/methods/chat.postMessage#errors", CheckNothing},
		{"not JSON", func(f *fakeslack.Server) Destination { return tokenTo(f, fakeslack.Channel) },
			&fakeslack.Answer{Status: 200, Body: "<html>proxy</html>"}, "chat.postMessage answered HTTP 200 with an answer that is not Slack's JSON: is the API URL Slack's Web API", CheckAPIURL},
		{"no API there", func(f *fakeslack.Server) Destination { return tokenTo(f, fakeslack.Channel) },
			&fakeslack.Answer{Status: 404, Body: "404 page not found"}, "chat.postMessage answered HTTP 404: is the API URL Slack's Web API (https://slack.com/api/)?", CheckAPIURL},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := fakeslack.Start()
			defer f.Close()
			if c.answer != nil {
				f.Queue(*c.answer)
			}
			var waits []time.Duration
			_, err := poster(c.dest(f), &waits).Post(context.Background(), []Message{msg("llama", 2)})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T)", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error:\n%s\nwant it to hold:\n%s", err, c.want)
			}
			if e.Check != c.check || e.Tries != 1 || len(waits) != 0 || len(f.Requests()) != 1 {
				t.Errorf("check %v tries %d waits %v\n%s", e.Check, e.Tries, waits, f.Summary())
			}
			noSecret(t, err)
		})
	}
}

// A failing thread reply says which one; the main message stays posted.
func TestWebAPIReplyRefused(t *testing.T) {
	t.Parallel()
	f := fakeslack.Start()
	defer f.Close()
	f.Queue(fakeslack.Answer{Status: 200, Body: `{"ok":true,"channel":"C0LLMDOC","ts":"1.000001"}`})
	var waits []time.Duration
	res, err := poster(tokenTo(f, fakeslack.Channel), &waits).Post(context.Background(), []Message{msg("llama", 2)})
	// The queued answer gave a ts the fake never issued: the reply's
	// thread is not found.
	if err == nil || !strings.Contains(err.Error(), "posting llama to Slack (thread reply 1): chat.postMessage answered thread_not_found") {
		t.Fatalf("error: %v", err)
	}
	if len(res) != 1 || res[0].TS != "1.000001" || res[0].Replies != 0 {
		t.Errorf("results: %+v", res)
	}
}

// 5xx and 429 are tried again: 1 s then 2 s after a server error, what
// Retry-After says after a rate limit. Nobody sleeps.
func TestRetries(t *testing.T) {
	t.Parallel()
	a500 := fakeslack.Answer{Status: 500, Body: "internal error"}
	a503 := fakeslack.Answer{Status: 503, Body: ""}
	a429 := func(after string) fakeslack.Answer {
		return fakeslack.Answer{Status: 429, Body: `{"ok":false,"error":"ratelimited"}`, RetryAfter: after}
	}
	for _, c := range []struct {
		name    string
		answers []fakeslack.Answer
		waits   []time.Duration
		err     string
	}{
		{"500 then ok", []fakeslack.Answer{a500}, []time.Duration{time.Second}, ""},
		{"503 twice then ok", []fakeslack.Answer{a503, a503}, []time.Duration{time.Second, 2 * time.Second}, ""},
		{"429 Retry-After 1", []fakeslack.Answer{a429("1")}, []time.Duration{time.Second}, ""},
		{"429 Retry-After 7", []fakeslack.Answer{a429("7")}, []time.Duration{7 * time.Second}, ""},
		{"429 without Retry-After", []fakeslack.Answer{a429("")}, []time.Duration{time.Second}, ""},
		{"429 Retry-After not a number", []fakeslack.Answer{a429("soon")}, []time.Duration{time.Second}, ""},
		{"three 503", []fakeslack.Answer{a503, a503, a503}, []time.Duration{time.Second, 2 * time.Second},
			"answered HTTP 503: Slack had trouble; try again later (3 tries)"},
		{"429 longer than the longest wait", []fakeslack.Answer{a429("120")}, nil,
			"answered HTTP 429|: Slack limits posting to about one message a second; gave up: Slack asked to wait 2m0s, longer than 30s"},
		{"400 is not retried", []fakeslack.Answer{{Status: 400, Body: "invalid_payload"}}, nil, "answered HTTP 400"},
	} {
		for _, via := range []Via{Webhook, WebAPI} {
			t.Run(c.name+"/"+string(via), func(t *testing.T) {
				t.Parallel()
				f := fakeslack.Start()
				defer f.Close()
				f.Queue(c.answers...)
				d := webhookTo(f)
				if via == WebAPI {
					d = tokenTo(f, fakeslack.Channel)
				}
				var waits []time.Duration
				res, err := poster(d, &waits).Post(context.Background(), []Message{msg("llama", 0)})
				if fmt.Sprint(waits) != fmt.Sprint(c.waits) {
					t.Errorf("waited %v, want %v", waits, c.waits)
				}
				if c.err == "" {
					if err != nil || len(res) != 1 || len(f.Accepted()) != 1 {
						t.Fatalf("%v %v\n%s", err, res, f.Summary())
					}
					return
				}
				if err == nil {
					t.Fatalf("no error, want %q", c.err)
				}
				for _, w := range strings.Split(c.err, "|") {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %v, want %q", err, w)
					}
				}
				noSecret(t, err)
			})
		}
	}
}

// A wait that would end past the context's deadline is not waited.
func TestRetryStopsAtTheDeadline(t *testing.T) {
	t.Parallel()
	f := fakeslack.Start()
	defer f.Close()
	f.Queue(fakeslack.Answer{Status: 429, RetryAfter: "10"})
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	defer cancel()
	var waits []time.Duration
	p := poster(webhookTo(f), &waits)
	// The fake clock puts the deadline 5 s away.
	dl, _ := ctx.Deadline()
	p.Now = func() time.Time { return dl.Add(-5 * time.Second) }
	_, err := p.Post(ctx, []Message{msg("llama", 0)})
	if err == nil || !strings.Contains(err.Error(), "gave up: the next try, 10s on, would come after the deadline") || len(waits) != 0 {
		t.Fatalf("error %v, waits %v", err, waits)
	}
}

// A Slack that never answers ends with the context: one line, no secret.
func TestContextDeadline(t *testing.T) {
	t.Parallel()
	for _, via := range []Via{Webhook, WebAPI} {
		t.Run(string(via), func(t *testing.T) {
			t.Parallel()
			f := fakeslack.Start()
			defer f.Close()
			f.Queue(fakeslack.Answer{Hang: true})
			d := webhookTo(f)
			if via == WebAPI {
				d = tokenTo(f, fakeslack.Channel)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			var waits []time.Duration
			_, err := poster(d, &waits).Post(ctx, []Message{msg("llama", 0)})
			if err == nil || !strings.Contains(err.Error(), "no answer from") || !strings.Contains(err.Error(), "in time (context deadline exceeded)") {
				t.Fatalf("error: %v", err)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v is not the deadline", err)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			noSecret(t, err)
		})
	}
}

// Nothing listening: the error names neither the webhook's URL nor the token.
func TestUnreachableShowsNoSecret(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	for _, d := range []Destination{
		{WebhookURL: base + "/services/T0LLMDOC/B0LLMDOC/" + fakeslack.HookSecret},
		{WebhookURL: strings.Replace(base, "://", "://ops:"+fakeslack.HookSecret+"@", 1) + "/hook?token=" + fakeslack.HookSecret},
		{Token: fakeslack.Token, Channel: fakeslack.Channel, APIURL: base + "/api"},
	} {
		var waits []time.Duration
		_, err := poster(d, &waits).Post(context.Background(), []Message{msg("llama", 0)})
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), "cannot reach") || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("error: %v", err)
		}
		if want := map[Via]Setting{Webhook: CheckWebhook, WebAPI: CheckAPIURL}[d.Via()]; e.Check != want {
			t.Errorf("check %v, want %v", e.Check, want)
		}
		noSecret(t, err)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    Destination
		want Problem
	}{
		{Destination{}, NoDestination},
		{Destination{APIURL: DefaultAPIURL, Channel: "C1"}, NoDestination},
		{Destination{WebhookURL: "https://hooks.slack.com/services/T/B/x", Token: "xoxb-1"}, BothDestinations},
		{Destination{Token: "xoxb-1"}, TokenWithoutChannel},
		{Destination{WebhookURL: "https://hooks.slack.com/services/T/B/x", Channel: "C1"}, ChannelWithWebhook},
		{Destination{WebhookURL: "hooks.slack.com/services/T/B/x"}, BadWebhookURL},
		{Destination{Token: "xoxb-1", Channel: "C1", APIURL: "slack.com/api"}, BadAPIURL},
		{Destination{WebhookURL: "https://hooks.slack.com/services/T/B/x"}, 0},
		{Destination{Token: "xoxb-1", Channel: "C1"}, 0},
	} {
		err := c.d.Validate()
		var ce *ConfigError
		switch {
		case c.want == 0 && err != nil:
			t.Errorf("%+v: %v", c.d, err)
		case c.want != 0 && (!errors.As(err, &ce) || ce.Problem != c.want):
			t.Errorf("%+v: %v, want problem %d", c.d, err, c.want)
		case err != nil && strings.Contains(err.Error(), "hooks.slack.com/services/T/B/x"):
			t.Errorf("the error shows the URL: %v", err)
		}
	}
	// Post refuses the same before sending anything.
	if _, err := Post(context.Background(), Destination{Token: "xoxb-1"}, []Message{msg("x", 0)}); err == nil {
		t.Error("posted without a channel")
	}
}

// The webhook's URL, its path and its secret segment are masked wherever
// they appear, as is the token.
func TestAddSecrets(t *testing.T) {
	t.Parallel()
	d := Destination{WebhookURL: "https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/abcdefghijklmnopqrstuvwx", Token: "xoxb-123-456-abcdef",
		APIURL: "https://ops:pw-proxy-91ab@proxy.example.com/slack/api/?key=qs-key-7d2e"}
	s := &redact.Secrets{}
	d.AddSecrets(s)
	text := "POST " + d.WebhookURL + " path /services/T0AB12CD3/B0EF45GH6/abcdefghijklmnopqrstuvwx secret abcdefghijklmnopqrstuvwx token " + d.Token + " api pw-proxy-91ab qs-key-7d2e"
	got := s.String(text)
	for _, x := range []string{"abcdefghijklmnopqrstuvwx", "xoxb-123-456-abcdef", "pw-proxy-91ab", "qs-key-7d2e"} {
		if strings.Contains(got, x) {
			t.Errorf("%s not masked: %s", x, got)
		}
	}
	if !strings.HasPrefix(got, "POST xxxxx path xxxxx secret xxxxx token xxxxx api") {
		t.Errorf("more than the secrets masked: %s", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"1": time.Second, "30": 30 * time.Second, "": 0, "-3": 0, "1.5": 0, "soon": 0,
		"Thu, 01 Jan 2026 00:00:09 GMT": 9 * time.Second, "Wed, 31 Dec 2025 23:59:00 GMT": 0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
}

// The fake holds messages to Slack's limits: one that breaks them is
// refused, and the poster says the message is at fault.
func TestFakeRefusesMessagesOverTheLimits(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 151)
	over := func(blocks ...slack.Block) Message {
		return Message{Target: "llama", Main: slack.WebhookMessage{Text: "t", Blocks: &slack.Blocks{BlockSet: blocks}}}
	}
	section := func(n int) slack.Block {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("y", n), false, false), nil, nil)
	}
	many := make([]slack.Block, 51)
	for i := range many {
		many[i] = slack.NewDividerBlock()
	}
	for name, m := range map[string]Message{
		"header":   over(slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, long, false, false))),
		"section":  over(section(3001)),
		"blocks":   over(many...),
		"total":    over(section(3000), section(3000), section(3000), section(3000), section(100)),
		"no text":  {Target: "llama", Main: slack.WebhookMessage{Blocks: &slack.Blocks{BlockSet: []slack.Block{section(10)}}}},
		"no words": {Target: "llama"},
	} {
		for _, dest := range []func(*fakeslack.Server) Destination{webhookTo, func(f *fakeslack.Server) Destination { return tokenTo(f, fakeslack.Channel) }} {
			f := fakeslack.Start()
			var waits []time.Duration
			_, err := poster(dest(f), &waits).Post(context.Background(), []Message{m})
			var e *Error
			if !errors.As(err, &e) || e.Check != CheckMessage {
				t.Errorf("%s: %v\n%s", name, err, f.Summary())
			}
			f.Close()
		}
	}
}
