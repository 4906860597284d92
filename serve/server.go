// Package serve is llmdoctor's long-running server: it diagnoses targets of
// a Prometheus-compatible source on demand (Alertmanager, Slack) and on a
// schedule (watch), posts to Slack, and exposes what it found as metrics.
// Every diagnosis goes through the diagnosis package; nothing here judges.
package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/serve/alertmanager"
	"github.com/llmdoctor/llmdoctor/serve/core"
	"github.com/llmdoctor/llmdoctor/serve/slackapp"
	"github.com/llmdoctor/llmdoctor/serve/watch"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// Config is what a server needs; cmd/llmdoctor fills it from flags or
// serve.yaml.
type Config struct {
	// Listen is the address to serve on (":8080").
	Listen string
	// Prom is the source every diagnosis reads; Options.Window is the
	// default window, Options.End is ignored (each request has its own).
	Prom diagnosis.PromSource
	// Rules and RuleConfig judge every diagnosis.
	Rules      *rules.Set
	RuleConfig *rules.Config
	// Slack is where reports are posted; zero: nowhere.
	Slack slackkit.Destination
	// ExternalURL is this server's address as users reach it, for links
	// in Slack messages ("" for none). Its path, if any, prefixes the
	// links between the report pages (a proxy that strips it).
	ExternalURL string
	// ReportHistory is how many runs of each target the report pages
	// keep, in memory (default DefaultReportHistory).
	ReportHistory int
	// MaxConcurrent bounds diagnoses in flight (default 4); a request
	// beyond it is answered "busy" at once.
	MaxConcurrent int
	// RequestTimeout bounds one diagnosis (default 60s).
	RequestTimeout time.Duration
	// Logger logs one line per event (default: discard).
	Logger *slog.Logger
	// The parts, each configured in its own file: nil turns it off.
	Alertmanager *AlertmanagerConfig
	SlackApp     *SlackAppConfig
	Watch        *WatchConfig
}

// AlertmanagerConfig configures the Alertmanager receiver (package
// alertmanager).
type AlertmanagerConfig = alertmanager.Config

// DefaultAlertLabels are the alert labels a receiver without Labels takes
// into the selector; DefaultLeadIn the time before an alert's start its
// window begins at.
var DefaultAlertLabels = alertmanager.DefaultLabels

const DefaultLeadIn = alertmanager.DefaultLeadIn

// registerAlertmanager adds the receiver's route and metric when it is
// configured.
func (s *Server) registerAlertmanager() error {
	am, err := alertmanager.Register(s, s.cfg.Alertmanager)
	if err != nil || am == nil {
		return err
	}
	if err := s.metrics.reg.Register(am.Collector()); err != nil {
		return err
	}
	s.am = am
	return nil
}

// SlackAppConfig configures the Slack app (package slackapp).
type SlackAppConfig = slackapp.Config

// DefaultSlackMaxBody bounds a request from Slack when
// SlackAppConfig.MaxBody is zero.
const DefaultSlackMaxBody = slackapp.DefaultMaxBody

// registerSlackApp adds the Slack app's routes when it is configured.
func (s *Server) registerSlackApp() (err error) {
	s.slackOn, err = slackapp.Register(s, s.cfg.SlackApp)
	return err
}

// WatchConfig configures the watch (package watch).
type WatchConfig = watch.Config

// The watch's defaults.
const (
	DefaultWatchEvery = watch.DefaultEvery
	DefaultWatchHold  = watch.DefaultHold
)

// registerWatch checks the watch's configuration and loads its state when
// it is configured; Serve runs it.
func (s *Server) registerWatch() (err error) {
	s.watch, err = watch.Register(s, s.cfg.Watch)
	return err
}

// Request says what to diagnose (core.Request).
type Request = core.Request

// ErrBusy is returned when MaxConcurrent diagnoses are in flight.
var ErrBusy = core.ErrBusy

