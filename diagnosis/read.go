package diagnosis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/logs"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/collectors/requests"
	"github.com/llmdoctor/llmdoctor/collectors/scrape"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/internal/redact"
)

// stdinName is how input read from "-" is named in reports and errors.
const stdinName = "stdin"

// Input is what reading the sources gave, ready to diagnose.
type Input struct {
	// Window holds the metrics read; nil when there was no metrics source.
	Window *window.Window
	// Requests are the request-level files read.
	Requests []RequestFile
	// Sources are the lines a report shows about what was read.
	Sources []advisor.Source
	// GroupBy are the labels that make one target; empty: model_name.
	GroupBy []string
	// Engine, when set, is the only engine whose metrics are read.
	Engine string
}

// RequestFile is one request-level file, read.
type RequestFile struct {
	// From names the file ("stdin" for "-").
	From string
	acc  *requests.Accumulator
}

// Read validates the sources and reads them: request-level files first (a
// bad file is found before a minute of scraping), then the one metrics
// source. Cancelling ctx stops a Prometheus query with an error and a live
// scrape early, keeping what it collected. Every credential the sources
// carry is masked in what Read returns: errors, source lines, notes and the
// provenance a report cites. progress may be nil.
func Read(ctx context.Context, src Sources, progress func(Progress)) (*Input, error) {
	if progress == nil {
		progress = func(Progress) {}
	}
	sec := src.secrets()
	notify := func(p Progress) { p.Message = sec.String(p.Message); progress(p) }
	if err := src.Validate(); err != nil {
		return nil, err
	}
	in := &Input{GroupBy: src.GroupBy, Engine: src.Engine}
	reqs, reqSources, err := src.readRequestFiles(ctx, notify)
	if err != nil {
		return nil, maskError(sec, err)
	}
	var sources []advisor.Source
	switch {
	case src.Prom != nil:
		in.Window, sources, in.GroupBy, err = src.readProm(ctx, notify)
	case src.Log != nil:
		in.Window, sources, err = src.readLog(notify)
	case len(src.Snapshots) > 0:
		in.Window, sources, err = src.readSnapshots(notify)
	case src.Scrape != nil && len(src.Scrape.Engines) > 0:
		in.Window, sources, err = src.scrape(ctx, notify)
	}
	if err != nil {
		return nil, maskError(sec, err)
	}
	in.Sources, in.Requests = append(sources, reqSources...), reqs
	for i := range in.Sources {
		s := &in.Sources[i]
		s.URL, s.Path, s.Error = sec.String(s.URL), sec.String(s.Path), sec.String(s.Error)
		for j, n := range s.Notes {
			s.Notes[j] = sec.String(n)
		}
		for j := range s.Scopes {
			s.Scopes[j].Note = sec.String(s.Scopes[j].Note)
		}
	}
	if w := in.Window; w != nil {
		w.From = sec.String(w.From)
		for i, n := range w.Notes {
			w.Notes[i] = sec.String(n)
		}
	}
	return in, nil
}

// secrets are every credential the sources carry: userinfo and query
// values of the Prometheus, engine and GPU exporter URLs, the Prometheus
// token, password and headers, and the scrape headers' values.
func (s Sources) secrets() *redact.Secrets {
	sec := &redact.Secrets{}
	if s.Prom != nil {
		s.Prom.Connection.AddSecrets(sec)
	}
	if sc := s.Scrape; sc != nil {
		for _, u := range append(append([]string{}, sc.Engines...), sc.GPUExporters...) {
			sec.AddURL(u)
		}
		for _, vs := range sc.Header {
			for _, v := range vs {
				sec.AddHeader(v)
			}
		}
	}
	return sec
}

// maskError masks credentials in an error's text. The collector's error
// stays reachable with errors.As (a *prom.Error masks its own fields).
func maskError(sec *redact.Secrets, err error) error {
	var re *ReadError
	if errors.As(err, &re) {
		masked := *re
		masked.Name = sec.String(re.Name)
		if text := sec.String(re.Err.Error()); text != re.Err.Error() {
			masked.Err = &maskedError{text, re.Err}
		}
		return &masked
	}
	if text := sec.String(err.Error()); text != err.Error() {
		return &maskedError{text, err}
	}
	return err
}

