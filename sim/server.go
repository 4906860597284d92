package sim

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Epoch is the wall-clock time of virtual time zero in step mode.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Server serves an engine's /metrics (vLLM) and /dcgm/metrics (dcgm-exporter).
//
// With Step set, the first vLLM scrape serves the engine as handed over and
// every later one advances virtual time by Step; samples carry that virtual
// time: a scraper sees a deterministic window of any length in a fraction of
// a second, sampled at the same instants as Offline's. Otherwise virtual time
// runs at Speed virtual seconds per real second, without timestamps, for
// Prometheus.
type Server struct {
	Engine *Engine
	Step   time.Duration
	Speed  float64

	mu         sync.Mutex
	vllm, dcgm *prometheus.Registry
	started    time.Time
	base       float64
	// Step mode: the virtual time the last vLLM scrape served. It moves on
	// a fixed grid, not from Engine.Now, which a step may leave past it.
	at     float64
	served bool
}

// NewServer wraps an engine that has already run its warm-up.
func NewServer(e *Engine, step time.Duration, speed float64) *Server {
	s := &Server{Engine: e, Step: step, Speed: speed, started: time.Now(), base: e.Now(), at: e.until}
	s.vllm, s.dcgm = e.Registries()
	return s
}

// Handler routes /metrics and /dcgm/metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) { s.serve(w, s.vllm, true) })
	mux.HandleFunc("/dcgm/metrics", func(w http.ResponseWriter, r *http.Request) { s.serve(w, s.dcgm, false) })
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {})
	return mux
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