// Server serves the routes and runs the loops.
type Server struct {
	cfg  Config
	mux  *http.ServeMux
	sem  chan struct{}
	log  *slog.Logger
	wg   sync.WaitGroup // in-flight background work (posts) finished on shutdown
	now  func() time.Time
	diag func(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error)
	// metrics are what /metrics serves (api.go); every diagnosis and post
	// through the server counts in them.
	metrics *metrics
	// am is the Alertmanager receiver (package alertmanager), nil when
	// off.
	am *alertmanager.Receiver
	// ping checks that Prometheus answers (api.go; tests replace it).
	ping func(ctx context.Context) error
	// history is the runs the report pages show (history.go); base is
	// the path of ExternalURL, which prefixes the pages' links.
	history *history
	base    string
	// slackOn: the Slack app's routes are served.
	slackOn bool
	// watch is the watch (package watch), nil when off.
	watch *watch.Watcher
}

// New builds a server; routes of every part are registered here.
func New(cfg Config) (*Server, error) {
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 4
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.ReportHistory == 0:
		cfg.ReportHistory = DefaultReportHistory
	case cfg.ReportHistory < 0:
		return nil, fmt.Errorf("report history %d: keep 1 run of each target or more", cfg.ReportHistory)
	}
	var base string
	if cfg.ExternalURL != "" {
		u, err := url.Parse(cfg.ExternalURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("external URL %q: want this server's URL, like https://llmdoctor.example.com", cfg.ExternalURL)
		}
		base = strings.TrimRight(u.EscapedPath(), "/")
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), sem: make(chan struct{}, cfg.MaxConcurrent), log: cfg.Logger, now: time.Now,
		metrics: newMetrics(), history: newHistory(cfg.ReportHistory, historyMaxTargets), base: base}
	s.diag = func(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error) {
		return diagnosis.Run(ctx, src, cfg.Rules, cfg.RuleConfig, nil)
	}
	// One clock: a target's age in /metrics is measured on the clock that
	// stamped its diagnosis.
	s.metrics.now = func() time.Time { return s.now() }
	s.ping = s.pingProm
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	for _, register := range []func() error{s.registerAPI, s.registerPages, s.registerAlertmanager, s.registerSlackApp, s.registerWatch} {
		if err := register(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Handler is the server's routes.
func (s *Server) Handler() http.Handler { return s.mux }

// Diagnose runs one diagnosis within the concurrency limit and the request
// timeout.
func (s *Server) Diagnose(ctx context.Context, req Request) (*advisor.Diagnosis, error) {
	d, _, err := s.diagnose(ctx, req)
	return d, err
}

// diagnose is Diagnose, with the runs it kept for the report pages (see
// diagnoseHeld).
func (s *Server) diagnose(ctx context.Context, req Request) (*advisor.Diagnosis, []runRef, error) {
	release, ok := s.acquire()
	if !ok {
		return nil, nil, ErrBusy
	}
	defer release()
	return s.diagnoseHeld(ctx, req)
}

// acquire takes a diagnosis slot without waiting; ok is false when all
// MaxConcurrent are taken. A handler that answers at once and diagnoses in
// the background takes its slot first, so that it can answer "busy".
func (s *Server) acquire() (release func(), ok bool) {
	select {
	case s.sem <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-s.sem }) }, true
	default:
		return nil, false
	}
}

// diagnoseHeld is Diagnose for a caller holding a slot. Every diagnosis
// counts in the metrics: its duration, its queries, and the verdict and
// findings of each target it found. One of the latest window is kept for
// the report pages, each target a run: runs names them in d's order (a
// zero runRef for a target not kept; nil when none is). A run whose
// selector narrows its target is kept apart from the whole target's
// (scope.go).
func (s *Server) diagnoseHeld(ctx context.Context, req Request) (d *advisor.Diagnosis, runs []runRef, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	p := s.cfg.Prom
	p.Options.Selector = joinSelectors(p.Options.Selector, req.Selector)
	if req.Window > 0 {
		p.Options.Window = req.Window
	}
	p.Options.End = req.End
	if p.Options.End.IsZero() {
		p.Options.End = s.now()
	}
	start := time.Now()
	d, err = s.diag(ctx, diagnosis.Sources{Prom: &p, GroupBy: p.Options.GroupBy})
	now := s.now()
	s.metrics.observe(d, time.Since(start), now, req.Latest)
	if err == nil && d != nil && req.Latest {
		var rerr error
		sc := runScope{trigger: req.Trigger, reason: req.Reason, selector: req.Selector, applied: p.Options.Selector, window: p.Options.Window, end: p.Options.End}
		if runs, rerr = s.history.record(d, sc, now); rerr != nil {
			s.log.Warn("report pages: a run was not kept", "trigger", req.Trigger, "err", rerr)
		}
	}
	return d, runs, err
}

