package sim

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Epoch is the wall-clock time of virtual time zero in step mode.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Server serves an engine's /metrics (vLLM) and /dcgm/metrics (dcgm-exporter)
// and, in real time, an OpenAI-compatible API (/v1/models, /v1/completions,
// /v1/chat/completions) whose requests the engine serves with its own.
//
// With Step set, the first vLLM scrape serves the engine as handed over and
// every later one advances virtual time by Step; samples carry that virtual
// time: a scraper sees a deterministic window of any length in a fraction of
// a second, sampled at the same instants as Offline's. The API then answers
// 503, as virtual time is not wall time. Otherwise virtual time runs at
// Speed virtual seconds per real second, without timestamps, for
// Prometheus, and the API answers in real time: see Handler.
type Server struct {
	Engine *Engine
	Step   time.Duration
	Speed  float64

	mu         sync.Mutex
	vllm, dcgm *prometheus.Registry
	// others are the scenario's other servers' /metrics: a split
	// deployment's prefill instance, the replicas behind a router and the
	// router itself.
	others      []Endpoint
	ownInstance string
	started     time.Time
	base        float64
	// Step mode: the virtual time the last vLLM scrape served. It moves on
	// a fixed grid, not from Engine.Now, which a step may leave past it.
	at     float64
	served bool

	// Real time: the driver moves the engine while API requests are in
	// flight; wake tells it of a new one; ctx ends with Close.
	ctx        context.Context
	cancel     context.CancelFunc
	wake       chan struct{}
	driving    bool
	driverDone chan struct{}
	inFlight   int
	ids        atomic.Int64
	// wakes counts the driver's turns (a test sees it rest when idle).
	wakes atomic.Int64
}

// NewServer wraps an engine that has already run its warm-up. A server in
// real time (step 0) that has answered API requests runs a goroutine until
// Close.
func NewServer(e *Engine, step time.Duration, speed float64) *Server {
	s := &Server{Engine: e, Step: step, Speed: speed, started: time.Now(), base: e.Now(), at: e.until,
		wake: make(chan struct{}, 1), driverDone: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.vllm, s.dcgm = e.Registries()
	eps := e.Endpoints()
	s.others, s.ownInstance = eps[1:], eps[0].Instance
	return s
}

// Close stops the engine's driver and ends the API requests in flight
// (their clients see the stream cut; the engine counts them aborted). The
// metrics are still served. It is safe to call more than once.
func (s *Server) Close() error {
	s.cancel()
	s.mu.Lock()
	driving := s.driving
	s.mu.Unlock()
	if driving {
		<-s.driverDone
	}
	return nil
}

// AllPath serves, for a scenario of several servers, all their metrics in
// one exposition, each series labelled with its server's instance; in step
// mode a scrape of it advances the clock as one of /metrics does.
const AllPath = "/all/metrics"

// gatherAll gathers several servers' metrics as one.
type gatherAll []Endpoint

func (g gatherAll) Gather() ([]*dto.MetricFamily, error) { return mergeEndpoints(g) }

// Endpoint is one server's /metrics in a scenario: its path on the
// simulator, the instance label a Prometheus scraping it would give it,
// and its metrics.
type Endpoint struct {
	Path, Instance string
	Registry       *prometheus.Registry
}

// Endpoints are the scenario's servers' metrics, the engine's own first at
// /metrics. A split prefill/decode deployment adds its prefill instance (the
// engine is the decode instance); a router, the other replicas and itself.
// With one server its instance label is left to the scraper.
func (e *Engine) Endpoints() []Endpoint {
	own, _ := e.Registries()
	switch {
	case e.prefill != nil:
		p, _ := e.prefill.Registries()
		return []Endpoint{{"/metrics", "decode-0:8000", own}, {"/prefill/metrics", "prefill-0:8000", p}}
	case e.router != nil:
		out := []Endpoint{{"/metrics", ReplicaPod(0) + ":8000", own}}
		for i, x := range e.router.replicas[1:] {
			r, _ := x.Registries()
			out = append(out, Endpoint{"/replica/" + strconv.Itoa(i+1) + "/metrics", ReplicaPod(i+1) + ":8000", r})
		}
		return append(out, Endpoint{"/router/metrics", "router-0:9090", e.RouterRegistry()})
	}
	return []Endpoint{{Path: "/metrics", Registry: own}}
}

// Handler routes /metrics, /dcgm/metrics, /health and the OpenAI-compatible
// API; a scenario's other servers' metrics at their Endpoints' paths.
//
// In real time, /v1/completions and /v1/chat/completions requests join the
// engine's FCFS queue with the scenario's own requests, under the same
// limits, and count in every metric. Each token is written (streaming: one
// server-sent event per token, flushed) when the engine step that produced
// it ends on the wall clock, so a client measures the engine's TTFT (front
// end, queue, prefill) and inter-token latency. The simulator has no EOS:
// every request generates max_tokens tokens (default 16) and finishes with
// reason "length", ignore_eos or not. Prompt tokens are counted by
// CountTokens; a chat's are its messages' contents plus one separator token
// per message (standing for the chat template's role marker). With prefix
// caching on, a prompt reuses the full blocks (block_size tokens) it
// shares from its start with an earlier API prompt still cached, as vLLM
// keys its cache; a distinct start reuses nothing. A client that goes away
// aborts its request (finished_reason "abort", in no latency histogram).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) { s.serve(w, s.vllm, true) })
	mux.HandleFunc("/dcgm/metrics", func(w http.ResponseWriter, r *http.Request) { s.serve(w, s.dcgm, false) })
	for _, o := range s.others {
		mux.HandleFunc(o.Path, func(w http.ResponseWriter, r *http.Request) { s.serve(w, o.Registry, false) })
	}
	if len(s.others) > 0 {
		// Every server's metrics in one exposition, instance-labelled, as
		// a federating Prometheus gives them: one scrape, one clock.
		all := append([]Endpoint{{Path: "/metrics", Instance: s.ownInstance, Registry: s.vllm}}, s.others...)
		mux.HandleFunc(AllPath, func(w http.ResponseWriter, r *http.Request) { s.serve(w, gatherAll(all), true) })
	}
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/v1/models", s.models)
	mux.HandleFunc("/v1/completions", s.completions(false))
	mux.HandleFunc("/v1/chat/completions", s.completions(true))
	return mux
}