// maskedError is an error whose text showed a credential: it says the
// masked text and unwraps to the original.
type maskedError struct {
	text string
	err  error
}

func (e *maskedError) Error() string { return e.text }
func (e *maskedError) Unwrap() error { return e.err }

func (s Sources) stdin() io.Reader {
	if s.Stdin != nil {
		return s.Stdin
	}
	return os.Stdin
}

// open opens a file, or Stdin for "-", and returns the name to notify it by.
func (s Sources) open(path string) (io.ReadCloser, string, error) {
	if path == "-" {
		return io.NopCloser(s.stdin()), stdinName, nil
	}
	f, err := os.Open(path)
	return f, path, err
}

func (s Sources) readRequestFiles(ctx context.Context, notify func(Progress)) ([]RequestFile, []advisor.Source, error) {
	var out []RequestFile
	var srcs []advisor.Source
	read := func(path, kind string, fn func(io.Reader, string) (*requests.Accumulator, []string, error)) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, name, err := s.open(path)
		if err != nil {
			return &ReadError{Kind: kind, Name: path, Opening: true, Err: err}
		}
		defer func() { _ = f.Close() }() // read only: all it held was read
		notify(Progress{Stage: StageRead, Message: "reading " + kind + " " + name})
		acc, notes, err := fn(f, name)
		if err != nil {
			return &ReadError{Kind: kind, Name: name, Err: err}
		}
		out = append(out, RequestFile{From: name, acc: acc})
		src := advisor.Source{Kind: kind, Path: name, OK: true}
		src.Notes, src.Rows, src.Skipped = notes, acc.Rows(), acc.Skipped()
		srcs = append(srcs, src)
		return nil
	}
	for _, p := range s.Bench {
		if err := read(p, KindBench, requests.ReadBench); err != nil {
			return nil, nil, err
		}
	}
	for _, p := range s.Requests {
		if err := read(p, KindRequests, requests.ReadRequests); err != nil {
			return nil, nil, err
		}
	}
	return out, srcs, nil
}

// readProm queries Prometheus, and returns the labels its targets are
// grouped by: the ones asked for, and the replica label where prefill and
// decode instances of one model had to be read apart.
func (s Sources) readProm(ctx context.Context, notify func(Progress)) (*window.Window, []advisor.Source, []string, error) {
	p := s.Prom
	opt := p.Options
	opt.GroupBy = s.GroupBy
	c, err := prom.New(p.Connection, opt)
	if err != nil {
		return nil, nil, nil, &ReadError{Kind: KindPrometheus, Name: p.Connection.Redacted(), Err: err}
	}
	notify(Progress{Stage: StageQuery, Message: "querying " + p.Connection.Redacted()})
	w, err := c.Collect(ctx)
	if err != nil {
		return nil, nil, nil, &ReadError{Kind: KindPrometheus, Name: p.Connection.Redacted(), Err: err}
	}
	queries := c.Queries()
	group := s.GroupBy
	if len(group) == 0 {
		group = []string{"model_name"}
	}
	if engine.SummedRoles(w, group) {
		// Prefill and decode instances summed into one target: their
		// latencies do not add up. Read again, each instance apart, for
		// the builder to tell their roles from their traffic.
		opt.GroupBy = append(slices.Clone(group), engine.ReplicaLabel("vllm"))
		if c, err = prom.New(p.Connection, opt); err == nil {
			w, err = c.Collect(ctx)
		}
		if err != nil {
			return nil, nil, nil, &ReadError{Kind: KindPrometheus, Name: p.Connection.Redacted(), Err: err}
		}
		w.Notes = append(w.Notes, fmt.Sprintf("prefill and decode instances of one model were summed (KV was pulled, and TTFT counted more requests than pulls): read again per instance (%d queries more)", c.Queries()))
		queries += c.Queries()
		group = opt.GroupBy
	} else {
		group = s.GroupBy
	}
	notify(Progress{Stage: StageQuery, Message: fmt.Sprintf("%d queries answered", queries), Done: true})
	src := advisor.Source{Kind: KindPrometheus, URL: p.Connection.Redacted(), OK: true, Queries: queries}
	for _, sc := range c.Scopes() {
		src.Scopes = append(src.Scopes, advisor.Scope{Families: sc.Families, Matched: sc.Matched, JoinedTo: sc.JoinedTo,
			Through: sc.Through, Read: sc.Read, Note: sc.Note})
	}
	return w, []advisor.Source{src}, group, nil
}

