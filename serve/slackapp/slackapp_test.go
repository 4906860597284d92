package slackapp

import (
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The end-to-end tests of the Slack app, through the server, are serve's
// (slackapp_test.go there); these are the app's own parts.

const slackTestSecret = "llmdoctor-test-signing-secret"

// TestSlackSignatureVectors: the HMAC against the reference's worked
// examples and Slack's own published one, and the verifier accepting them
// with its clock set to their time (slack-go's verifier cannot: it reads
// time.Now).
func TestSlackSignatureVectors(t *testing.T) {
	cases := []struct{ secret, ts, body, want string }{
		{slackTestSecret, "1767225600",
			"command=%2Fllmdoctor&text=diagnose+vllm-0&team_id=T0LLMDOC&channel_id=C0GPUALERT&user_id=U0ONCALL&api_app_id=A0LLMDOC&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT0LLMDOC%2F1%2Fxyz&trigger_id=1.2.abc",
			"v0=30dd47100ef4b6955037ac095aa473612464e9bd4cf378449fcec7f00cb8f89e"},
		{slackTestSecret, "1767225600", "payload=%7B%22type%22%3A%22block_actions%22%7D",
			"v0=b2aa1104222608965c7b4285d9b754c5d189c2e41be7b1e95490974f2626a119"},
		{"8f742231b10e8888abcd99yyyzzz85a5", "1531420618",
			"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
			"v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"},
	}
	for i, c := range cases {
		if got := "v0=" + hex.EncodeToString(slackMAC([]byte(c.secret), c.ts, []byte(c.body))); got != c.want {
			t.Errorf("vector %d: %s, want %s", i, got, c.want)
		}
		n, _ := strconv.ParseInt(c.ts, 10, 64)
		v := &slackVerifier{secret: []byte(c.secret), maxBody: DefaultMaxBody, seen: newSeenSet(10),
			now: func() time.Time { return time.Unix(n, 0).Add(4 * time.Minute) }}
		r := httptest.NewRequest(http.MethodPost, "/slack/commands", strings.NewReader(c.body))
		r.Header.Set("x-slack-request-timestamp", c.ts) // header names are case-insensitive
		r.Header.Set("x-slack-signature", c.want)
		body, rj := v.check(httptest.NewRecorder(), r)
		if rj != nil || string(body) != c.body {
			t.Errorf("vector %d refused: %+v", i, rj)
		}
	}
}

// TestParseCommand reads what users type.
func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		text string
		want slashCommand
	}{
		{"diagnose", slashCommand{verb: "diagnose", window: 15 * time.Minute}},
		{"  Diagnose   llama-3-8b  ", slashCommand{verb: "diagnose", model: "llama-3-8b", window: 15 * time.Minute}},
		{"diagnose 1h30m meta-llama/Llama-3.1-8B-Instruct", slashCommand{verb: "diagnose", model: "meta-llama/Llama-3.1-8B-Instruct", window: 90 * time.Minute}},
		{"diagnose llama 1H in channel", slashCommand{verb: "diagnose", model: "llama", window: time.Hour, inChannel: true}},
		{"diagnose in Channel 2h", slashCommand{verb: "diagnose", window: 2 * time.Hour, inChannel: true}},
		{"diagnose —in-channel “llama”", slashCommand{verb: "diagnose", model: "llama", window: 15 * time.Minute, inChannel: true}},
		{"diagnose model=a&amp;b window=24h", slashCommand{verb: "diagnose", model: "a&b", window: 24 * time.Hour}},
		{"diagnose 1m", slashCommand{verb: "diagnose", window: time.Minute}},
		{"diagnose llama 2d", slashCommand{verb: "diagnose", model: "llama", window: 48 * time.Hour}},
		{"diagnose window=1d12h", slashCommand{verb: "diagnose", window: 36 * time.Hour}},
		{"diagnose 7d llama", slashCommand{verb: "diagnose", model: "llama", window: 7 * 24 * time.Hour}},
		{"checklist llama", slashCommand{verb: "checklist", model: "llama", window: 15 * time.Minute}},
		{"diagnose in", slashCommand{verb: "diagnose", model: "in", window: 15 * time.Minute}},
	} {
		got, usage := parseCommand(c.text, 15*time.Minute)
		if usage != "" || got != c.want {
			t.Errorf("%q: %+v %q, want %+v", c.text, got, usage, c.want)
		}
	}
}

// TestModelSelector escapes what PromQL strings escape.
func TestModelSelector(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "",
		"llama-3-8b":                       `model_name="llama-3-8b"`,
		`a"b\c`:                            `model_name="a\"b\\c"`,
		`x"} or vector(1) or {a="`:         `model_name="x\"} or vector(1) or {a=\""`,
		"meta-llama/Llama-3.1-8B-Instruct": `model_name="meta-llama/Llama-3.1-8B-Instruct"`,
	} {
		if got := ModelSelector(in); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

// TestSeenSet: signatures are remembered for their window, swept after,
// and a full set refuses rather than forgets.
func TestSeenSet(t *testing.T) {
	s := newSeenSet(2)
	t0 := time.Unix(1767225600, 0)
	if s.add("a", t0.Add(5*time.Minute), t0) != seenNew || s.add("a", t0.Add(5*time.Minute), t0.Add(time.Minute)) != seenBefore {
		t.Fatal("a repeat was not seen")
	}
	s.add("b", t0.Add(5*time.Minute), t0)
	if got := s.add("c", t0.Add(6*time.Minute), t0.Add(time.Minute)); got != seenFull {
		t.Errorf("full set: %v", got)
	}
	// Past their time (and the minute's grace), a and b are swept.
	if got := s.add("c", t0.Add(12*time.Minute), t0.Add(7*time.Minute)); got != seenNew || len(s.until) != 1 {
		t.Errorf("after the window: %v, %d kept", got, len(s.until))
	}
}
