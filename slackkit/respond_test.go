package slackkit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a < b && c > d":     "a &lt; b &amp;&amp; c &gt; d",
		"<!channel>":         "&lt;!channel&gt;",
		"<https://x|click>":  "&lt;https://x|click&gt;",
		"llama-3 *bold* _i_": "llama-3 *bold* _i_",
		"&amp;":              "&amp;amp;",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	text := func(n int) slack.Block {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("é", n), false, false), nil, nil)
	}
	hdr := slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "héader", false, false))
	ctx := slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, "ctx", false, false))
	if got := BlockChars(hdr, text(10), ctx, slack.NewDividerBlock()); got != 6+10+3 {
		t.Errorf("BlockChars = %d, want 19 (characters, not bytes; a divider has none)", got)
	}
	full := []slack.Block{text(3000), text(3000), text(3000), text(2990)}
	if !Budget(full, 1, 10) || Budget(full, 1, 11) {
		t.Errorf("Budget at %d characters: want room for 10 more, not 11", BlockChars(full...))
	}
	many := make([]slack.Block, BlocksMax-1)
	for i := range many {
		many[i] = slack.NewDividerBlock()
	}
	if !Budget(many, 1, 0) || Budget(many, 2, 0) {
		t.Errorf("Budget at %d blocks: want room for 1 more, not 2", len(many))
	}
}

// Respond takes Slack's answers of a response_url ("ok", {"ok":true}, an
// empty 200), retries a rate limit after its Retry-After and a server
// error, stops at a refusal, and never shows the URL.
func TestRespond(t *testing.T) {
	t.Parallel()
	type answer struct {
		status int
		header string
		body   string
	}
	for name, c := range map[string]struct {
		answers []answer
		waits   []time.Duration
		code    string // "" for taken
	}{
		"ok text":             {answers: []answer{{200, "", "ok"}}},
		"ok json":             {answers: []answer{{200, "", `{"ok":true}`}}},
		"empty":               {answers: []answer{{200, "", ""}}},
		"rate limited":        {answers: []answer{{429, "3", ""}, {200, "", "ok"}}, waits: []time.Duration{3 * time.Second}},
		"server error":        {answers: []answer{{500, "", ""}, {502, "", ""}, {200, "", "ok"}}, waits: []time.Duration{time.Second, 2 * time.Second}},
		"refused in json":     {answers: []answer{{200, "", `{"ok":false,"error":"invalid_blocks"}`}}, code: "invalid_blocks"},
		"expired":             {answers: []answer{{404, "", "expired_url"}}, code: "expired_url"},
		"rate limit too long": {answers: []answer{{429, "60", ""}}, code: "-"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if !strings.Contains(string(b), `"text":"hello"`) || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("request %s (%s)", b, r.Header.Get("Content-Type"))
				}
				a := c.answers[min(int(n.Add(1))-1, len(c.answers)-1)]
				if a.header != "" {
					w.Header().Set("Retry-After", a.header)
				}
				w.WriteHeader(a.status)
				io.WriteString(w, a.body)
			}))
			defer srv.Close()
			u := srv.URL + "/actions/T0/1234/s3cretPathOfTheResponseURL"
			var waits []time.Duration
			p := &Poster{MaxWait: 10 * time.Second, Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
			err := p.Respond(context.Background(), u, slack.WebhookMessage{Text: "hello"})
			switch {
			case c.code == "" && err != nil:
				t.Fatalf("not taken: %v", err)
			case c.code != "" && err == nil:
				t.Fatal("taken")
			case err != nil:
				var e *Error
				if !errors.As(err, &e) || e.Via != ResponseURL || (c.code != "-" && e.Code != c.code) {
					t.Errorf("error %#v, want code %s", err, c.code)
				}
				if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), srv.URL) {
					t.Errorf("the error shows the response_url: %s", err)
				}
			}
			if len(waits) != len(c.waits) {
				t.Fatalf("waits %v, want %v", waits, c.waits)
			}
			for i := range waits {
				if waits[i] != c.waits[i] {
					t.Errorf("waits %v, want %v", waits, c.waits)
				}
			}
		})
	}
}