// virtualNow is the virtual time the wall clock has reached (real time).
func (s *Server) virtualNow() float64 {
	return s.base + time.Since(s.started).Seconds()*s.Speed
}

// wallAt is when virtual time v falls on the wall clock (real time).
func (s *Server) wallAt(v float64) time.Time {
	return s.started.Add(time.Duration((v - s.base) / s.Speed * float64(time.Second)))
}

// drive advances the engine with the wall clock while API requests are in
// flight: it computes each step when it starts, sleeps until the next event
// (a step's end, an arrival), and sleeps until woken when nothing is in
// flight (scrapes then move the clock, as without the API).
func (s *Server) drive() {
	defer close(s.driverDone)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.wakes.Add(1)
		s.mu.Lock()
		t := s.virtualNow()
		s.Engine.AdvanceTo(t)
		busy := s.inFlight > 0
		var d time.Duration
		if busy {
			// Nothing to come (every request in flight has its last token,
			// no traffic of the scenario's own): wait for a new request.
			next, poll := s.Engine.nextEvent(t)
			busy = !math.IsInf(next, 1)
			d = time.Until(s.wallAt(math.Min(next, t+3600*s.Speed)))
			if poll {
				d = max(d, time.Millisecond)
			}
		}
		s.mu.Unlock()
		switch {
		case !busy:
			select {
			case <-s.wake:
			case <-s.ctx.Done():
				return
			}
		case d > 0:
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-s.wake:
			case <-s.ctx.Done():
				return
			}
		case s.ctx.Err() != nil:
			return
		}
	}
}

// poke wakes the driver.
func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Server) serve(w http.ResponseWriter, g prometheus.Gatherer, advance bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.Step > 0 && advance:
		if s.served {
			s.at += s.Step.Seconds()
		}
		s.served = true
		s.Engine.AdvanceTo(s.at)
	case s.Step == 0:
		s.Engine.AdvanceTo(s.base + time.Since(s.started).Seconds()*s.Speed)
	}
	fams, err := g.Gather()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if s.Step > 0 {
		ts := Epoch.Add(time.Duration(s.at * float64(time.Second))).UnixMilli()
		stamp(fams, ts)
	}
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			return
		}
	}
}

func stamp(fams []*dto.MetricFamily, ms int64) {
	for _, f := range fams {
		for _, m := range f.Metric {
			m.TimestampMs = &ms
		}
	}
}

// ServeLoopback serves s (metrics and the OpenAI API) on a free loopback
// port; stop closes s, then the listener, and waits for the server to end.
func ServeLoopback(s *Server) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("cannot listen on loopback: %w", err)
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln) // ErrServerClosed once closed
	}()
	return "http://" + ln.Addr().String(), func() {
		_ = s.Close() // ends streams still open; never fails
		_ = hs.Close()
		<-done
	}, nil
}
