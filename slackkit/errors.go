package slackkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/redact"
)

// Setting is what a failed post says to check; a front end words it as
// its own setting (a flag, an environment variable, a config key).
type Setting int

// Settings a failure points at.
const (
	CheckNothing Setting = iota
	// CheckWebhook: the incoming webhook's URL.
	CheckWebhook
	// CheckToken: the bot token and its scopes.
	CheckToken
	// CheckChannel: the channel, and the app's membership of it.
	CheckChannel
	// CheckAPIURL: the Web API's base URL.
	CheckAPIURL
	// CheckMessage: Slack refused the message itself, which is the
	// renderer's to fix.
	CheckMessage
)

// Error is a message Slack did not take. Its text is one line and holds
// neither the webhook URL nor the token.
type Error struct {
	Via Via
	// Target is the message's target; Reply the thread reply's number
	// from 1, or 0 for the main message.
	Target string
	Reply  int
	// Tries is how many times the message was sent.
	Tries int
	// Status is the HTTP status of the last answer, 0 when there was none.
	Status int
	// Code is Slack's error code (channel_not_found, invalid_payload, …),
	// empty when the answer had none.
	Code string
	// Detail says what was wrong with an answer that carried no code.
	Detail string
	// RetryAfter is what a 429 asked to wait.
	RetryAfter time.Duration
	// Channel is where the message was going (Web API).
	Channel string
	// Err is why no answer came: the connection or the context. It names
	// no URL.
	Err error
	// Check is the setting to look at.
	Check Setting

	gaveUp string
	sec    *redact.Secrets
}

func (e *Error) Unwrap() error { return e.Err }

