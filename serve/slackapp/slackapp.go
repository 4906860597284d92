// Package slackapp is llmdoctor serve's Slack app: the slash command
// (POST /slack/commands) and the buttons on the messages it posts (POST
// /slack/interactions). It asks the server (core.Host) for diagnoses and
// renders, and posts with slackkit.
package slackapp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/serve/core"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// Config configures the Slack app: the slash command
// (POST /slack/commands) and the buttons on the messages it posts
// (POST /slack/interactions). Every request is verified with the signing
// secret before anything in it is read.
type Config struct {
	// SigningSecret is the app's signing secret (api.slack.com → the app →
	// Basic Information → App Credentials). Empty: the app is off.
	SigningSecret string
	// Token is a bot token (xoxb-…, chat:write) that posts answers asked
	// for "in channel" with chat.postMessage into the command's channel,
	// their details as replies in the message's thread. Empty: the token
	// of Config.Slack, if any; with neither, such answers go through the
	// command's response_url (details by the button).
	Token string
	// APIURL is the Web API's base for Token (default: Config.Slack's, else
	// slackkit.DefaultAPIURL).
	APIURL string
	// MaxBody bounds a request's body in bytes (default 64 KiB): a larger
	// one is refused with 413 and never verified nor read further.
	MaxBody int64
	// ResponseHosts are the hosts a response_url may name (default
	// hooks.slack.com and hooks.slack-gov.com). A response_url is posted
	// to over https only, or over http on a loopback host (tests).
	ResponseHosts []string
	// Client posts to response_url and the Web API (default: a client
	// with a 10 s timeout).
	Client *http.Client
	// Now is the clock request timestamps are checked against and windows
	// end at (default: the server's). Tests replace it.
	Now func() time.Time
}

// Slack's request signing and the app's bounds.
const (
	slackSignatureHeader = "X-Slack-Signature"
	slackTimestampHeader = "X-Slack-Request-Timestamp"
	// slackMaxSkew is how far a request's timestamp may be from now, in
	// the past or the future; a signature is remembered as long.
	slackMaxSkew = 5 * time.Minute
	// DefaultMaxBody bounds a request's body when MaxBody is zero;
	// Slack's slash commands and button payloads are a few KiB.
	DefaultMaxBody = 64 << 10
	// slackSeenMax bounds the signatures remembered against replays:
	// more than 160 requests a second for five minutes, well past what one
	// Slack app is sent. When full, new requests are refused (503) rather
	// than a remembered signature forgotten early.
	slackSeenMax = 50_000
	// slackJobsMax bounds background work (diagnoses and posts) started
	// from Slack; beyond it a request is answered "busy".
	slackJobsMax = 64
	// responseURLUses is how many times Slack takes a post to one
	// response_url.
	responseURLUses = 5
	// The re-run button's window; a command's is any prom.ParseWindow
	// reads.
	slackRerunWindow = time.Hour
	// slackModelMax bounds a model name as typed.
	slackModelMax = 256
	// slackRunsMax and slackRunTTL bound the diagnoses kept for their
	// "Details" button; past them, details are diagnosed again over the
	// same window.
	slackRunsMax = 256
	slackRunTTL  = time.Hour
	// slackClickTTL drops a second click of the same button by the same
	// user on the same message within it (a double click).
	slackClickTTL = 10 * time.Second
	// The buttons' action IDs and the block holding them.
	ActionDetails = "llmdoctor.details"
	ActionRerun   = "llmdoctor.rerun"
	ActionsBlock  = "llmdoctor-actions"
)

// defaultResponseHosts are where Slack's response_urls point (GovSlack's
// second).
var defaultResponseHosts = []string{"hooks.slack.com", "hooks.slack-gov.com"}

// slackApp is the state of the Slack routes of one server.
type slackApp struct {
	s      core.Host
	cfg    Config
	now    func() time.Time
	client *http.Client
	verify *slackVerifier
	clicks *seenSet
	runs   *runCache
	jobs   chan struct{}
}

