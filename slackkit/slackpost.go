// Package slackkit is llmdoctor's one Slack kit: the mrkdwn escaper and
// Slack's limits on a message (mrkdwn.go), which every renderer and front
// end uses, and the one poster with retries. It posts rendered messages
// (Message):
// through an incoming webhook (each target's main message), or with a bot
// token through the Web API's chat.postMessage (each main message to the
// channel, its details as replies in the message's thread).
//
// It handles both of Slack's answer styles: a webhook answers HTTP 200
// with the plain text "ok" and anything else is an error (with a status
// code and an error code as text); the Web API answers JSON, and a refused
// message is "ok":false with an error code under HTTP 200. Server errors
// (5xx) and rate limits (429, honouring Retry-After) are retried, a few
// times and never past the context's deadline. No error it returns holds
// the webhook URL or the token.
//
// The same poster answers a slash command or a button at its
// response_url (Respond). It imports no renderer: the report package
// imports it.
package slackkit

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/llmdoctor/llmdoctor/internal/redact"
)

// DefaultAPIURL is the Slack Web API's base. GovSlack's is
// https://slack-gov.com/api/; a proxy or a test gives its own.
const DefaultAPIURL = "https://slack.com/api/"

// Destination is where messages go: an incoming webhook, or a bot token
// and a channel.
type Destination struct {
	// WebhookURL is an incoming webhook (https://hooks.slack.com/services/…).
	// It posts to the channel it was created for.
	WebhookURL string
	// Token is a bot token (xoxb-…) with the chat:write scope; Channel the
	// ID of the channel to post to (C…).
	Token, Channel string
	// APIURL is the Web API's base (DefaultAPIURL when empty), as
	// Alertmanager's api_url: a proxy, GovSlack, a test.
	APIURL string
	// Client sends the requests; a client with a 30 s timeout when nil.
	Client *http.Client
}

// Via names how a message is posted.
type Via string

// The two ways of posting.
const (
	Webhook Via = "incoming webhook"
	WebAPI  Via = "chat.postMessage"
	// ResponseURL answers a slash command or a button (Respond).
	ResponseURL Via = "response_url"
)

// Via says how the destination posts: by webhook when it has a URL.
func (d Destination) Via() Via {
	if d.WebhookURL != "" {
		return Webhook
	}
	return WebAPI
}

// Problem is what is wrong with a destination as given.
type Problem int

// Problems of a destination.
const (
	// NoDestination: neither a webhook nor a token.
	NoDestination Problem = iota + 1
	// BothDestinations: a webhook and a token.
	BothDestinations
	// TokenWithoutChannel: a token, but no channel to post to.
	TokenWithoutChannel
	// ChannelWithWebhook: a channel given with a webhook, which cannot
	// post anywhere but the channel it was created for.
	ChannelWithWebhook
	// BadWebhookURL: the webhook is not an http(s) URL.
	BadWebhookURL
	// BadAPIURL: the API base is not an http(s) URL.
	BadAPIURL
)

// ConfigError is a destination that cannot be posted to as given. Its
// text names no setting's value.
type ConfigError struct{ Problem Problem }

func (e *ConfigError) Error() string {
	switch e.Problem {
	case NoDestination:
		return "no Slack destination: give an incoming webhook URL, or a bot token and a channel"
	case BothDestinations:
		return "two Slack destinations: give an incoming webhook URL or a bot token, not both"
	case TokenWithoutChannel:
		return "a bot token posts to a channel: give the channel's ID (C…)"
	case ChannelWithWebhook:
		return "an incoming webhook posts to the channel it was created for: a channel applies to a bot token"
	case BadWebhookURL:
		return "the incoming webhook is not an http(s) URL like https://hooks.slack.com/services/…"
	case BadAPIURL:
		return "the Slack API URL is not an http(s) URL like " + DefaultAPIURL
	}
	return fmt.Sprintf("Slack destination problem %d", int(e.Problem))
}