// masked makes the error mask sec's secrets in its text.
func (e *Error) masked(sec *redact.Secrets) *Error {
	e.sec = sec
	e.Explain()
	return e
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("posting ")
	if e.Target != "" {
		b.WriteString(e.Target + " ")
	}
	b.WriteString("to Slack")
	if e.Reply > 0 {
		fmt.Fprintf(&b, " (thread reply %d)", e.Reply)
	}
	b.WriteString(": ")
	via := string(e.Via)
	switch e.Via {
	case Webhook:
		via = "the incoming webhook"
	case ResponseURL:
		via = "the command's response_url"
	}
	switch {
	case e.Err != nil && e.Status == 0 && isTimeout(e.Err):
		fmt.Fprintf(&b, "no answer from %s in time (%v)", via, e.Err)
	case e.Err != nil && e.Status == 0:
		fmt.Fprintf(&b, "cannot reach %s: %v", via, e.Err)
	default:
		fmt.Fprintf(&b, "%s answered", via)
		if e.Status != 0 && (e.Status != http.StatusOK || e.Via == Webhook || e.Code == "") {
			fmt.Fprintf(&b, " HTTP %d", e.Status)
		}
		if e.Status == http.StatusTooManyRequests && e.Code == "" {
			b.WriteString(" (rate limited)")
		}
		if e.Code != "" {
			b.WriteString(" " + e.Code)
		}
		if e.Detail != "" {
			b.WriteString(" " + e.Detail)
		}
		if h := e.hint(); h != "" {
			b.WriteString(": " + h)
		}
	}
	if e.Tries > 1 {
		fmt.Fprintf(&b, " (%d tries)", e.Tries)
	}
	if e.gaveUp != "" {
		b.WriteString("; gave up: " + e.gaveUp)
	}
	if e.Err != nil && e.Status != 0 {
		fmt.Fprintf(&b, "; %v", e.Err)
	}
	// One line, with every secret masked.
	return e.sec.String(strings.Join(strings.Fields(b.String()), " "))
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// hint says what a code means and what to do, in Slack's terms, and sets
// what to check.
func (e *Error) hint() string {
	ch := "the channel"
	if e.Channel != "" {
		ch = "channel " + e.Channel
	}
	type h struct {
		say   string
		check Setting
	}
	var hints map[string]h
	switch e.Via {
	case ResponseURL:
		hints = map[string]h{
			"expired_url": {"the command is over 30 minutes old: ask again", CheckNothing},
			"used_url":    {"Slack takes 5 answers to one command: ask again", CheckNothing},
		}
	case Webhook:
		hints = map[string]h{
			"no_service":                        {"the webhook was removed or disabled, or its URL is wrong", CheckWebhook},
			"no_active_hooks":                   {"the webhook's app has no active webhooks: create a new one", CheckWebhook},
			"invalid_token":                     {"the webhook's URL is no longer valid: create a new webhook", CheckWebhook},
			"action_prohibited":                 {"a workspace admin stops posting to the webhook's channel", CheckWebhook},
			"channel_not_found":                 {"the webhook's channel was deleted: create a webhook for another channel", CheckWebhook},
			"channel_is_archived":               {"the webhook's channel is archived", CheckWebhook},
			"posting_to_general_channel_denied": {"only admins may post to the webhook's channel", CheckWebhook},
			"user_not_found":                    {"the webhook's user or channel is gone: create a new webhook", CheckWebhook},
		}
	default:
		hints = map[string]h{
			"not_in_channel":         {"the app is not a member of " + ch + ": invite it (/invite @your-app) or give it the chat:write.public scope", CheckChannel},
			"channel_not_found":      {"the token sees no " + ch + ": give the channel's ID (C…, at the bottom of its details), not its name; a private channel needs the app invited", CheckChannel},
			"is_archived":            {ch + " is archived", CheckChannel},
			"restricted_action":      {"a workspace setting stops the app posting in " + ch, CheckChannel},
			"not_authed":             {"Slack got no token", CheckToken},
			"invalid_auth":           {"Slack refused the token: give the app's bot token (xoxb-…) from OAuth & Permissions", CheckToken},
			"account_inactive":       {"the token's app or user is deactivated", CheckToken},
			"token_revoked":          {"the token was revoked: reinstall the app and use its new bot token", CheckToken},
			"token_expired":          {"the token expired: use a bot token without expiry or refresh it", CheckToken},
			"missing_scope":          {"the token lacks the chat:write scope: add it under OAuth & Permissions and reinstall the app", CheckToken},
			"not_allowed_token_type": {"chat.postMessage takes a bot token (xoxb-…)", CheckToken},
			"thread_not_found":       {"the thread's main message is gone", CheckNothing},
			"unknown_method":         {"the API URL does not serve chat.postMessage: is it Slack's Web API (" + DefaultAPIURL + ")?", CheckAPIURL},
		}
	}
	switch e.Code {
	case "invalid_payload", "no_text", "missing_text", "too_many_attachments", "invalid_attachments", "invalid_blocks",
		"invalid_blocks_format", "msg_too_long", "msg_blocks_too_long", "invalid_arguments", "invalid_form_data", "invalid_json":
		e.Check = CheckMessage
		return "Slack refused the message itself, a fault in llmdoctor's Slack report: please report it"
	}
	if x, ok := hints[e.Code]; ok {
		e.Check = x.check
		return x.say
	}
	switch {
	case e.Status == http.StatusTooManyRequests:
		return "Slack limits posting to about one message a second"
	case e.Status >= 500:
		return "Slack had trouble; try again later"
	case e.Via == ResponseURL:
		return ""
	case e.Via == Webhook && e.Status == http.StatusOK:
		e.Check = CheckWebhook
		return `not Slack's "ok": is the URL an incoming webhook (https://hooks.slack.com/services/…)?`
	case e.Code != "" && e.Via == WebAPI:
		return "see https://docs.slack.dev/reference/methods/chat.postMessage#errors"
	case e.Code != "":
		return "see https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks#handling_errors"
	case e.Via == Webhook:
		e.Check = CheckWebhook
		return "is the URL an incoming webhook (https://hooks.slack.com/services/…)?"
	default:
		e.Check = CheckAPIURL
		return "is the API URL Slack's Web API (" + DefaultAPIURL + ")?"
	}
}

// Explain fills Check (what Error would say to look at) and returns it.
func (e *Error) Explain() Setting {
	e.hint()
	if e.Check == CheckNothing && e.Err != nil && e.Status == 0 && e.Via != ResponseURL {
		if e.Via == Webhook {
			e.Check = CheckWebhook
		} else {
			e.Check = CheckAPIURL
		}
	}
	return e.Check
}

var codeRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,79}$`)

// answerCode reads an error code from an answer's body: Slack's webhook
// answers one as plain text. Anything else is described, not quoted: a
// proxy's page may echo the URL.
func answerCode(body []byte, contentType string) (code, detail string) {
	t := strings.TrimSpace(string(body))
	if codeRe.MatchString(t) {
		return t, ""
	}
	// The Web API's style, which a rate limit may answer with.
	var v struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil && !v.OK && codeRe.MatchString(v.Error) {
		return v.Error, ""
	}
	if t == "" {
		return "", "with an empty body"
	}
	ct := contentType
	if i := strings.Index(ct, ";"); i >= 0 {
		ct = ct[:i]
	}
	if ct == "" {
		ct = "text"
	}
	return "", fmt.Sprintf("with %d bytes of %s", len(body), ct)
}

// transportError keeps what an error of the HTTP client says without the
// URL it was sending to: the webhook's URL is its secret.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// parseRetryAfter reads Retry-After: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var secs int
	if _, err := fmt.Sscanf(v, "%d", &secs); err == nil && fmt.Sprint(secs) == v {
		if secs < 0 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