// Register adds /slack/commands and /slack/interactions to the server
// when cfg has a signing secret; on says it did.
func Register(s core.Host, cfg *Config) (on bool, err error) {
	if cfg == nil {
		return false, nil
	}
	c := *cfg
	switch {
	case c.SigningSecret == "" && c.Token != "":
		return false, errors.New("the Slack app's bot token is given without its signing secret, which every request from Slack is verified with")
	case c.SigningSecret == "":
		// Off: without the secret no request can be verified.
		return false, nil
	case c.ResponseHosts != nil && len(c.ResponseHosts) == 0:
		return false, errors.New("the Slack app has no response_url host to answer at (Slack's is hooks.slack.com)")
	}
	if c.MaxBody <= 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.Token == "" {
		c.Token = s.Slack().Token
	}
	if c.APIURL == "" {
		c.APIURL = s.Slack().APIURL
	}
	if c.ResponseHosts == nil {
		c.ResponseHosts = defaultResponseHosts
	}
	a := &slackApp{s: s, cfg: c, client: c.Client, clicks: newSeenSet(slackSeenMax), runs: &runCache{}, jobs: make(chan struct{}, slackJobsMax)}
	a.now = c.Now
	if a.now == nil {
		// The server's clock, read when asked: a test may set it after New.
		a.now = s.Now
	}
	if a.client == nil {
		a.client = &http.Client{Timeout: 10 * time.Second}
	}
	a.verify = &slackVerifier{secret: []byte(c.SigningSecret), maxBody: c.MaxBody, now: a.now, seen: newSeenSet(slackSeenMax)}
	s.Handle("POST /slack/commands", a.commands)
	s.Handle("POST /slack/interactions", a.interactions)
	via := "response_url"
	if c.Token != "" {
		via = "chat.postMessage"
	}
	s.Log().Info("slack app: serving /slack/commands and /slack/interactions", "in_channel_via", via, "response_hosts", strings.Join(c.ResponseHosts, ","))
	return true, nil
}

// ---- Verification ----

// slackVerifier checks that a request comes from Slack: Slack's v0
// signature (HMAC-SHA256 of "v0:" + timestamp + ":" + body with the
// signing secret), a timestamp within five minutes of now, a bounded body,
// and a signature not seen before.
//
// slack-go's SecretsVerifier does the HMAC, but checks the timestamp
// against time.Now (no clock to inject) and remembers nothing, so a
// captured request could be replayed for five minutes; this does all of
// it, with crypto/hmac.
type slackVerifier struct {
	secret  []byte
	maxBody int64
	now     func() time.Time
	seen    *seenSet
}

// rejection is why a request was refused, and with which status.
type rejection struct {
	status int
	reason string
}

