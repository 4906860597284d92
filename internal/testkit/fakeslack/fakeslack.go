// Package fakeslack is a stand-in for Slack in tests: an incoming webhook
// and the Web API's chat.postMessage on a loopback port. It answers as
// Slack does (the webhook's plain-text "ok" and error codes with real
// status codes; the Web API's JSON with "ok":false under HTTP 200), checks
// every message against Slack's limits and refuses one that breaks them,
// and records what it was sent.
package fakeslack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"unicode/utf8"
)

// The credentials the fake accepts. Each is distinct and long enough for
// the project's redaction to mask it, so a test can look for it in output.
const (
	// HookSecret is the secret last segment of the webhook's path.
	HookSecret = "fakeHookSecret7c1e9a2b4d6f"
	// Token is the bot token chat.postMessage accepts.
	Token = "xoxb-fake-4e8a1f3c9b2d7e60"
	// Channel is a channel the bot is a member of.
	Channel = "C0LLMDOC"
	// NotInChannel exists, but the bot is not a member of it.
	NotInChannel = "C0NOTIN"
)

// Slack's limits the fake holds every message to.
const (
	MaxBlocks      = 50    // blocks per message (attachments' blocks included)
	MaxHeader      = 150   // a header block's text
	MaxSection     = 3000  // a section's text
	MaxFields      = 10    // a section's fields
	MaxField       = 2000  // one field's text
	MaxBlockChars  = 12000 // all text in a message's blocks (Slack answers msg_blocks_too_long near 13.2k)
	MaxText        = 40000 // the top-level text, truncated by Slack above this
	MaxAttachments = 100
)

// Answer is a reply the fake gives instead of handling a request.
type Answer struct {
	Status     int
	Body       string
	RetryAfter string
	// Hang holds the request until the client gives up.
	Hang bool
}

// WebAPIError is chat.postMessage's answer for a refused message: HTTP
// 200 with "ok":false.
func WebAPIError(code string) Answer {
	return Answer{Status: 200, Body: fmt.Sprintf(`{"ok":false,"error":%q}`, code)}
}

// Request is one request the fake received.
type Request struct {
	// N counts requests from 1.
	N int
	// Via is "webhook" or "chat.postMessage".
	Via string
	// Channel and ThreadTS are what chat.postMessage was given; TS is the
	// ts the fake answered with (Web API only).
	Channel, ThreadTS, TS string
	// Text, Blocks and Attachments count what the message held.
	Text                bool
	Blocks, Attachments int
	// Payload is the message as sent: the webhook's JSON, or
	// chat.postMessage's form fields rebuilt as JSON.
	Payload map[string]any
	// Status is the HTTP status answered; Code Slack's error code, empty
	// when the message was accepted.
	Status int
	Code   string
	// Problems are the limits the message broke.
	Problems []string
}

// Server is a fake Slack. The zero value is not usable: call Start.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	answers  []Answer
	requests []Request
	ts       map[string]int // ts → request number, per accepted Web API message
}

// Start serves a fake Slack on a loopback port.
func Start() *Server {
	s := &Server{ts: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/services/", s.webhook)
	mux.HandleFunc("/api/chat.postMessage", s.postMessage)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, `{"ok":false,"error":"unknown_method"}`)
	})
	s.srv = httptest.NewServer(mux)
	return s
}

// Close stops the server; a hanging request is released.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// URL is the server's base URL.
func (s *Server) URL() string { return s.srv.URL }

// WebhookURL is the incoming webhook the fake accepts.
func (s *Server) WebhookURL() string { return s.srv.URL + "/services/T0LLMDOC/B0LLMDOC/" + HookSecret }

// APIURL is the Web API's base, ending in a slash.
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// Queue makes the next requests get these answers, one each, in order,
// before the fake handles requests itself again.
func (s *Server) Queue(a ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, a...)
}

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Accepted returns the messages the fake accepted.
func (s *Server) Accepted() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Code == "" && r.Status == http.StatusOK {
			out = append(out, r)
		}
	}
	return out
}

