package diagnosis

import (
	"fmt"
	"strings"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
)

// Problem names what is wrong with a Sources, so that a front end can say
// what to change in its own terms (a flag, a form field, a config key).
type Problem int

// Problems Validate finds.
const (
	// NothingToRead: no metrics source and no request-level file.
	NothingToRead Problem = iota + 1
	// SeveralMetricsSources: more than one of Prom, Scrape, Snapshots, Log.
	SeveralMetricsSources
	// HeaderWithoutEngine: a scrape header with no engine to scrape.
	HeaderWithoutEngine
	// GPUWithoutEngine: a GPU exporter is scraped alongside an engine only
	// (its saved output can be one more snapshot).
	GPUWithoutEngine
	// BadSchedule: Scrape.Interval not positive, or Duration or Scrapes
	// negative.
	BadSchedule
	// BadScrapeTimeout: Scrape.Timeout not positive (and no Client).
	BadScrapeTimeout
	// DurationUnderInterval: Scrape.Duration is shorter than one Interval,
	// so the window would be longer than asked.
	DurationUnderInterval
	// BadSnapshotInterval: SnapshotInterval negative.
	BadSnapshotInterval
	// BadPromWindow: Prom.Options.Window not positive.
	BadPromWindow
	// BadPromStep: Prom.Options.Step negative.
	BadPromStep
	// BadPromParallel: Prom.Options.Parallel under 1.
	BadPromParallel
	// BadPromTimeout: Prom.Connection.Timeout not positive.
	BadPromTimeout
	// CertWithoutKey: a client certificate without its key.
	CertWithoutKey
	// KeyWithoutCert: a client key without its certificate.
	KeyWithoutCert
	// PromWindowUnderScrape: the window is shorter than one scrape interval
	// of Prometheus (prom.MinStep): it holds one sample at most.
	PromWindowUnderScrape
	// PromWindowUnderStep: the window is shorter than one step.
	PromWindowUnderStep
	// UnknownEngine: Sources.Engine names no registered engine.
	UnknownEngine
)

var problemText = map[Problem]string{
	NothingToRead:         "nothing to read: give a metrics source (Prometheus, a live scrape, snapshots or a log) or request-level files",
	SeveralMetricsSources: "give one kind of metrics source: Prometheus, a live scrape, snapshots or a log",
	HeaderWithoutEngine:   "scrape headers apply to live scrapes of an engine, and none is given",
	GPUWithoutEngine:      "a GPU exporter is scraped alongside an engine; with snapshots, give the exporter's saved output as another snapshot",
	BadSchedule:           "the scrape interval must be positive, its duration and count not negative",
	BadScrapeTimeout:      "the scrape timeout must be positive",
	DurationUnderInterval: "the scrape duration is shorter than one interval",
	BadSnapshotInterval:   "the snapshot interval must be positive",
	BadPromWindow:         "the Prometheus window must be positive",
	BadPromStep:           "the Prometheus step must be positive, or zero for the default",
	BadPromParallel:       "at least 1 Prometheus query must be in flight",
	BadPromTimeout:        "the Prometheus query timeout must be positive",
	CertWithoutKey:        "a client certificate needs its private key",
	KeyWithoutCert:        "a client key needs its certificate",
	PromWindowUnderScrape: "the Prometheus window is shorter than one scrape interval",
	PromWindowUnderStep:   "the Prometheus window is shorter than one step",
	UnknownEngine:         "the engine named is not registered",
}

// SourceError says a Sources cannot be read as given; nothing was read.
type SourceError struct{ Problem Problem }

func (e *SourceError) Error() string {
	if s, ok := problemText[e.Problem]; ok {
		return s
	}
	return fmt.Sprintf("sources problem %d", int(e.Problem))
}

// Source kinds, as advisor.Source.Kind names them.
const (
	KindPrometheus = "prometheus"
	KindScrape     = "scrape"
	KindGPU        = "dcgm"
	KindSnapshot   = "snapshot"
	KindLog        = "log"
	KindBench      = "bench"
	KindRequests   = "requests"
)

// ReadError is a source that was given but could not be read. Err is the
// collector's error (a *prom.Error, *scrape.SpacingError or
// *requests.FormatError among them), with credentials masked.
type ReadError struct {
	// Kind is the source's kind (KindBench, …).
	Kind string
	// Name is the file, or the server without credentials, when one is known.
	Name string
	// Opening: the file could not be opened at all.
	Opening bool
	Err     error
}

func (e *ReadError) Error() string {
	if e.Opening {
		return e.Kind + ": " + e.Err.Error()
	}
	return e.Err.Error()
}

func (e *ReadError) Unwrap() error { return e.Err }

// NoTargetReason says why reading gave no target.
type NoTargetReason int

// Reasons for no target.
const (
	// NoGroupLabel: engine metrics were read, but no series carries the
	// GroupBy labels.
	NoGroupLabel NoTargetReason = iota + 1
	// AllWithheld: every engine family read was withheld as untrusted.
	AllWithheld
	// GPUOnly: only GPU exporter metrics were read.
	GPUOnly
	// NoEngineMetrics: nothing an engine exposes was read.
	NoEngineMetrics
	// OtherEngines: an engine was asked for (Sources.Engine), and the
	// sources hold only other engines' metrics (Held).
	OtherEngines
)

// NoTargetError says why a run found nothing to diagnose. An empty report
// would read as a clean bill of health; this says what the sources held.
type NoTargetError struct {
	Why NoTargetReason
	// GroupBy are the labels asked for, Labels those the engine series
	// carry (NoGroupLabel).
	GroupBy, Labels []string
	// Withheld are the families withheld (AllWithheld).
	Withheld []string
	// Engine is the engine asked for ("": every engine).
	Engine string
	// Held names the engines whose metrics the sources hold instead
	// (OtherEngines).
	Held []string
}

// Asked is the title of the engine asked for, or of every registered
// engine ("SGLang or vLLM") when none was.
func (e *NoTargetError) Asked() string {
	if eng, ok := engine.Lookup(e.Engine); ok {
		return eng.Title
	}
	return engine.Titles()
}

// HeldTitles names the engines whose metrics the sources hold instead
// (OtherEngines): "SGLang".
func (e *NoTargetError) HeldTitles() string {
	var t []string
	for _, n := range e.Held {
		if eng, ok := engine.Lookup(n); ok {
			n = eng.Title
		}
		t = append(t, n)
	}
	return strings.Join(t, " and ")
}

func (e *NoTargetError) Error() string {
	switch e.Why {
	case NoGroupLabel:
		return fmt.Sprintf("%s metrics were read, but no series carries %s (labels present: %s): group by one of them", e.Asked(),
			strings.Join(e.GroupBy, ", "), strings.Join(e.Labels, ", "))
	case AllWithheld:
		return fmt.Sprintf("every %s family read was withheld as untrusted (%s): see the notes, or fix the source", e.Asked(),
			strings.Join(e.Withheld, ", "))
	case GPUOnly:
		return "GPU exporter metrics only: add the serving engine's metrics to diagnose"
	case OtherEngines:
		return fmt.Sprintf("the sources hold %s metrics, not %s's: read every engine, or ask for %s", e.HeldTitles(), e.Asked(), e.HeldTitles())
	}
	return "no " + e.Asked() + " metrics in the sources: is this a serving engine's /metrics (SGLang needs --enable-metrics), or a Prometheus that scrapes one?"
}