// check verifies r and returns its body. Nothing in the body is looked at
// before the signature is found good and new.
func (v *slackVerifier) check(w http.ResponseWriter, r *http.Request) ([]byte, *rejection) {
	rawTS := r.Header.Get(slackTimestampHeader)
	rawSig := r.Header.Get(slackSignatureHeader)
	if rawTS == "" || rawSig == "" {
		return nil, &rejection{http.StatusUnauthorized, "missing " + slackTimestampHeader + " or " + slackSignatureHeader}
	}
	ts, ok := parseSlackTimestamp(rawTS)
	if !ok {
		return nil, &rejection{http.StatusBadRequest, "malformed " + slackTimestampHeader}
	}
	now := v.now()
	if skew := now.Sub(ts); skew > slackMaxSkew || skew < -slackMaxSkew {
		return nil, &rejection{http.StatusUnauthorized, fmt.Sprintf("timestamp %s from now, more than %s", skew.Round(time.Second), slackMaxSkew)}
	}
	sig, ok := parseSlackSignature(rawSig)
	if !ok {
		return nil, &rejection{http.StatusUnauthorized, "malformed signature (want v0= and 64 hex digits)"}
	}
	if r.ContentLength > v.maxBody {
		return nil, &rejection{http.StatusRequestEntityTooLarge, fmt.Sprintf("body of %d bytes, over %d", r.ContentLength, v.maxBody)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, v.maxBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &rejection{http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", v.maxBody)}
		}
		return nil, &rejection{http.StatusBadRequest, "reading the body: " + err.Error()}
	}
	if !hmac.Equal(sig, slackMAC(v.secret, rawTS, body)) {
		return nil, &rejection{http.StatusUnauthorized, "signature does not match"}
	}
	switch v.seen.add(hex.EncodeToString(sig), ts.Add(slackMaxSkew), now) {
	case seenBefore:
		return nil, &rejection{http.StatusUnauthorized, "replayed: this signature was seen already"}
	case seenFull:
		return nil, &rejection{http.StatusServiceUnavailable, "too many requests in the last five minutes to remember them all"}
	}
	return body, nil
}

// slackMAC is Slack's v0 signature of a request, without the "v0=".
func slackMAC(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return m.Sum(nil)
}

// parseSlackTimestamp reads Unix seconds: digits only, no sign, at most
// twelve of them.
func parseSlackTimestamp(s string) (time.Time, bool) {
	if len(s) == 0 || len(s) > 12 {
		return time.Time{}, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// parseSlackSignature reads "v0=" and the hex of a SHA-256.
func parseSlackSignature(s string) ([]byte, bool) {
	h, ok := strings.CutPrefix(s, "v0=")
	if !ok || len(h) != 2*sha256.Size {
		return nil, false
	}
	b, err := hex.DecodeString(h)
	return b, err == nil
}

// seenSet remembers keys until a time each, in a bounded map: the
// signatures of accepted requests (replays) and button clicks (double
// clicks).
type seenSet struct {
	mu        sync.Mutex
	until     map[string]time.Time
	max       int
	lastSweep time.Time
}

type seenResult int

const (
	seenNew seenResult = iota
	seenBefore
	seenFull
)

func newSeenSet(max int) *seenSet { return &seenSet{until: map[string]time.Time{}, max: max} }

// add remembers key until the given time, and says whether it was new.
// Keys past their time are swept every 30 s, or when the set is full; a
// minute's grace covers a clock stepped back.
func (s *seenSet) add(key string, until, now time.Time) seenResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.until) >= s.max || now.Sub(s.lastSweep) >= 30*time.Second || now.Before(s.lastSweep) {
		for k, u := range s.until {
			if now.After(u.Add(time.Minute)) {
				delete(s.until, k)
			}
		}
		s.lastSweep = now
	}
	if u, ok := s.until[key]; ok && !now.After(u.Add(time.Minute)) {
		return seenBefore
	}
	if len(s.until) >= s.max {
		return seenFull
	}
	s.until[key] = until
	return seenNew
}

// reject answers a request that failed verification, and logs why.
func (a *slackApp) reject(w http.ResponseWriter, r *http.Request, rj *rejection) {
	a.s.Log().Warn("slack request refused", "path", r.URL.Path, "status", rj.status, "reason", rj.reason, "remote", r.RemoteAddr)
	http.Error(w, http.StatusText(rj.status), rj.status)
}

// ---- The slash command ----

// slashCommand is what a command says, once its text is read.
type slashCommand struct {
	verb      string // diagnose, checklist, help
	model     string // "": every target
	window    time.Duration
	inChannel bool
}

// parseCommand reads the text after the command: a verb, then for
// diagnose a model, a window (as prom.ParseWindow reads it) and "in channel",
// in any order. A failure is the usage message to answer.
func parseCommand(text string, defWindow time.Duration) (slashCommand, string) {
	// Slack escapes &, < and > in the text; some clients turn -- into a dash.
	text = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "—", "--", "–", "--").Replace(text)
	words := strings.Fields(text)
	c := slashCommand{verb: "help", window: defWindow}
	if len(words) == 0 {
		return c, ""
	}
	c.verb = strings.ToLower(words[0])
	args := words[1:]
	switch c.verb {
	case "help", "-h", "--help":
		c.verb = "help"
		return c, ""
	case "diagnose", "checklist":
	default:
		return c, fmt.Sprintf("unknown command %s: ask diagnose, checklist or help", mrkdwnCode(words[0]))
	}
	windowSet := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		lw := strings.ToLower(w)
		switch {
		case lw == "in" && i+1 < len(args) && strings.ToLower(args[i+1]) == "channel":
			c.inChannel = true
			i++
			continue
		case lw == "--in-channel" || lw == "in-channel" || lw == "--channel":
			c.inChannel = true
			continue
		}
		key, val, kv := strings.Cut(w, "=")
		switch {
		case kv && strings.EqualFold(strings.TrimLeft(key, "-"), "window"):
			w = val
		case kv && strings.EqualFold(strings.TrimLeft(key, "-"), "model"):
			if c.model != "" {
				return c, "one model at a time: " + mrkdwnCode(c.model) + " and " + mrkdwnCode(val)
			}
			c.model = unquote(val)
			continue
		}
		d, err := prom.ParseWindow(w)
		var we *prom.WindowError
		switch {
		case err == nil && windowSet:
			return c, "one window at a time: " + mrkdwnCode(prom.FormatWindow(c.window)) + " and " + mrkdwnCode(w)
		case err == nil:
			c.window, windowSet = d, true
			continue
		case errors.As(err, &we) && (we.Bound != 0 || kv && strings.EqualFold(strings.TrimLeft(key, "-"), "window")):
			// A duration out of bounds, or window= what is none.
			return c, "window " + mrkdwnCode(w) + ": " + slackkit.Escape(we.Why)
		}
		if c.model != "" {
			return c, "one model at a time: " + mrkdwnCode(c.model) + " and " + mrkdwnCode(w)
		}
		c.model = unquote(w)
	}
	if n := utf8.RuneCountInString(c.model); n > slackModelMax {
		return c, fmt.Sprintf("a model name of %d characters: at most %d", n, slackModelMax)
	}
	for _, r := range c.model {
		if unicode.IsControl(r) {
			return c, "the model name holds a control character"
		}
	}
	return c, ""
}

// unquote drops the quotes a user may put around a model name, straight
// or typographic.
func unquote(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return strings.ContainsRune("\"'`“”‘’", r) })
}

// ModelSelector is the label matcher for a model: model_name="…", with
// backslashes, quotes and newlines escaped as PromQL strings want.
func ModelSelector(model string) string {
	if model == "" {
		return ""
	}
	return `model_name="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(model) + `"`
}

// mrkdwnCode shows user text as inline code.
func mrkdwnCode(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 300 {
		s = string([]rune(s)[:299]) + "…"
	}
	return "`" + slackkit.Escape(strings.ReplaceAll(s, "`", "'")) + "`"
}