// Validate checks the destination without sending anything.
func (d Destination) Validate() error {
	switch {
	case d.WebhookURL == "" && d.Token == "":
		return &ConfigError{NoDestination}
	case d.WebhookURL != "" && d.Token != "":
		return &ConfigError{BothDestinations}
	case d.WebhookURL != "" && d.Channel != "":
		return &ConfigError{ChannelWithWebhook}
	case d.Token != "" && d.Channel == "":
		return &ConfigError{TokenWithoutChannel}
	case d.WebhookURL != "" && !httpURL(d.WebhookURL):
		return &ConfigError{BadWebhookURL}
	case d.Token != "" && d.APIURL != "" && !httpURL(d.APIURL):
		return &ConfigError{BadAPIURL}
	}
	return nil
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// AddSecrets records the destination's credentials: the webhook URL (its
// path is the secret), the token, and what the API URL carries.
func (d Destination) AddSecrets(s *redact.Secrets) {
	if d.WebhookURL != "" {
		s.Add(d.WebhookURL)
		s.AddURL(d.WebhookURL)
		if u, err := url.Parse(d.WebhookURL); err == nil {
			// The path alone, as a proxy's error may show it, and its long
			// segments (the secret of hooks.slack.com/services/T…/B…/secret).
			if len(u.Path) > 1 {
				s.Add(u.Path)
			}
			for _, seg := range strings.Split(u.Path, "/") {
				if len(seg) >= minSecretSegment {
					s.Add(seg)
				}
			}
		}
	}
	s.Add(d.Token)
	s.AddURL(d.APIURL)
}

// minSecretSegment is the shortest webhook path segment taken for a
// secret: Slack's are 24 characters; its team and bot IDs (T…, B…) and
// "services" are shorter.
const minSecretSegment = 16

// apiURL is the Web API base, ending in a slash as slack-go wants it.
func (d Destination) apiURL() string {
	u := d.APIURL
	if u == "" {
		u = DefaultAPIURL
	}
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// Result is one target's main message, posted.
type Result struct {
	Target string
	Via    Via
	// Channel and TS are where the main message is (Web API only: a
	// webhook answers neither).
	Channel, TS string
	// Replies counts the details posted in the message's thread.
	Replies int
	// Dropped counts the details left out: a webhook cannot start a
	// thread (it answers no ts to reply to), which a front end should say
	// once.
	Dropped int
}

// Poster posts messages to a destination. Its zero retry settings are
// the defaults.
type Poster struct {
	Dest Destination
	// Tries is how many times one message is sent at most (3 when zero).
	Tries int
	// MaxWait is the longest wait between tries, Retry-After included;
	// a longer wait ends the tries (30 s when zero).
	MaxWait time.Duration
	// Sleep waits d or until ctx ends; Now tells the time, to weigh a wait
	// against ctx's deadline. Tests replace both.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
}

// Post posts msgs to d with the default retry settings.
func Post(ctx context.Context, d Destination, msgs []Message) ([]Result, error) {
	return (&Poster{Dest: d}).Post(ctx, msgs)
}

// Post posts each message in turn: its main message, then (with a token)
// its details as replies in the main message's thread. It stops at the
// first message Slack refuses, and returns what was posted before it with
// an *Error.
func (p *Poster) Post(ctx context.Context, msgs []Message) ([]Result, error) {
	sec := &redact.Secrets{}
	p.Dest.AddSecrets(sec)
	if err := p.Dest.Validate(); err != nil {
		return nil, err
	}
	var out []Result
	for _, m := range msgs {
		r := Result{Target: m.Target, Via: p.Dest.Via()}
		if r.Via == Webhook {
			main := m.Main
			main.Channel, main.ThreadTimestamp = "", ""
			if err := p.retry(ctx, sec, m.Target, 0, func(ctx context.Context) *Error { return p.webhook(ctx, &main) }); err != nil {
				return out, err
			}
			r.Dropped = len(m.Details)
			out = append(out, r)
			continue
		}
		err := p.retry(ctx, sec, m.Target, 0, func(ctx context.Context) *Error {
			var e *Error
			r.Channel, r.TS, e = p.postMessage(ctx, m.Main, "")
			return e
		})
		if err != nil {
			return out, err
		}
		if r.TS == "" && len(m.Details) > 0 {
			out = append(out, r)
			return out, (&Error{Via: WebAPI, Target: m.Target, Status: http.StatusOK, Detail: "ok without the message's ts, so its details cannot go in its thread", Check: CheckAPIURL}).masked(sec)
		}
		for i, d := range m.Details {
			err := p.retry(ctx, sec, m.Target, i+1, func(ctx context.Context) *Error {
				_, _, e := p.postMessage(ctx, d, r.TS)
				return e
			})
			if err != nil {
				out = append(out, r)
				return out, err
			}
			r.Replies++
		}
		out = append(out, r)
	}
	return out, nil
}

// Respond posts m to a slash command's or a button's response_url, with
// the poster's retries (Dest gives the HTTP client only). The URL lets
// anyone post as the app for 30 minutes: no error holds it. Slack takes a
// response_url 5 times; counting them is the caller's.
func (p *Poster) Respond(ctx context.Context, responseURL string, m slack.WebhookMessage) error {
	sec := &redact.Secrets{}
	sec.Add(responseURL)
	sec.AddURL(responseURL)
	if err := p.retry(ctx, sec, "", 0, func(ctx context.Context) *Error { return p.sendJSON(ctx, ResponseURL, responseURL, &m) }); err != nil {
		return err
	}
	return nil
}

func (p *Poster) client() *http.Client {
	if p.Dest.Client != nil {
		return p.Dest.Client
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// retry sends until Slack takes the message, a try fails for good, the
// tries run out or ctx ends.
func (p *Poster) retry(ctx context.Context, sec *redact.Secrets, target string, reply int, send func(context.Context) *Error) error {
	tries := p.Tries
	if tries <= 0 {
		tries = 3
	}
	maxWait := p.MaxWait
	if maxWait <= 0 {
		maxWait = 30 * time.Second
	}
	sleep, now := p.Sleep, p.Now
	if sleep == nil {
		sleep = sleepCtx
	}
	if now == nil {
		now = time.Now
	}
	for try := 1; ; try++ {
		e := send(ctx)
		if e == nil {
			return nil
		}
		e.Target, e.Reply, e.Tries = target, reply, try
		if ctx.Err() != nil && e.Err == nil {
			e.Err = ctx.Err()
		}
		wait, again := e.wait(try)
		if !again || try >= tries || ctx.Err() != nil {
			return e.masked(sec)
		}
		if wait > maxWait {
			e.gaveUp = fmt.Sprintf("Slack asked to wait %s, longer than %s", wait, maxWait)
			return e.masked(sec)
		}
		if dl, ok := ctx.Deadline(); ok && now().Add(wait).After(dl) {
			e.gaveUp = fmt.Sprintf("the next try, %s on, would come after the deadline", wait)
			return e.masked(sec)
		}
		if err := sleep(ctx, wait); err != nil {
			e.Err = err
			return e.masked(sec)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// wait says whether a failed try is worth another and how long to wait
// first: Retry-After for 429 (1 s without one), 1 s then 2 s for 5xx.
func (e *Error) wait(try int) (time.Duration, bool) {
	switch {
	case e.Status == http.StatusTooManyRequests:
		if e.RetryAfter > 0 {
			return e.RetryAfter, true
		}
		return time.Second, true
	case e.Status >= 500:
		return time.Duration(1<<(try-1)) * time.Second, true
	}
	return 0, false
}