// Summary lists the requests one a line: what came in and how it was
// answered, with thread replies naming the request that started the
// thread ("reply to #1"), so a test can compare it whole.
func (s *Server) Summary() string {
	var b strings.Builder
	for _, r := range s.Requests() {
		fmt.Fprintf(&b, "#%d %s", r.N, r.Via)
		if r.Channel != "" {
			fmt.Fprintf(&b, " channel=%s", r.Channel)
		}
		if r.ThreadTS != "" {
			s.mu.Lock()
			n, ok := s.ts[r.ThreadTS]
			s.mu.Unlock()
			if ok {
				fmt.Fprintf(&b, " reply to #%d", n)
			} else {
				fmt.Fprintf(&b, " thread_ts=%s", r.ThreadTS)
			}
		}
		if r.Text {
			b.WriteString(" text")
		}
		fmt.Fprintf(&b, " blocks=%d", r.Blocks)
		if r.Attachments > 0 {
			fmt.Fprintf(&b, " attachments=%d", r.Attachments)
		}
		switch {
		case r.Code != "":
			fmt.Fprintf(&b, " → %d %s", r.Status, r.Code)
		case r.Status != http.StatusOK:
			fmt.Fprintf(&b, " → %d", r.Status)
		default:
			b.WriteString(" → ok")
		}
		for _, p := range r.Problems {
			fmt.Fprintf(&b, " [%s]", p)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// next takes the queued answer, if any, and numbers the request.
func (s *Server) next(r Request) (Request, *Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.N = len(s.requests) + 1
	var a *Answer
	if len(s.answers) > 0 {
		a = &s.answers[0]
		s.answers = s.answers[1:]
	}
	return r, a
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

// answer writes a queued answer.
func (s *Server) answer(w http.ResponseWriter, req *http.Request, r Request, a *Answer) {
	if a.Hang {
		s.record(r)
		<-req.Context().Done()
		return
	}
	if a.RetryAfter != "" {
		w.Header().Set("Retry-After", a.RetryAfter)
	}
	r.Status = a.Status
	if a.Status == http.StatusOK {
		var v struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if json.Unmarshal([]byte(a.Body), &v) == nil && !v.OK {
			r.Code = v.Error
		} else if strings.TrimSpace(a.Body) != "ok" && !v.OK {
			r.Code = strings.TrimSpace(a.Body)
		}
	} else {
		r.Code = strings.TrimSpace(a.Body)
	}
	s.record(r)
	if strings.HasPrefix(a.Body, "{") {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/plain")
	}
	w.WriteHeader(a.Status)
	io.WriteString(w, a.Body)
}

// webhook is an incoming webhook: HTTP 200 "ok", or a status code with
// the error code as plain text.
func (s *Server) webhook(w http.ResponseWriter, req *http.Request) {
	r := Request{Via: "webhook"}
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err := json.Unmarshal(body, &r.Payload); err != nil {
		r.Payload = nil // not JSON: refused below as invalid_payload, as Slack does
	}
	r.Text, r.Blocks, r.Attachments, r.Problems = check(r.Payload)
	r, a := s.next(r)
	if a != nil {
		s.answer(w, req, r, a)
		return
	}
	fail := func(status int, code string) {
		r.Status, r.Code = status, code
		s.record(r)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		io.WriteString(w, code)
	}
	if req.Method != http.MethodPost || req.URL.Path != "/services/T0LLMDOC/B0LLMDOC/"+HookSecret {
		fail(http.StatusNotFound, "no_service")
		return
	}
	if r.Payload == nil {
		fail(http.StatusBadRequest, "invalid_payload")
		return
	}
	if r.Payload["thread_ts"] != nil {
		r.ThreadTS, _ = r.Payload["thread_ts"].(string)
	}
	if code := refusal(r); code != "" {
		fail(http.StatusBadRequest, code)
		return
	}
	r.Status = http.StatusOK
	s.record(r)
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ok")
}

// postMessage is chat.postMessage: a form with the token, the channel and
// the message, answered with JSON under HTTP 200 whatever happened.
func (s *Server) postMessage(w http.ResponseWriter, req *http.Request) {
	// A form that does not parse leaves its fields empty: refused below for
	// its missing token or channel, as Slack refuses it.
	_ = req.ParseForm()
	f := req.PostForm
	r := Request{Via: "chat.postMessage", Channel: f.Get("channel"), ThreadTS: f.Get("thread_ts"), Payload: map[string]any{}}
	for k := range f {
		if k == "token" {
			continue
		}
		v := f.Get(k)
		if k == "blocks" || k == "attachments" {
			var x any
			if json.Unmarshal([]byte(v), &x) == nil {
				r.Payload[k] = x
				continue
			}
		}
		r.Payload[k] = v
	}
	r.Text, r.Blocks, r.Attachments, r.Problems = check(r.Payload)
	r, a := s.next(r)
	if a != nil {
		s.answer(w, req, r, a)
		return
	}
	fail := func(code string) {
		r.Status, r.Code = http.StatusOK, code
		s.record(r)
		writeJSON(w, fmt.Sprintf(`{"ok":false,"error":%q}`, code))
	}
	token := f.Get("token")
	if token == "" {
		token = strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	}
	switch {
	case token == "":
		fail("not_authed")
		return
	case token != Token:
		fail("invalid_auth")
		return
	case r.Channel == NotInChannel:
		fail("not_in_channel")
		return
	case r.Channel != Channel:
		fail("channel_not_found")
		return
	}
	if r.ThreadTS != "" {
		s.mu.Lock()
		_, ok := s.ts[r.ThreadTS]
		s.mu.Unlock()
		if !ok {
			fail("thread_not_found")
			return
		}
	}
	if code := refusal(r); code != "" {
		fail(code)
		return
	}
	r.Status = http.StatusOK
	r.TS = fmt.Sprintf("1767225600.%06d", r.N)
	s.mu.Lock()
	s.ts[r.TS] = r.N
	s.mu.Unlock()
	s.record(r)
	writeJSON(w, fmt.Sprintf(`{"ok":true,"channel":%q,"ts":%q,"message":{"type":"message","text":"","ts":%q}}`, r.Channel, r.TS, r.TS))
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, body)
}

// refusal is the error code for a message the fake will not take. Slack
// itself takes a message without fallback text when it has blocks; the
// fake is stricter, since notifications and screen readers show only the
// text.
func refusal(r Request) string {
	switch {
	case !r.Text && r.Blocks == 0 && r.Attachments == 0:
		return "no_text"
	case !r.Text:
		return "missing_text"
	case r.Attachments > MaxAttachments:
		return "too_many_attachments"
	case len(r.Problems) > 0:
		return "invalid_blocks"
	}
	return ""
}

// Check returns what breaks Slack's limits in a message given as its JSON
// payload (an incoming webhook's body, or chat.postMessage's fields with
// blocks and attachments decoded).
func Check(payload map[string]any) []string {
	_, _, _, p := check(payload)
	return p
}

func check(m map[string]any) (text bool, blocks, attachments int, problems []string) {
	t, _ := m["text"].(string)
	text = strings.TrimSpace(t) != ""
	if n := utf8.RuneCountInString(t); n > MaxText {
		problems = append(problems, fmt.Sprintf("text is %d chars, over %d", n, MaxText))
	}
	all := list(m["blocks"])
	atts := list(m["attachments"])
	attachments = len(atts)
	for _, a := range atts {
		if am, ok := a.(map[string]any); ok {
			all = append(all, list(am["blocks"])...)
		}
	}
	blocks = len(all)
	if blocks > MaxBlocks {
		problems = append(problems, fmt.Sprintf("%d blocks, over %d", blocks, MaxBlocks))
	}
	chars := 0
	for i, b := range all {
		bm, _ := b.(map[string]any)
		typ, _ := bm["type"].(string)
		own := textOf(bm["text"])
		switch typ {
		case "header":
			if n := utf8.RuneCountInString(own); n > MaxHeader {
				problems = append(problems, fmt.Sprintf("block %d: header is %d chars, over %d", i+1, n, MaxHeader))
			}
		case "section":
			if n := utf8.RuneCountInString(own); n > MaxSection {
				problems = append(problems, fmt.Sprintf("block %d: section text is %d chars, over %d", i+1, n, MaxSection))
			}
			fields := list(bm["fields"])
			if len(fields) > MaxFields {
				problems = append(problems, fmt.Sprintf("block %d: %d fields, over %d", i+1, len(fields), MaxFields))
			}
			for _, f := range fields {
				if n := utf8.RuneCountInString(textOf(f)); n > MaxField {
					problems = append(problems, fmt.Sprintf("block %d: a field is %d chars, over %d", i+1, n, MaxField))
				}
			}
		case "":
			problems = append(problems, fmt.Sprintf("block %d has no type", i+1))
		}
		chars += allText(b)
	}
	if chars > MaxBlockChars {
		problems = append(problems, fmt.Sprintf("blocks hold %d chars of text, over %d", chars, MaxBlockChars))
	}
	return text, blocks, attachments, problems
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// textOf is a text object's text.
func textOf(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["text"].(string)
	return s
}

// allText counts the characters of every "text" string inside v.
func allText(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "text" {
				n += utf8.RuneCountInString(s)
				continue
			}
			n += allText(e)
		}
	case []any:
		for _, e := range x {
			n += allText(e)
		}
	}
	return n
}