func (a *slackApp) defaultWindow() time.Duration { return a.s.DefaultWindow() }

// helpText is the answer to help, and to a command it cannot read.
func (a *slackApp) helpText(cmd string) string {
	if cmd == "" {
		cmd = "/llmdoctor"
	}
	cmd = slackkit.Escape(cmd)
	return fmt.Sprintf("*llmdoctor* diagnoses LLM serving latency (vLLM, SGLang) from this server's Prometheus.\n"+
		"• `%[1]s diagnose [model] [window] [in channel]`: why it is slow, and what to change. "+
		"_model_ as the `model_name` label spells it (default: every model); _window_ %[3]s, from %[4]s to %[5]s (default %[2]s); "+
		"`in channel` posts the answer for everyone, otherwise only you see it.\n"+
		"• `%[1]s checklist [model]`: not served here yet (run `llmdoctor checklist` in CI).\n"+
		"• `%[1]s help`: this text.\n"+
		"Examples: `%[1]s diagnose llama-3-8b 30m`, `%[1]s diagnose meta-llama/Llama-3.1-8B-Instruct 1h in channel`.\n"+
		"Each answer has buttons: *Details* (more findings, every gap and how to close it, per instance) and *Re-run over 1h*.",
		cmd, prom.FormatWindow(a.defaultWindow()), prom.WindowSyntax, prom.FormatWindow(prom.MinWindow), prom.FormatWindow(prom.MaxWindow))
}

// checklistText is the answer to checklist: the pre-launch checklist
// judges a benchmark run (request-level files, SLO gates), which a server
// reading Prometheus does not have; over Prometheus alone most of its
// items could not be checked.
func checklistText(cmd string) string {
	if cmd == "" {
		cmd = "/llmdoctor"
	}
	return "`" + slackkit.Escape(cmd) + " checklist` is not available in `llmdoctor serve` yet: the pre-launch checklist judges a benchmark run " +
		"(request-level files, SLO gates) that this server, reading Prometheus, does not have. Run it where the benchmark runs, e.g. in CI: " +
		"`llmdoctor checklist --prom URL --bench run.json --slo ttft_p99=2s --output slack`. " +
		"For the live service, ask `" + slackkit.Escape(cmd) + " diagnose [model]`."
}

// ackMessage is the immediate answer to a command (the HTTP response).
type ackMessage struct {
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
}

func writeAck(w http.ResponseWriter, inChannel bool, text string) {
	m := ackMessage{ResponseType: slack.ResponseTypeEphemeral, Text: text}
	if inChannel {
		m.ResponseType = slack.ResponseTypeInChannel
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m) // two strings always encode; a client gone cannot be answered
}

// commands serves POST /slack/commands: verify, answer at once, diagnose
// in the background and post the result to the command's response_url.
func (a *slackApp) commands(w http.ResponseWriter, r *http.Request) {
	body, rj := a.verify.check(w, r)
	if rj != nil {
		a.reject(w, r, rj)
		return
	}
	// The body was read to verify it: slack-go parses it again.
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.PostForm, r.Form = nil, nil
	sc, err := slack.SlashCommandParse(r)
	if err != nil {
		a.reject(w, r, &rejection{http.StatusBadRequest, "the body is not a form"})
		return
	}
	if r.PostForm.Get("ssl_check") == "1" {
		w.WriteHeader(http.StatusOK)
		return
	}
	name := sc.Command
	cmd, usage := parseCommand(sc.Text, a.defaultWindow())
	log := a.s.Log().With("user", sc.UserID, "team", sc.TeamID, "channel", sc.ChannelID)
	switch {
	case usage != "":
		log.Info("slack command refused", "text", sc.Text, "why", usage)
		writeAck(w, false, usage+"\n\n"+a.helpText(name))
		return
	case cmd.verb == "help":
		writeAck(w, false, a.helpText(name))
		return
	case cmd.verb == "checklist":
		writeAck(w, false, checklistText(name))
		return
	}
	o := origin{responseURL: sc.ResponseURL, inChannel: cmd.inChannel, channel: sc.ChannelID}
	if why := a.responseURLProblem(o.responseURL); why != "" {
		log.Warn("slack command without a usable response_url", "why", why)
		writeAck(w, false, "llmdoctor cannot answer this command: its response_url "+why+".")
		return
	}
	what := "every target"
	if cmd.model != "" {
		what = "model " + mrkdwnCode(cmd.model)
	}
	// The slot is taken now, so that "busy" is said at once.
	release, ok := a.s.Acquire()
	if !ok {
		log.Info("slack command busy", "model", cmd.model, "window", cmd.window)
		writeAck(w, false, a.busyText())
		return
	}
	end := a.now()
	started := a.start(func(ctx context.Context) {
		defer release()
		rp := a.responder(o.responseURL)
		d, runs, err := a.s.DiagnoseHeld(ctx, core.Request{Selector: ModelSelector(cmd.model), Window: cmd.window, End: end, Latest: true, Trigger: core.TriggerSlash})
		release()
		log.Info("slack diagnosis", "model", cmd.model, "window", cmd.window, "err", err)
		if err != nil {
			a.postFailure(ctx, rp, o, cmd.model, cmd.window, err)
			return
		}
		a.postDiagnosis(ctx, rp, o, cmd.model, cmd.window, end, d, runs)
	})
	if !started {
		release()
		writeAck(w, false, a.busyText())
		return
	}
	where := ""
	if cmd.inChannel {
		where = " The answer will be posted in this channel."
	}
	writeAck(w, cmd.inChannel, fmt.Sprintf("Diagnosing %s over the last %s…%s", what, prom.FormatWindow(cmd.window), where))
}

