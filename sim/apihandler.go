package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// writeAPIError writes vLLM's error body with its status.
func writeAPIError(w http.ResponseWriter, code int, typ, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	// A client that went away cannot be told.
	_ = json.NewEncoder(w).Encode(apiError{Object: "error", Message: fmt.Sprintf(format, args...), Type: typ, Code: code})
}

// realTimeOnly answers 503 in step mode and reports whether it did.
func (s *Server) realTimeOnly(w http.ResponseWriter) bool {
	if s.Step > 0 {
		writeAPIError(w, http.StatusServiceUnavailable, "ServiceUnavailableError",
			"the simulator runs in step mode, where virtual time is not wall time: serve it at a speed to answer /v1 requests")
		return true
	}
	return false
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeAPIError(w, http.StatusMethodNotAllowed, "BadRequestError", "/v1/models takes GET")
		return
	}
	if s.realTimeOnly(w) {
		return
	}
	body := struct {
		Object string      `json:"object"`
		Data   []modelCard `json:"data"`
	}{"list", []modelCard{{ID: s.Engine.ServedModel(), Object: "model", Created: s.started.Unix(),
		OwnedBy: "llmdoctor-sim", MaxModelLen: s.Engine.MaxModelLen()}}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body) // a client that went away cannot be told
}

func (s *Server) completions(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeAPIError(w, http.StatusMethodNotAllowed, "BadRequestError", "%s takes POST", r.URL.Path)
			return
		}
		if s.realTimeOnly(w) {
			return
		}
		// The request arrives when its headers have: reading and counting
		// its prompt is real front-end time, which the engine's modelled
		// front end then overlaps.
		arrival := s.virtualNow()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeAPIError(w, http.StatusRequestEntityTooLarge, "BadRequestError", "the request body is over %d bytes", tooBig.Limit)
				return
			}
			writeAPIError(w, http.StatusBadRequest, "BadRequestError", "cannot read the request body: %v", err)
			return
		}
		req, err := parseCompletionRequest(body, chat)
		if err != nil {
			writeAPIError(w, http.StatusBadRequest, "BadRequestError", "%v", err)
			return
		}
		model := s.Engine.ServedModel()
		if req.Model != "" && req.Model != model {
			writeAPIError(w, http.StatusNotFound, "NotFoundError", "The model `%s` does not exist.", req.Model)
			return
		}
		if limit := s.Engine.MaxModelLen(); req.MaxTokens > limit || req.PromptTokens+req.MaxTokens > limit {
			writeAPIError(w, http.StatusBadRequest, "BadRequestError",
				"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
				limit, req.PromptTokens+req.MaxTokens, req.PromptTokens, req.MaxTokens)
			return
		}

		blocks := blockHashes(req.tokens, s.Engine.sc.Engine.BlockSize)
		call := newAPICall()
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			writeAPIError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "the simulator is shutting down")
			return
		}
		er := s.Engine.submit(arrival, req.PromptTokens, req.MaxTokens, req.Stream, call, blocks)
		s.inFlight++
		if !s.driving {
			s.driving = true
			go s.drive()
		}
		s.mu.Unlock()
		s.poke()
		defer func() {
			s.mu.Lock()
			s.inFlight--
			s.mu.Unlock()
		}()

		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(s.ctx, cancel)
		defer stop()
		if !s.deliver(ctx, w, req, model, call) {
			s.mu.Lock()
			s.Engine.abort(er)
			s.mu.Unlock()
		}
	}
}

// deliver writes a request's answer, each token when its step ends on the
// wall clock. It reports false when the client went away (or the server
// closed) first.
func (s *Server) deliver(ctx context.Context, w http.ResponseWriter, req *completionRequest, model string, call *apiCall) bool {
	id := fmt.Sprintf("cmpl-sim-%d", s.ids.Add(1))
	object := "text_completion"
	if req.Chat {
		id = "chat" + id
		object = "chat.completion"
	}
	created := time.Now().Unix()
	flusher, _ := w.(http.Flusher)
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		if flusher != nil {
			flusher.Flush()
		}
		object += ".chunk"
		if !req.Chat {
			object = "text_completion"
		}
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	waitUntil := func(v float64) bool {
		d := time.Until(s.wallAt(v))
		if d <= 0 {
			return ctx.Err() == nil
		}
		timer.Reset(d)
		select {
		case <-timer.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	send := func(resp completionResponse) bool {
		b, err := json.Marshal(resp)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	length := "length"
	var text strings.Builder
	var buf []float64
	n := 0
	for {
		toks, done := call.take(buf)
		buf = toks
		for i := 0; i < len(toks); {
			at := toks[i]
			if !waitUntil(at) {
				return false
			}
			// Tokens of one engine step go out as one chunk, as vLLM and
			// SGLang stream what a speculative step kept.
			t, start := "", n
			for ; i < len(toks) && toks[i] == at; i++ {
				t += tokenText(n)
				n++
			}
			if !req.Stream {
				text.WriteString(t)
				continue
			}
			c := choice{}
			if req.Chat {
				c.Delta = &chatMessage{Content: &t}
				if start == 0 {
					c.Delta.Role = "assistant"
				}
			} else {
				c.Text = &t
			}
			if n >= req.MaxTokens {
				c.FinishReason = &length
			}
			if !send(completionResponse{ID: id, Object: object, Created: created, Model: model, Choices: []choice{c}}) {
				return false
			}
		}
		if done {
			if !waitUntil(call.doneAt) {
				return false
			}
			break
		}
		select {
		case <-call.notify:
		case <-ctx.Done():
			return false
		}
	}
	u := &usage{PromptTokens: req.PromptTokens, CompletionTokens: n, TotalTokens: req.PromptTokens + n}
	if req.Stream {
		if req.IncludeUsage && !send(completionResponse{ID: id, Object: object, Created: created, Model: model,
			Choices: []choice{}, Usage: u}) {
			return true // the request finished; only its usage went missing
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n") // the request finished; a client gone now changes nothing
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	reason := call.reason
	all := text.String()
	c := choice{FinishReason: &reason}
	if req.Chat {
		c.Message = &chatMessage{Role: "assistant", Content: &all}
	} else {
		c.Text = &all
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(completionResponse{ID: id, Object: object, Created: created, Model: model,
		Choices: []choice{c}, Usage: u}) // the request finished; a client gone now changes nothing
	return true
}
