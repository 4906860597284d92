// Package simrun diagnoses a simulated scenario through the real pipeline:
// the simulator (package sim) runs its warm-up, serves its engine's /metrics
// (vLLM's or SGLang's names) and, when it models a GPU, dcgm-exporter's, and
// the scrape collector reads a window of them for package diagnosis to
// diagnose, exactly as it reads a server. The demo, the accuracy harness
// and whatif's replays all go through Diagnose.
package simrun

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
)

// Scrapes is how many scrapes after the first cover the scenario's window:
// each advances the simulator's clock by a thirtieth of it.
const Scrapes = 30

// interval is the wall time between scrapes. Samples carry the
// simulator's virtual time, so it changes nothing read, only how long a
// run takes.
const interval = time.Millisecond

// Options say how to read and diagnose a scenario.
type Options struct {
	// Rules and Config diagnose the window; nil Rules takes the built-in
	// rules.
	Rules  *rules.Set
	Config *rules.Config
	// Loopback serves the simulator on a loopback port and scrapes it over
	// TCP, as a real server is scraped; otherwise the scrapes are answered
	// in process, which needs no socket and is what harnesses use. Both
	// read the same bytes and give the same diagnosis.
	Loopback bool
}

// Diagnose runs sc after its warm-up, scrapes Scrapes+1 times across its
// window, in order (the engine's scrape advances the clock, the GPU
// exporter's then reads the step that just ran, so every run reads the same
// numbers), and diagnoses what was read. A scenario with a fitted step cost
// (whatif's calibrations) models no GPU and serves no GPU metrics. An input
// without a target is diagnosed as it is (a verdict of "unknown"), as the
// harnesses want. The diagnosis's first note names the scenario.
func Diagnose(ctx context.Context, sc *sim.Scenario, o Options) (*advisor.Diagnosis, error) {
	set, cfg := o.Rules, o.Config
	if set == nil {
		var err error
		if set, err = rules.Load(); err != nil {
			return nil, err
		}
	}
	if cfg == nil {
		cfg = &rules.Config{}
	}
	e, err := sim.New(sc, false)
	if err != nil {
		return nil, err
	}
	e.AdvanceTo(sc.Warmup.Seconds())
	h := sim.NewServer(e, sc.Duration/Scrapes, 0).Handler()

	base := "http://simulator"
	client := &http.Client{Transport: handlerTransport{h}}
	if o.Loopback {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cannot listen on loopback: %w", err)
		}
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		done := make(chan struct{})
		go func() {
			defer close(done)
			// ErrServerClosed once closed; any other failure is the
			// scrapes' error.
			_ = hs.Serve(ln)
		}()
		defer func() {
			_ = hs.Close() // the scrapes are done; only the listener's close can fail
			<-done
		}()
		base = "http://" + ln.Addr().String()
		client = &http.Client{Timeout: 10 * time.Second}
	}
	var engines []string
	eps := e.Endpoints()
	for _, ep := range eps {
		engines = append(engines, base+ep.Path)
	}
	src := &diagnosis.ScrapeSource{Engines: engines,
		Interval: interval, Scrapes: Scrapes, Sequential: true, Client: client}
	// Several servers' GPUs on one simulated host no join can tell apart:
	// a split deployment or a router serves the engines' metrics only.
	if ModelsGPU(sc) && len(eps) == 1 {
		src.GPUExporters = []string{base + "/dcgm/metrics"}
	}
	in, err := diagnosis.Read(ctx, diagnosis.Sources{Scrape: src}, nil)
	if err != nil {
		return nil, err
	}
	d := in.Diagnose(set, cfg)
	note := "simulated scenario " + sc.Name
	if desc := OneLine(sc.Description); desc != "" {
		note += ": " + desc
	}
	d.Notes = append([]string{note}, d.Notes...)
	return d, nil
}

// ModelsGPU reports whether the scenario prices its steps on a modelled GPU,
// whose DCGM metrics a deployment would have; a fitted step cost has no GPU
// to show.
func ModelsGPU(sc *sim.Scenario) bool { return sc.Engine.Cost == nil }

// handlerTransport answers requests from a handler in process.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	t.h.ServeHTTP(w, r)
	return w.Result(), nil
}

// OneLine joins a scenario's multi-line description into one line.
func OneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' }), " ")
}