func (a *slackApp) busyText() string {
	return fmt.Sprintf("llmdoctor is busy: %d diagnoses are running, its limit. Try again in a minute.", a.s.MaxConcurrent())
}

// start runs f in the background within the bound on jobs, on a context
// of its own (the request's ends with the answer); shutdown waits for it.
func (a *slackApp) start(f func(ctx context.Context)) bool {
	select {
	case a.jobs <- struct{}{}:
	default:
		return false
	}
	a.s.Background(func() {
		defer func() { <-a.jobs }()
		ctx, cancel := context.WithTimeout(context.Background(), a.s.RequestTimeout()+core.PostDeadline)
		defer cancel()
		f(ctx)
	})
	return true
}

// origin is where and how an answer goes.
type origin struct {
	responseURL string
	inChannel   bool
	// channel is the conversation's ID, for posting with a token.
	channel string
	// threadTS is the message whose thread details go in ("": none).
	threadTS string
}

func (o origin) responseType() string {
	if o.inChannel {
		return slack.ResponseTypeInChannel
	}
	return slack.ResponseTypeEphemeral
}

// postFailure tells the user why there is no diagnosis.
func (a *slackApp) postFailure(ctx context.Context, rp *responder, o origin, model string, window time.Duration, err error) {
	what := "every target"
	if model != "" {
		what = "model " + mrkdwnCode(model)
	}
	var text string
	var nt *diagnosis.NoTargetError
	switch {
	case errors.Is(err, core.ErrBusy):
		text = a.busyText()
	case errors.As(err, &nt) && nt.Why == diagnosis.NoEngineMetrics && model != "":
		text = fmt.Sprintf("llmdoctor found no serving-engine metrics for %s over the last %s: is the name as the `model_name` label spells it? (`/llmdoctor diagnose` with no model lists every target.)",
			what, prom.FormatWindow(window))
	case errors.Is(err, context.DeadlineExceeded):
		text = fmt.Sprintf("llmdoctor could not diagnose %s over the last %s in time (%s): try a shorter window or one model.", what, prom.FormatWindow(window), a.s.RequestTimeout())
	default:
		msg := err.Error()
		if utf8.RuneCountInString(msg) > 1500 {
			msg = string([]rune(msg)[:1500]) + "…"
		}
		text = fmt.Sprintf("llmdoctor could not diagnose %s over the last %s: %s", what, prom.FormatWindow(window), slackkit.Escape(msg))
	}
	// A failure is the asker's business: only they see it.
	if err := rp.post(ctx, slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: text}); err != nil {
		a.s.Log().Warn("slack: posting to response_url", "err", err)
	}
}

// buttonValue is what a message's buttons carry: enough to diagnose the
// same window again when its run is no longer kept, and to re-run.
type buttonValue struct {
	// Run keys the diagnosis in the run cache.
	Run string `json:"r,omitempty"`
	// Model, Window and End are the command's: the same diagnosis again.
	Model  string `json:"m,omitempty"`
	Window string `json:"w,omitempty"`
	End    int64  `json:"e,omitempty"`
	// Target is the message's target: its index and name in the run, and
	// its model (what "Re-run" diagnoses).
	Target      int    `json:"i"`
	Name        string `json:"t,omitempty"`
	TargetModel string `json:"tm,omitempty"`
}

func (v buttonValue) encode() string {
	b, _ := json.Marshal(v)
	if len(b) > slackkit.ButtonValueMax {
		v.Name = ""
		b, _ = json.Marshal(v)
	}
	return string(b)
}