func (s Sources) readLog(notify func(Progress)) (*window.Window, []advisor.Source, error) {
	f, name, err := s.open(s.Log.Path)
	if err != nil {
		return nil, nil, &ReadError{Kind: KindLog, Name: s.Log.Path, Opening: true, Err: err}
	}
	defer func() { _ = f.Close() }() // read only: all it held was read
	notify(Progress{Stage: StageRead, Message: "reading log " + name})
	// A vLLM log line carries no year: the current one unless told.
	year := s.Log.Year
	if year == 0 {
		year = time.Now().Year()
	}
	res, err := logs.Read(f, s.Log.Model, year, name)
	if err != nil {
		return nil, nil, &ReadError{Kind: KindLog, Name: name, Err: err}
	}
	return res.Window, []advisor.Source{{Kind: KindLog, Path: name, OK: true}}, nil
}

func (s Sources) readSnapshots(notify func(Progress)) (*window.Window, []advisor.Source, error) {
	notify(Progress{Stage: StageRead, Message: fmt.Sprintf("reading %d snapshot(s)", len(s.Snapshots))})
	w, err := scrape.Files(s.Snapshots, s.SnapshotInterval, s.stdin())
	if err != nil {
		return nil, nil, &ReadError{Kind: KindSnapshot, Err: err}
	}
	var sources []advisor.Source
	for _, p := range s.Snapshots {
		sources = append(sources, advisor.Source{Kind: KindSnapshot, Path: p, OK: true})
	}
	return w, sources, nil
}

// scrape reads the engines and GPU exporters live. A target that fails its
// first scrape is named in the sources and left out; the run fails only
// when no engine answers.
func (s Sources) scrape(ctx context.Context, notify func(Progress)) (*window.Window, []advisor.Source, error) {
	sc := s.Scrape
	var urls []string
	for _, u := range append(append([]string{}, sc.Engines...), sc.GPUExporters...) {
		urls = append(urls, scrape.MetricsURL(u))
	}
	client := sc.Client
	if client == nil {
		client = &http.Client{Timeout: sc.Timeout}
		if len(sc.Header) > 0 {
			client.Transport = headerTransport{http.DefaultTransport, sc.Header}
		}
	}
	scraper := &scrape.Scraper{URLs: urls, Interval: sc.Interval, Duration: sc.Duration, Scrapes: sc.Scrapes,
		Sequential: sc.Sequential, Client: client, Progress: progressWriter{StageScrape, notify}}
	w, err := scraper.Run(ctx)
	if err != nil {
		return nil, nil, &ReadError{Kind: KindScrape, Err: err}
	}
	var sources []advisor.Source
	alive := 0
	for i, u := range urls {
		kind := KindScrape
		if i >= len(sc.Engines) {
			kind = KindGPU
		}
		src := advisor.Source{Kind: kind, URL: u, OK: scraper.Dead[i] == nil}
		if scraper.Dead[i] != nil {
			// One dead replica or exporter is named; the rest are diagnosed.
			src.Error = scraper.Dead[i].Error()
		} else if kind == KindScrape {
			alive++
		}
		sources = append(sources, src)
	}
	if alive == 0 {
		return nil, nil, &ReadError{Kind: KindScrape, Name: urls[0], Err: scraper.Dead[0]}
	}
	return w, sources, nil
}

// headerTransport adds the scrape headers to every request.
type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// progressWriter turns the scraper's progress lines into Progress: a line
// per scrape, and an empty one when scraping ends.
type progressWriter struct {
	stage  string
	notify func(Progress)
}

func (p progressWriter) Write(b []byte) (int, error) {
	msg := strings.TrimSpace(string(b))
	p.notify(Progress{Stage: p.stage, Message: msg, Done: msg == ""})
	return len(b), nil
}

// Measured is a request-level source a caller measured itself (a probe's
// requests), read as a file is.
func Measured(from string, acc *requests.Accumulator) RequestFile {
	return RequestFile{From: from, acc: acc}
}
