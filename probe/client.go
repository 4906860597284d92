package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client sends OpenAI-compatible requests and times their streams.
type Client struct {
	// Base is the server's URL without /v1.
	Base string
	// Chat sends /v1/chat/completions instead of /v1/completions.
	Chat bool
	// Model is the model asked for.
	Model string
	// APIKey, when set, is sent as a bearer token; it is never printed.
	APIKey string
	// Header is added to every request.
	Header http.Header
	HTTP   *http.Client
	// Clock gives the time; nil: time.Now.
	Clock func() time.Time
}

// BaseURL normalises a target: scheme and host, an optional path prefix,
// and no trailing /v1 (http:// is assumed when no scheme is given).
func BaseURL(target string) (string, error) {
	t := strings.TrimSpace(target)
	if t == "" {
		return "", errors.New("no target")
	}
	if !strings.Contains(t, "://") {
		t = "http://" + t
	}
	u, err := url.Parse(t)
	if err != nil {
		return "", fmt.Errorf("target %q: %w", target, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("target %q: want an http or https URL", target)
	}
	if u.Host == "" {
		return "", fmt.Errorf("target %q: no host", target)
	}
	p := strings.TrimRight(u.Path, "/")
	for _, suffix := range []string{"/chat/completions", "/completions", "/models"} {
		p = strings.TrimSuffix(p, suffix)
	}
	u.Path = strings.TrimSuffix(p, "/v1")
	u.RawQuery, u.Fragment = "", ""
	return strings.TrimRight(u.String(), "/"), nil
}

// Model is one entry of /v1/models.
type Model struct {
	ID string `json:"id"`
	// MaxModelLen is vLLM's and SGLang's context length; 0 when not given.
	MaxModelLen int `json:"max_model_len"`
}

// Models lists the served models.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	c.decorate(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, &RequestError{What: "GET /v1/models", Err: err}
	}
	defer func() { _ = resp.Body.Close() }() // read only
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, &RequestError{What: "GET /v1/models", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &RequestError{What: "GET /v1/models", Status: resp.StatusCode, Body: errorMessage(body)}
	}
	var list struct {
		Data []Model `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) == 0 {
		return nil, &RequestError{What: "GET /v1/models", Status: resp.StatusCode, Body: "not an OpenAI model list"}
	}
	return list.Data, nil
}

// RequestError is a request the server refused or that did not complete.
type RequestError struct {
	What   string
	Status int
	Body   string
	Err    error
}

func (e *RequestError) Error() string {
	switch {
	case e.Err != nil:
		return e.What + ": " + shortNetError(e.Err)
	case e.Body != "":
		return fmt.Sprintf("%s: HTTP %d: %s", e.What, e.Status, e.Body)
	}
	return fmt.Sprintf("%s: HTTP %d", e.What, e.Status)
}

func (e *RequestError) Unwrap() error { return e.Err }

// errorMessage is an OpenAI error body's message, or the body's first line.
func errorMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &e) == nil {
		switch {
		case e.Error != nil && e.Error.Message != "":
			return oneLine(e.Error.Message)
		case e.Message != "":
			return oneLine(e.Message)
		case e.Detail != "":
			return oneLine(e.Detail)
		}
	}
	return oneLine(string(body))
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return strings.ToValidUTF8(s, "�")
}

func (c *Client) decorate(req *http.Request) {
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
}

func (c *Client) now() time.Time {
	if c.Clock != nil {
		return c.Clock()
	}
	return time.Now()
}

// Sample is one request as the probe saw it. Times are seconds.
type Sample struct {
	// Start is when it was sent, from the start of the probe.
	Start float64 `json:"start"`
	// Prompt and Output are the server's token counts (usage); Output
	// falls back to the streamed chunks when the server sends no usage.
	Prompt int `json:"prompt_tokens"`
	Output int `json:"output_tokens"`
	// Asked is the prompt length the probe aimed at; MaxTokens the output
	// it asked for (with ignore_eos).
	Asked     int     `json:"asked_prompt_tokens,omitempty"`
	MaxTokens int     `json:"max_tokens,omitempty"`
	TTFT      float64 `json:"ttft"`
	E2E       float64 `json:"e2e"`
	// ITLs are the gaps between streamed chunks that carried text.
	ITLs []float64 `json:"itls,omitempty"`
	// Usage is whether the server reported token counts.
	Usage bool `json:"usage"`
	// Status is the HTTP status; 0 when no response came.
	Status int `json:"status,omitempty"`
	// Error is why the request failed; empty when it succeeded.
	Error string `json:"error,omitempty"`
	// Refused: 429 or 503, the server asking the client to back off.
	Refused bool `json:"refused,omitempty"`
	// Cut: the probe stopped (interrupted or out of time) while it ran.
	Cut bool `json:"cut,omitempty"`
}

// OK reports whether the request completed.
func (s Sample) OK() bool { return s.Error == "" }

// TPOT is the mean time per output token after the first.
func (s Sample) TPOT() float64 {
	if s.Output < 2 {
		return 0
	}
	return (s.E2E - s.TTFT) / float64(s.Output-1)
}

// ignoreEOS asks vLLM, SGLang and compatible simulators for exactly
// max_tokens tokens, so a step's output lengths are the ones planned.
type completionRequest struct {
	Model         string         `json:"model"`
	Prompt        string         `json:"prompt,omitempty"`
	Messages      []chatMessage  `json:"messages,omitempty"`
	MaxTokens     int            `json:"max_tokens"`
	Stream        bool           `json:"stream"`
	StreamOptions map[string]any `json:"stream_options"`
	IgnoreEOS     bool           `json:"ignore_eos"`
	Temperature   float64        `json:"temperature"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamChunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Complete sends one streamed request and times it from start (the probe's
// zero) on. A request cut by ctx is marked Cut.
func (c *Client) Complete(ctx context.Context, start time.Time, prompt string, maxTokens int) Sample {
	body := completionRequest{Model: c.Model, MaxTokens: maxTokens, Stream: true,
		StreamOptions: map[string]any{"include_usage": true}, IgnoreEOS: true}
	path := "/v1/completions"
	if c.Chat {
		path = "/v1/chat/completions"
		body.Messages = []chatMessage{{Role: "user", Content: prompt}}
	} else {
		body.Prompt = prompt
	}
	buf, _ := json.Marshal(body) // plain strings and numbers always encode
	sent := c.now()
	s := Sample{Start: sent.Sub(start).Seconds(), MaxTokens: maxTokens}
	fail := func(status int, why string) Sample {
		s.Status, s.Error = status, why
		s.Refused = status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
		s.Cut = ctx.Err() != nil
		s.E2E = c.now().Sub(sent).Seconds()
		return s
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, bytes.NewReader(buf))
	if err != nil {
		return fail(0, err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	c.decorate(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fail(0, "stopped before an answer")
		}
		return fail(0, shortNetError(err))
	}
	defer func() { _ = resp.Body.Close() }() // read only
	s.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		why := "HTTP " + strconv.Itoa(resp.StatusCode)
		if m := errorMessage(msg); m != "" {
			why += ": " + m
		}
		return fail(resp.StatusCode, why)
	}
	st, err := readStream(resp.Body, sent, c.now)
	s.TTFT, s.ITLs = st.ttft, st.itls
	if st.usage {
		s.Prompt, s.Output, s.Usage = st.prompt, st.output, true
	}
	s.E2E = c.now().Sub(sent).Seconds()
	switch {
	case ctx.Err() != nil && (err != nil || !st.done):
		return fail(resp.StatusCode, "stopped while streaming")
	case err != nil:
		return fail(resp.StatusCode, err.Error())
	case st.chunks == 0:
		return fail(resp.StatusCode, "the stream carried no text")
	}
	if !s.Usage {
		s.Output = st.chunks
	}
	return s
}

// streamed is what a server-sent event stream of completion chunks held.
type streamed struct {
	ttft           float64
	itls           []float64
	chunks         int
	prompt, output int
	usage, done    bool
}

// readStream reads an OpenAI stream (data: lines, [DONE] at the end),
// timing each chunk that carries text from sent on. A chunk that is not
// JSON, an error event, an over-long line or a broken connection is an
// error naming it; what was read until then is returned too.
func readStream(body io.Reader, sent time.Time, now func() time.Time) (streamed, error) {
	var st streamed
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var last time.Time
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data:")) {
			continue // comments, event names, blank separators
		}
		data := bytes.TrimSpace(line[5:])
		if bytes.Equal(data, []byte("[DONE]")) {
			st.done = true
			return st, nil
		}
		var ch streamChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return st, errors.New("a stream chunk is not JSON: " + oneLine(string(data)))
		}
		if ch.Error != nil {
			return st, errors.New("the stream reported an error: " + oneLine(ch.Error.Message))
		}
		if ch.Usage != nil {
			if ch.Usage.PromptTokens < 0 || ch.Usage.CompletionTokens < 0 {
				return st, fmt.Errorf("the stream's usage counts are negative (%d prompt, %d completion tokens)",
					ch.Usage.PromptTokens, ch.Usage.CompletionTokens)
			}
			st.prompt, st.output, st.usage = ch.Usage.PromptTokens, ch.Usage.CompletionTokens, true
		}
		text := false
		for _, choice := range ch.Choices {
			if choice.Text != "" || choice.Delta.Content != "" || choice.Delta.ReasoningContent != "" {
				text = true
			}
		}
		if !text {
			continue
		}
		t := now()
		if st.chunks == 0 {
			st.ttft = t.Sub(sent).Seconds()
		} else {
			st.itls = append(st.itls, t.Sub(last).Seconds())
		}
		last = t
		st.chunks++
	}
	if err := sc.Err(); err != nil {
		return st, errors.New("the stream broke: " + shortNetError(err))
	}
	return st, nil
}

// shortNetError drops the URL net/http repeats in its errors (the target
// is named once by the report).
func shortNetError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