// postDiagnosis posts one message per target: with a token and "in
// channel", into the channel with its details in the thread; otherwise
// to response_url with the buttons. A target whose run was kept links to
// its report page (with --external-url).
func (a *slackApp) postDiagnosis(ctx context.Context, rp *responder, o origin, model string, window time.Duration, end time.Time, d *advisor.Diagnosis, runs []core.RunRef) {
	msgs := a.s.SlackMessages(d, runs, report.SlackOptions{})
	run := a.runs.put(msgs, a.now())
	off := 0
	value := func(i int, m report.SlackMessage) buttonValue {
		i += off
		v := buttonValue{Run: run, Model: model, Window: prom.FormatWindow(window), End: end.Unix(), Target: i, Name: m.Target, TargetModel: model}
		if i < len(d.Targets) && d.Targets[i].Target.Model != "" {
			v.TargetModel = d.Targets[i].Target.Model
		}
		return v
	}
	if o.inChannel && a.cfg.Token != "" && o.channel != "" {
		done, err := a.postWithToken(ctx, o, msgs, value)
		if err == nil {
			return
		}
		a.s.Log().Warn("slack: posting in channel with the token; the rest goes to response_url", "err", err, "posted", done)
		note := fmt.Sprintf("llmdoctor could not post in this channel with its bot token: %s. The answer follows through this command instead (details by the button).", slackkit.Escape(err.Error()))
		if err := rp.post(ctx, slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: note}); err != nil {
			a.s.Log().Warn("slack: posting to response_url", "err", err)
		}
		msgs, off = msgs[done:], done
	}
	a.postMains(ctx, rp, o, msgs, value)
}

// postMains posts each target's main message to response_url, within
// the uses Slack allows one: when targets outnumber them, the last use
// names the targets left out.
func (a *slackApp) postMains(ctx context.Context, rp *responder, o origin, msgs []report.SlackMessage, value func(int, report.SlackMessage) buttonValue) {
	room := rp.left()
	if room <= 0 {
		a.s.Log().Warn("slack: the response_url is used up; answer not posted", "targets", len(msgs))
		return
	}
	var left []string
	if len(msgs) > room {
		for _, m := range msgs[room-1:] {
			left = append(left, m.Target)
		}
		msgs = msgs[:room-1]
	}
	for i, m := range msgs {
		main := withButtons(m, value(i, m).encode(), !o.inChannel, true)
		main.ResponseType = o.responseType()
		main.ReplaceOriginal = false
		if err := rp.post(ctx, main); err != nil {
			a.s.Log().Warn("slack: posting to response_url", "target", m.Target, "err", err)
			return
		}
	}
	if len(left) > 0 {
		var names []string
		for _, n := range left {
			names = append(names, mrkdwnCode(n))
		}
		text := fmt.Sprintf("+%d more targets not shown (Slack takes %d answers to one command): %s. Ask for one model: `/llmdoctor diagnose MODEL`.",
			len(left), responseURLUses, strings.Join(names, ", "))
		if utf8.RuneCountInString(text) > 2900 {
			text = string([]rune(text)[:2900]) + "…"
		}
		if err := rp.post(ctx, slack.WebhookMessage{ResponseType: o.responseType(), Text: text}); err != nil {
			a.s.Log().Warn("slack: posting to response_url", "err", err)
		}
	}
}

// postWithToken posts each main message into the channel with
// chat.postMessage, its details in its thread, and says how many
// targets were posted whole.
func (a *slackApp) postWithToken(ctx context.Context, o origin, msgs []report.SlackMessage, value func(int, report.SlackMessage) buttonValue) (int, error) {
	out := make([]report.SlackMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m
		// The details are in the thread already: Re-run is the only button.
		out[i].Main = withButtons(m, value(i, m).encode(), false, false)
	}
	p := &slackkit.Poster{Dest: slackkit.Destination{Token: a.cfg.Token, Channel: o.channel, APIURL: a.cfg.APIURL, Client: a.client}}
	// Every result is a main message posted (a failed thread reply
	// leaves its main message's result in).
	res, err := p.Post(ctx, out)
	a.s.Posted(res, err)
	return len(res), err
}

// withButtons is m's main message with an actions block: "Details" (when
// m has details and details is set) and "Re-run over 1h". The block goes
// where the message's blocks are (inside the colour bar's attachment);
// a message already at Slack's 50 blocks goes without.
func withButtons(m report.SlackMessage, value string, ephemeral, details bool) slack.WebhookMessage {
	main := m.Main
	var els []slack.BlockElement
	if details && len(m.Details) > 0 {
		label := "Details in thread"
		if ephemeral {
			label = "Details"
		}
		els = append(els, slack.NewButtonBlockElement(ActionDetails, value, slack.NewTextBlockObject(slack.PlainTextType, label, false, false)))
	}
	els = append(els, slack.NewButtonBlockElement(ActionRerun, value, slack.NewTextBlockObject(slack.PlainTextType, "Re-run over 1h", false, false)))
	blk := slack.NewActionBlock(ActionsBlock, els...)
	n := 0
	if main.Blocks != nil {
		n += len(main.Blocks.BlockSet)
	}
	for _, at := range main.Attachments {
		n += len(at.Blocks.BlockSet)
	}
	if n >= slackkit.BlocksMax {
		return main
	}
	if len(main.Attachments) > 0 {
		atts := append([]slack.Attachment(nil), main.Attachments...)
		last := &atts[len(atts)-1]
		last.Blocks = slack.Blocks{BlockSet: append(append([]slack.Block(nil), last.Blocks.BlockSet...), blk)}
		main.Attachments = atts
		return main
	}
	var set []slack.Block
	if main.Blocks != nil {
		set = append(set, main.Blocks.BlockSet...)
	}
	main.Blocks = &slack.Blocks{BlockSet: append(set, blk)}
	return main
}

