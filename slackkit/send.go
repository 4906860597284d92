package slackkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/slack-go/slack"
)

// webhook posts one message to the incoming webhook. slack-go's
// PostWebhookCustomHTTPContext would take any HTTP 200 for success and
// throw away the error code a refusal carries (invalid_payload,
// no_service), so the request is sent here and the answer read whole.
func (p *Poster) webhook(ctx context.Context, m *slack.WebhookMessage) *Error {
	return p.sendJSON(ctx, Webhook, p.Dest.WebhookURL, m)
}

// sendJSON posts m as JSON to an incoming webhook or a response_url, once.
// A webhook takes a message with HTTP 200 and the text "ok"; a
// response_url with HTTP 200 and "ok" as text or JSON ({"ok":true}), or an
// empty body.
func (p *Poster) sendJSON(ctx context.Context, via Via, u string, m *slack.WebhookMessage) *Error {
	check := CheckWebhook
	if via != Webhook {
		check = CheckNothing
	}
	body, err := json.Marshal(m)
	if err != nil {
		return &Error{Via: via, Err: fmt.Errorf("encoding the message: %w", err), Check: CheckMessage}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return &Error{Via: via, Err: errors.New("the URL cannot be requested"), Check: check}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client().Do(req)
	if err != nil {
		return &Error{Via: via, Err: transportError(err)}
	}
	defer func() { _ = resp.Body.Close() }() // read only
	// Slack's answers are a few bytes; a proxy's error page need not be
	// read to the end.
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return &Error{Via: via, Status: resp.StatusCode, Err: transportError(err)}
	}
	if resp.StatusCode == http.StatusOK && taken(via, answer) {
		return nil
	}
	e := &Error{Via: via, Status: resp.StatusCode}
	e.Code, e.Detail = answerCode(answer, resp.Header.Get("Content-Type"))
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		// What a rate limit or a server error sends is no help.
		e.Detail = ""
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), p.now())
	}
	return e
}

// taken says whether an HTTP 200 answer is Slack taking the message.
func taken(via Via, answer []byte) bool {
	t := bytes.TrimSpace(answer)
	if string(t) == "ok" {
		return true
	}
	if via == Webhook {
		return false
	}
	var v struct {
		OK *bool `json:"ok"`
	}
	if len(t) == 0 {
		return true
	}
	return json.Unmarshal(t, &v) == nil && (v.OK == nil || *v.OK)
}

func (p *Poster) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// recorder is the HTTP client slack-go sends through, keeping the status
// and headers of the answer: slack-go's errors do not say a 429 without a
// usable Retry-After from another failure.
type recorder struct {
	c      *http.Client
	status int
	header http.Header
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.c.Do(req)
	if err == nil {
		r.status, r.header = resp.StatusCode, resp.Header
	}
	return resp, err
}

// postMessage posts one message with chat.postMessage through slack-go,
// in the thread of threadTS when it is set, and returns where it went.
func (p *Poster) postMessage(ctx context.Context, m slack.WebhookMessage, threadTS string) (channel, ts string, _ *Error) {
	rec := &recorder{c: p.client()}
	api := slack.New(p.Dest.Token, slack.OptionAPIURL(p.Dest.apiURL()), slack.OptionHTTPClient(rec))
	channel, ts, err := api.PostMessageContext(ctx, p.Dest.Channel, msgOptions(m, threadTS)...)
	if err == nil {
		return channel, ts, nil
	}
	e := &Error{Via: WebAPI, Channel: p.Dest.Channel, Status: rec.status}
	var se slack.SlackErrorResponse
	switch {
	case rec.status == 0:
		e.Err = transportError(err)
	case errors.As(err, &se):
		e.Code = se.Err
		if se.Needed != "" {
			e.Detail = "(needs " + se.Needed + ")"
		}
	case rec.status == http.StatusTooManyRequests:
		e.RetryAfter = parseRetryAfter(rec.header.Get("Retry-After"), p.now())
	case rec.status == http.StatusOK:
		e.Detail = "with an answer that is not Slack's JSON"
	}
	return "", "", e
}

// msgOptions turns a rendered message into chat.postMessage's options.
// The channel is the destination's, whatever the message says.
func msgOptions(m slack.WebhookMessage, threadTS string) []slack.MsgOption {
	opts := []slack.MsgOption{slack.MsgOptionText(m.Text, false)}
	if m.Blocks != nil && len(m.Blocks.BlockSet) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(m.Blocks.BlockSet...))
	}
	if len(m.Attachments) > 0 {
		opts = append(opts, slack.MsgOptionAttachments(m.Attachments...))
	}
	if threadTS == "" {
		threadTS = m.ThreadTimestamp
	}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
		if m.ReplyBroadcast {
			opts = append(opts, slack.MsgOptionBroadcast())
		}
	}
	if m.Username != "" {
		opts = append(opts, slack.MsgOptionUsername(m.Username))
	}
	if m.IconEmoji != "" {
		opts = append(opts, slack.MsgOptionIconEmoji(m.IconEmoji))
	}
	if m.IconURL != "" {
		opts = append(opts, slack.MsgOptionIconURL(m.IconURL))
	}
	if m.UnfurlLinks != nil {
		if *m.UnfurlLinks {
			opts = append(opts, slack.MsgOptionEnableLinkUnfurl())
		} else {
			opts = append(opts, slack.MsgOptionDisableLinkUnfurl())
		}
	}
	if m.UnfurlMedia != nil && !*m.UnfurlMedia {
		opts = append(opts, slack.MsgOptionDisableMediaUnfurl())
	}
	if m.Parse != "" {
		opts = append(opts, slack.MsgOptionParse(m.Parse == "full"))
	}
	return opts
}
