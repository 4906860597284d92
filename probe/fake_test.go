package probe

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// stream is a minimal OpenAI-compatible streaming server with known
// timings: TTFT = base + perToken × prompt words, a fixed gap between
// tokens, and at most slots requests served at once (the rest wait). The
// probe's measurement is validated against the simulators; this server
// checks the probe's own bookkeeping: bounds, stops, credentials.
type stream struct {
	base, perToken, gap time.Duration
	slots               chan struct{}
	key                 string
	requests            atomic.Int64
	status              func(n int64) int // non-200 answers by request number
	onRequest           func(n int64)
}

func newStream(t *testing.T, s *stream) *httptest.Server {
	if s.slots == nil {
		s.slots = make(chan struct{}, 64)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		if s.key != "" && r.Header.Get("Authorization") != "Bearer "+s.key {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"invalid api key"}}`)
			return
		}
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model","max_model_len":32768}]}`)
	})
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		n := s.requests.Add(1)
		if s.onRequest != nil {
			s.onRequest(n)
		}
		if s.key != "" && r.Header.Get("Authorization") != "Bearer "+s.key {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if s.status != nil {
			if code := s.status(n); code != http.StatusOK {
				w.WriteHeader(code)
				return
			}
		}
		var req struct {
			Prompt    string `json:"prompt"`
			MaxTokens int    `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		prompt := len(strings.Fields(req.Prompt))
		select {
		case s.slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-s.slots }()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		if !pause(r, s.base+time.Duration(prompt)*s.perToken) {
			return
		}
		for i := 0; i < req.MaxTokens; i++ {
			if i > 0 && !pause(r, s.gap) {
				return
			}
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\" t\",\"finish_reason\":null}]}\n\n")
			fl.Flush()
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", prompt, req.MaxTokens)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func pause(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