// ---- Buttons ----

// interactions serves POST /slack/interactions: the buttons on the
// messages posted. It answers at once and acts in the background.
func (a *slackApp) interactions(w http.ResponseWriter, r *http.Request) {
	body, rj := a.verify.check(w, r)
	if rj != nil {
		a.reject(w, r, rj)
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("payload") == "" {
		a.reject(w, r, &rejection{http.StatusBadRequest, "no payload field"})
		return
	}
	var p slack.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &p); err != nil {
		a.reject(w, r, &rejection{http.StatusBadRequest, "the payload is not JSON"})
		return
	}
	if p.Type != slack.InteractionTypeBlockActions {
		// Nothing else is asked of this app; Slack wants a 200 all the same.
		w.WriteHeader(http.StatusOK)
		return
	}
	log := a.s.Log().With("user", p.User.ID, "team", p.Team.ID, "channel", p.Channel.ID)
	for _, act := range p.ActionCallback.BlockActions {
		if act.ActionID != ActionDetails && act.ActionID != ActionRerun {
			continue
		}
		var v buttonValue
		if err := json.Unmarshal([]byte(act.Value), &v); err != nil || !v.valid() {
			a.reject(w, r, &rejection{http.StatusBadRequest, "a button value this app did not write"})
			return
		}
		if why := a.responseURLProblem(p.ResponseURL); why != "" {
			log.Warn("slack button without a usable response_url", "why", why)
			w.WriteHeader(http.StatusOK)
			return
		}
		o := origin{responseURL: p.ResponseURL, inChannel: !p.Container.IsEphemeral, channel: p.Channel.ID}
		if o.inChannel {
			o.threadTS = firstNonEmpty(p.Message.ThreadTimestamp, p.Container.ThreadTs, p.Message.Timestamp, p.Container.MessageTs)
		}
		msgTS := firstNonEmpty(p.Container.MessageTs, p.Message.Timestamp)
		key := sha256.Sum256([]byte(p.User.ID + "\x00" + msgTS + "\x00" + act.ActionID + "\x00" + act.Value))
		if a.clicks.add(hex.EncodeToString(key[:]), a.now().Add(slackClickTTL), a.now()) != seenNew {
			log.Info("slack button clicked twice", "action", act.ActionID)
			w.WriteHeader(http.StatusOK)
			return
		}
		log.Info("slack button", "action", act.ActionID, "model", v.TargetModel, "target", v.Name)
		job := func(ctx context.Context) { a.details(ctx, o, v) }
		release, ok := func() {}, true
		if act.ActionID == ActionRerun {
			// The slot is taken now, as for a command.
			if release, ok = a.s.Acquire(); ok {
				job = func(ctx context.Context) { defer release(); a.rerun(ctx, o, v, release) }
			}
		}
		if !ok || !a.start(job) {
			if ok {
				release()
			}
			// The answer to a click carries no message: say it in one post.
			a.s.Background(func() { a.postBusy(o) })
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// postBusy says "busy" to a click that could not be taken. It is not
// counted among the jobs (they may be full): one try, bounded.
func (a *slackApp) postBusy(o origin) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rp := a.responder(o.responseURL)
	rp.tries = 1
	if err := rp.post(ctx, slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: a.busyText()}); err != nil {
		a.s.Log().Warn("slack: posting to response_url", "err", err)
	}
}

func (v buttonValue) valid() bool {
	if utf8.RuneCountInString(v.Model) > slackModelMax || utf8.RuneCountInString(v.TargetModel) > slackModelMax || v.Target < 0 {
		return false
	}
	if v.Window != "" {
		if _, err := prom.ParseWindow(v.Window); err != nil {
			return false
		}
	}
	for _, r := range v.Model + v.TargetModel {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// rerun diagnoses the message's target over the last hour and posts the
// result as the message was (in channel or to the clicker alone).
// The caller holds a diagnosis slot, given back by release.
func (a *slackApp) rerun(ctx context.Context, o origin, v buttonValue, release func()) {
	rp := a.responder(o.responseURL)
	end := a.now()
	// Not the latest window the server tracks (one hour, whatever the
	// default): neither the metrics nor the report pages take it.
	d, runs, err := a.s.DiagnoseHeld(ctx, core.Request{Selector: ModelSelector(v.TargetModel), Window: slackRerunWindow, End: end, Trigger: core.TriggerSlash})
	release()
	a.s.Log().Info("slack re-run", "model", v.TargetModel, "err", err)
	if err != nil {
		a.postFailure(ctx, rp, o, v.TargetModel, slackRerunWindow, err)
		return
	}
	a.postDiagnosis(ctx, rp, o, v.TargetModel, slackRerunWindow, end, d, runs)
}

// details posts the message's details: in its thread when it is in a
// channel, to the clicker alone when it was. The run is taken from the
// cache, or diagnosed again over the same window.
func (a *slackApp) details(ctx context.Context, o origin, v buttonValue) {
	rp := a.responder(o.responseURL)
	msgs, ok := a.runs.get(v.Run, a.now())
	if !ok {
		window, _ := prom.ParseWindow(v.Window)
		d, err := a.s.Diagnose(ctx, core.Request{Selector: ModelSelector(v.Model), Window: window, End: time.Unix(v.End, 0), Trigger: core.TriggerSlash})
		if err != nil {
			a.postFailure(ctx, rp, o, v.Model, window, err)
			return
		}
		msgs = report.SlackDiagnosis(d, report.SlackOptions{})
	}
	var m *report.SlackMessage
	for i := range msgs {
		if msgs[i].Target == v.Name && (m == nil || i == v.Target) {
			m = &msgs[i]
		}
	}
	if m == nil && v.Name == "" && v.Target < len(msgs) {
		m = &msgs[v.Target]
	}
	if m == nil || len(m.Details) == 0 {
		text := "No more details for " + mrkdwnCode(v.Name) + ": the message holds them all."
		if m == nil {
			text = "The target " + mrkdwnCode(v.Name) + " is no longer in the diagnosis of that window."
		}
		if err := rp.post(ctx, slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: text}); err != nil {
			a.s.Log().Warn("slack: posting to response_url", "err", err)
		}
		return
	}
	for _, d := range m.Details {
		d.ResponseType = o.responseType()
		d.ReplaceOriginal = false
		d.ThreadTimestamp = o.threadTS
		if err := rp.post(ctx, d); err != nil {
			a.s.Log().Warn("slack: posting details to response_url", "target", m.Target, "err", err)
			return
		}
	}
}

// runCache keeps recent diagnoses' messages for their Details button.
type runCache struct {
	mu    sync.Mutex
	runs  map[string]cachedRun
	order []string
}

type cachedRun struct {
	msgs []report.SlackMessage
	at   time.Time
}

func (c *runCache) put(msgs []report.SlackMessage, now time.Time) string {
	var b [8]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]cachedRun{}
	}
	for len(c.order) > 0 && (len(c.order) >= slackRunsMax || now.Sub(c.runs[c.order[0]].at) > slackRunTTL) {
		delete(c.runs, c.order[0])
		c.order = c.order[1:]
	}
	c.runs[id] = cachedRun{msgs: msgs, at: now}
	c.order = append(c.order, id)
	return id
}

