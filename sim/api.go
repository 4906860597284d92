package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"sync"
)

// dummyTokens is llm-d-inference-sim's dummy tokenizer: one token per match,
// a punctuation mark or a word with the spaces after it.
var dummyTokens = regexp.MustCompile(`(\{|\}|:|,|-|\.|\?|\!|;|@|#|\$|%|\^|&|\*|\(|\)|\+|\-|_|~|/|\\|>|<|\[|\]|=|"|'|\w+)(\s*)`)

// CountTokens counts text's tokens as llm-d-inference-sim's dummy tokenizer
// does (--force-dummy-tokenizer): a word, or a punctuation mark, with the
// white space after it, is one token; other characters count nothing.
func CountTokens(text string) int {
	return len(dummyTokens.FindAllStringIndex(text, -1))
}

// appendTokens appends text's tokens (as CountTokens counts them) to toks.
func appendTokens(toks []string, text string) []string {
	for _, m := range dummyTokens.FindAllStringSubmatchIndex(text, -1) {
		toks = append(toks, text[m[2]:m[3]])
	}
	return toks
}

// blockHashes chains a hash over each full block of bs tokens: the i-th is
// the identity of the prompt's first i+1 blocks, as vLLM's prefix cache
// keys them.
func blockHashes(tokens []string, bs int) []uint64 {
	if bs < 1 {
		return nil
	}
	out := make([]uint64, 0, len(tokens)/bs)
	h := fnv.New64a()
	for i, t := range tokens {
		_, _ = h.Write([]byte(t)) // a hash's Write never fails
		_, _ = h.Write([]byte{0})
		if (i+1)%bs == 0 {
			out = append(out, h.Sum64())
		}
	}
	return out
}

// maxRequestBody bounds a completion request's body.
const maxRequestBody = 8 << 20

// defaultMaxTokens is max_tokens when a request leaves it out.
const defaultMaxTokens = 16

// completionRequest is what the simulator reads of a /v1/completions or
// /v1/chat/completions body; other fields are ignored.
type completionRequest struct {
	Chat         bool
	Model        string
	PromptTokens int
	// tokens are the prompt's tokens (a chat's with one separator per
	// message), which the prefix cache keys on.
	tokens       []string
	MaxTokens    int
	Stream       bool
	IncludeUsage bool
	IgnoreEOS    bool
}

type rawRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []rawMessage    `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"`
}

type rawMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// parseCompletionRequest reads a request body; chat selects the
// chat-completions shape (messages) over the completions one (prompt). Its
// errors are worded for the client.
func parseCompletionRequest(body []byte, chat bool) (*completionRequest, error) {
	var raw rawRequest
	if err := json.Unmarshal(body, &raw); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			if typ.Field == "" {
				return nil, fmt.Errorf("the request body is a JSON %s, not an object", typ.Value)
			}
			return nil, fmt.Errorf("%s must not be a JSON %s", typ.Field, typ.Value)
		}
		return nil, fmt.Errorf("the request body is not a JSON object: %w", err)
	}
	req := &completionRequest{Chat: chat, Model: raw.Model, Stream: raw.Stream, IgnoreEOS: raw.IgnoreEOS,
		MaxTokens: defaultMaxTokens}
	if raw.Stream && raw.StreamOptions != nil {
		req.IncludeUsage = raw.StreamOptions.IncludeUsage
	}
	limit := raw.MaxTokens
	if chat {
		if raw.Prompt != nil {
			return nil, errors.New("a chat completion takes messages, not prompt")
		}
		if len(raw.Messages) == 0 {
			return nil, errors.New("messages must not be empty")
		}
		for i, m := range raw.Messages {
			text, err := messageText(m.Content)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].content: %w", i, err)
			}
			req.tokens = append(req.tokens, "\x00"+m.Role)
			req.tokens = appendTokens(req.tokens, text)
		}
		req.PromptTokens = len(req.tokens)
		if raw.MaxCompletionTokens != nil {
			limit = raw.MaxCompletionTokens
		}
	} else {
		if raw.Messages != nil {
			return nil, errors.New("a completion takes prompt, not messages (use /v1/chat/completions)")
		}
		text, err := promptText(raw.Prompt)
		if err != nil {
			return nil, err
		}
		req.tokens = appendTokens(nil, text)
		req.PromptTokens = len(req.tokens)
		if req.PromptTokens == 0 {
			return nil, errors.New("prompt has no tokens")
		}
	}
	if limit != nil {
		if *limit < 1 {
			return nil, fmt.Errorf("max_tokens must be at least 1, got %d", *limit)
		}
		req.MaxTokens = *limit
	}
	return req, nil
}

// promptText reads a completion's prompt: a string, or an array of one string.
func promptText(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", errors.New("prompt is required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		if len(list) != 1 {
			return "", fmt.Errorf("prompt: the simulator takes one prompt per request, got %d", len(list))
		}
		return list[0], nil
	}
	return "", errors.New("prompt must be a string or an array of one string")
}

// messageText reads a chat message's content: a string, or an array of text
// parts ({"type":"text","text":...}), whose texts are joined.
func messageText(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or an array of text parts")
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("part %d has type %q; the simulator reads text parts only", i, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// apiCall is an API request's side of the engine: the engine (under the
// server's lock) reports each token's and the finish's virtual time; the
// handler takes them and writes each when its time comes on the wall clock.
type apiCall struct {
	mu       sync.Mutex
	tokens   []float64 // virtual times of tokens not yet taken
	done     bool
	doneAt   float64
	reason   string
	notify   chan struct{}
	produced int
}

func newAPICall() *apiCall { return &apiCall{notify: make(chan struct{}, 1)} }

func (c *apiCall) token(at float64) {
	c.mu.Lock()
	c.tokens = append(c.tokens, at)
	c.produced++
	c.mu.Unlock()
	c.signal()
}

func (c *apiCall) finished(at float64, reason string) {
	c.mu.Lock()
	c.done, c.doneAt, c.reason = true, at, reason
	c.mu.Unlock()
	c.signal()
}

func (c *apiCall) signal() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// take returns the tokens produced since the last take, and whether the
// request has finished.
func (c *apiCall) take(buf []float64) (tokens []float64, done bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tokens = append(buf[:0], c.tokens...)
	c.tokens = c.tokens[:0]
	return tokens, c.done
}

// words make the generated text: token i is words[i%len(words)], with a
// space before it after the first, so CountTokens of the text is the number
// of tokens.
var words = strings.Fields("the quick brown fox jumps over a lazy dog while simulated engines stream tokens in real time")

func tokenText(i int) string {
	if i == 0 {
		return words[0]
	}
	return " " + words[i%len(words)]
}

// apiError is vLLM's error body.
type apiError struct {
	Object  string `json:"object"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
}

type chatMessage struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type choice struct {
	Index        int          `json:"index"`
	Text         *string      `json:"text,omitempty"`
	Message      *chatMessage `json:"message,omitempty"`
	Delta        *chatMessage `json:"delta,omitempty"`
	Logprobs     any          `json:"logprobs"`
	FinishReason *string      `json:"finish_reason"`
}

type completionResponse struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}