// joinSelectors joins two lists of label matchers, either of which may be
// empty or end in a comma.
func joinSelectors(a, b string) string {
	a = strings.TrimRight(strings.TrimSpace(a), ", ")
	b = strings.TrimRight(strings.TrimSpace(b), ", ")
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "," + b
}

// background runs f after the handler that started it has answered;
// shutdown waits for it (bounded by Serve's 30 s). Call it from a handler
// or before Serve returns, never after.
func (s *Server) background(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// postDeadline bounds posting one group of messages, retries included.
const postDeadline = core.PostDeadline

// post posts messages to the configured Slack destination, counting each
// message in llmdoctor_slack_posts_total by result. Every part posts
// through it.
func (s *Server) post(ctx context.Context, msgs []report.SlackMessage) ([]slackkit.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, postDeadline)
	defer cancel()
	res, err := (&slackkit.Poster{Dest: s.cfg.Slack}).Post(ctx, msgs)
	s.metrics.posted(res, err)
	return res, err
}

// Run serves until ctx ends, then shuts down gracefully: the listener
// closes, in-flight requests and posts finish (bounded by 30s).
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened (tests listen on port 0).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		// A diagnosis answered on the request (the API) takes up to
		// RequestTimeout.
		WriteTimeout: s.cfg.RequestTimeout + 30*time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if s.watch != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.watch.Run(ctx)
		}()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing requests and posts in flight")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-sctx.Done():
		s.log.Warn("shutdown: gave up waiting for background work after 30s")
	}
	return err
}

// The server as its front ends see it (core.Host).
var _ core.Host = (*Server)(nil)

// Acquire takes a diagnosis slot without waiting (core.Host).
func (s *Server) Acquire() (release func(), ok bool) { return s.acquire() }

// DiagnoseHeld runs a diagnosis for a caller holding a slot (core.Host).
func (s *Server) DiagnoseHeld(ctx context.Context, req Request) (*advisor.Diagnosis, []core.RunRef, error) {
	return s.diagnoseHeld(ctx, req)
}

// SlackMessages renders d with links to the runs' pages (core.Host).
func (s *Server) SlackMessages(d *advisor.Diagnosis, runs []core.RunRef, o report.SlackOptions) []slackkit.Message {
	return s.slackMessages(d, runs, o)
}

// Posted counts a post in the server's metrics (core.Host).
func (s *Server) Posted(res []slackkit.Result, err error) { s.metrics.posted(res, err) }

// Background runs f; shutdown waits for it (core.Host).
func (s *Server) Background(f func()) { s.background(f) }

// Handle serves a route (core.Host).
func (s *Server) Handle(pattern string, h http.HandlerFunc) { s.mux.HandleFunc(pattern, h) }

// Now is the server's clock (core.Host).
func (s *Server) Now() time.Time { return s.now() }

// Log is the server's logger (core.Host).
func (s *Server) Log() *slog.Logger { return s.log }

// MaxConcurrent is how many diagnoses run at once (core.Host).
func (s *Server) MaxConcurrent() int { return cap(s.sem) }

// RequestTimeout bounds one diagnosis (core.Host).
func (s *Server) RequestTimeout() time.Duration { return s.cfg.RequestTimeout }

// DefaultWindow is the window of a request that names none (core.Host).
func (s *Server) DefaultWindow() time.Duration {
	if w := s.cfg.Prom.Options.Window; w > 0 {
		return w
	}
	return 15 * time.Minute
}

// Slack is the server's Slack destination (core.Host).
func (s *Server) Slack() slackkit.Destination { return s.cfg.Slack }

// Post posts to the server's Slack destination (core.Host).
func (s *Server) Post(ctx context.Context, msgs []slackkit.Message) ([]slackkit.Result, error) {
	return s.post(ctx, msgs)
}

// ExternalURL is the server's address as users reach it (core.Host).
func (s *Server) ExternalURL() string { return s.cfg.ExternalURL }