func (c *runCache) get(id string, now time.Time) ([]report.SlackMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.runs[id]
	if !ok || now.Sub(r.at) > slackRunTTL {
		return nil, false
	}
	return r.msgs, true
}

// ---- response_url ----

// responseURLProblem says what is wrong with a response_url ("": nothing):
// it must be https (or http on loopback) to one of ResponseHosts.
func (a *slackApp) responseURLProblem(raw string) string {
	if raw == "" {
		return "is missing"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "is not a URL"
	}
	host := u.Hostname()
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback) {
		return "is not https"
	}
	for _, h := range a.cfg.ResponseHosts {
		if strings.EqualFold(h, host) {
			return ""
		}
	}
	return "points at " + host + ", not at Slack (" + strings.Join(a.cfg.ResponseHosts, ", ") + ")"
}

// responder posts to one response_url, at most responseURLUses times.
type responder struct {
	a     *slackApp
	url   string
	uses  int
	tries int
}

func (a *slackApp) responder(u string) *responder { return &responder{a: a, url: u, tries: 3} }

// left is how many posts the response_url still takes.
func (r *responder) left() int { return responseURLUses - r.uses }

var errResponseURLUsed = errors.New("the response_url was used the 5 times Slack allows")

// post sends m through slackkit's poster, which tries again after a
// server error or a rate limit (Retry-After, up to 10 s).
func (r *responder) post(ctx context.Context, m slack.WebhookMessage) error {
	if r.left() <= 0 {
		return errResponseURLUsed
	}
	r.uses++
	p := &slackkit.Poster{Dest: slackkit.Destination{Client: r.a.client}, Tries: r.tries, MaxWait: 10 * time.Second}
	err := p.Respond(ctx, r.url, m)
	// Counted in llmdoctor_slack_posts_total with every other post.
	if err != nil {
		r.a.s.Posted(nil, err)
	} else {
		r.a.s.Posted([]slackkit.Result{{Via: slackkit.ResponseURL}}, nil)
	}
	return err
}
