// Package diagnosis is llmdoctor's pipeline as a library: a typed
// description of what to read goes in, a diagnosis or a pre-launch checklist
// comes out. Every front end (the command line, a server, a chat handler)
// calls Run or Checklist, so that all of them read sources, build evidence
// and evaluate rules the same way; none of them needs package main.
//
// The stages are Read (sources → Input: a metrics window, request-level
// files and the source lines a report shows) and Input.Diagnose or
// Input.Checklist (evidence → rules → advice). Callers that already hold a
// window, such as the simulator harnesses, build an Input themselves.
package diagnosis

import (
	"io"
	"net/http"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/prom"
)

// Sources says what one run reads. At most one metrics source (Prom,
// Scrape, Snapshots or Log) may be given, beside any number of
// request-level files (Bench, Requests). Nothing here names a flag: front
// ends word the errors of Validate in their own terms.
type Sources struct {
	// Prom queries a Prometheus-compatible API for a window.
	Prom *PromSource
	// Scrape reads engine servers' /metrics live, and GPU exporters'.
	Scrape *ScrapeSource
	// Snapshots are saved expositions, oldest first.
	Snapshots []string
	// SnapshotInterval is the time between consecutive snapshots; zero
	// places them by their sample timestamps or the files' modification
	// times.
	SnapshotInterval time.Duration
	// Log is an engine server log whose periodic stats lines are read.
	Log *LogSource
	// Bench are `vllm bench serve` result files.
	Bench []string
	// Requests are per-request JSONL or CSV files (docs/requests.md).
	Requests []string
	// GroupBy are the labels whose values make one target; empty: model_name.
	GroupBy []string
	// Engine, when set, reads only that registered engine's metrics (vllm,
	// sglang); empty reads every engine the sources hold.
	Engine string
	// Stdin is what the path "-" reads; nil: the process's standard input.
	Stdin io.Reader
}

// PromSource is a Prometheus-compatible API and the window to query.
type PromSource struct {
	Connection prom.Connection
	// Options say which window to read. Window must be positive and at
	// least prom.MinStep, Step zero (the default) or positive and no longer
	// than Window, Parallel at least 1. GroupBy is taken from Sources.
	Options prom.Options
}

// ScrapeSource is a live scrape: every Interval until Duration has passed
// (or Scrapes scrapes after the first).
type ScrapeSource struct {
	// Engines are the serving engines to scrape: host:port or the URL of
	// /metrics. Several become instances of their models.
	Engines []string
	// GPUExporters are dcgm-exporter endpoints scraped alongside.
	GPUExporters []string
	// Header is added to every scrape (Authorization, …).
	Header http.Header
	// Interval between scrapes; must be positive.
	Interval time.Duration
	// Duration of the scrape; zero takes one scrape.
	Duration time.Duration
	// Scrapes, when positive, stops after this many scrapes following the
	// first instead of after Duration: a simulator that steps its clock per
	// scrape gets a fixed window.
	Scrapes int
	// Timeout of one scrape; must be positive unless Client is set.
	Timeout time.Duration
	// Sequential scrapes the targets one after another, in order, at each
	// tick: a step-mode simulator's GPU metrics then describe the step the
	// engine scrape just ran.
	Sequential bool
	// Client, when set, is used as is (Timeout and Header are not applied).
	Client *http.Client
}

// LogSource is a server log file ("-": Sources.Stdin).
type LogSource struct {
	Path string
	// Model names the target; empty: what the log's start-up lines say,
	// else the engine's name and "(from log)".
	Model string
	// Year places the log's month-day timestamps (vLLM's carry no year);
	// zero: the current year.
	Year int
}

// Progress reports what a run is doing, for a front end to show.
type Progress struct {
	// Stage is one of StageRead, StageScrape, StageQuery, StageRules.
	Stage string
	// Message says what happens now, in a line without credentials.
	Message string
	// Done marks the end of the stage.
	Done bool
}

// Stages a run reports progress in.
const (
	// StageRead: reading files (request-level files, snapshots, a log).
	StageRead = "read"
	// StageScrape: a live scrape, one report per scrape.
	StageScrape = "scrape"
	// StageQuery: querying a Prometheus API.
	StageQuery = "query"
	// StageRules: building evidence and evaluating rules.
	StageRules = "rules"
)
