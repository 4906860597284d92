package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/dcgm"
	"github.com/llmdoctor/llmdoctor/collectors/logs"
	"github.com/llmdoctor/llmdoctor/collectors/requests"
	"github.com/llmdoctor/llmdoctor/collectors/scrape"
	"github.com/llmdoctor/llmdoctor/collectors/vllm"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
)

type diagnoseOpts struct {
	prom             promFlags
	vllmURLs         []string
	dcgmURLs         []string
	scrapeHeaders    []string
	interval         time.Duration
	duration         time.Duration
	scrapes          int
	snapshots        []string
	logFile          string
	logModel         string
	benchFiles       []string
	requestFiles     []string
	snapshotInterval time.Duration
	format           string
	outputs          []string
	configPath       string
	rulesDirs        []string
	failOn           string
	groupBy          []string
	color            string
	timeout          time.Duration
}

func newDiagnose() *cobra.Command {
	o := &diagnoseOpts{}
	c := &cobra.Command{
		Use:   "diagnose",
		Short: "Diagnose vLLM from Prometheus, live scrapes, snapshots, logs or benchmark results",
		Example: "  llmdoctor diagnose --prom http://prometheus:9090 --window 15m --selector 'namespace=\"prod\"'\n" +
			"  llmdoctor diagnose --vllm http://127.0.0.1:8000 --dcgm 127.0.0.1:9400 --duration 2m\n" +
			"  llmdoctor diagnose --snapshot start.prom --snapshot end.prom --snapshot-interval 15m --format json\n" +
			"  llmdoctor diagnose --log vllm.log --bench run.json",
		Args:    cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error { return o.stdinUses() },
		RunE:    func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := c.Flags()
	o.addSourceFlags(f)
	addOutputFlags(f, &o.format, &o.outputs, &o.color, "text or json")
	addRuleFlags(f, &o.configPath, &o.rulesDirs)
	f.StringVar(&o.failOn, "fail-on", "", "exit 1 when a finding of this severity or above fires (info, warning, critical)")
	return c
}

// addSourceFlags declares the sources diagnose and checklist share.
func (o *diagnoseOpts) addSourceFlags(f *pflag.FlagSet) {
	o.prom.add(f)
	f.StringArrayVar(&o.vllmURLs, "vllm", nil, "vLLM server to scrape (host:port or URL of /metrics); repeatable")
	f.StringArrayVar(&o.dcgmURLs, "dcgm", nil, "dcgm-exporter to scrape alongside --vllm (host:port or URL); repeatable")
	f.StringArrayVar(&o.scrapeHeaders, "vllm-header", nil, `extra request header "Name: value" for --vllm and --dcgm scrapes (e.g. "Authorization: Bearer …"); repeatable`)
	f.DurationVar(&o.interval, "interval", 5*time.Second, "time between scrapes with --vllm")
	f.DurationVar(&o.duration, "duration", 60*time.Second, "how long to scrape with --vllm")
	// A step-mode simulator's clock moves per scrape, not per second: a fixed
	// count of scrapes gives it a fixed window.
	f.IntVar(&o.scrapes, "scrapes", 0, "with --vllm: stop after this many scrapes following the first instead of after --duration")
	f.MarkHidden("scrapes")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "timeout of one scrape")
	f.StringArrayVar(&o.snapshots, "snapshot", nil, "saved /metrics exposition file (- for stdin), oldest first; repeatable")
	f.DurationVar(&o.snapshotInterval, "snapshot-interval", 0, "time between consecutive --snapshot files (default: from sample timestamps or file times)")
	f.StringVar(&o.logFile, "log", "", "vLLM server log to read stats lines from (- for stdin)")
	f.StringVar(&o.logModel, "log-model", "vllm (from log)", "model name for a --log target (logs do not say)")
	f.StringArrayVar(&o.benchFiles, "bench", nil, "vllm bench serve result JSON (--save-result, ideally --save-detailed; - for stdin); repeatable")
	f.StringArrayVar(&o.requestFiles, "requests", nil, "per-request JSONL or CSV (docs/requests.md; - for stdin); repeatable")
	f.StringSliceVar(&o.groupBy, "group-by", []string{"model_name"}, "labels that make one target")
}

func (o *diagnoseOpts) run(stdout io.Writer) error {
	var failOn rules.Severity
	if o.failOn != "" {
		s, err := rules.ParseSeverity(o.failOn)
		if err != nil {
			return usageErr("--fail-on: %v", err)
		}
		failOn = s
	}
	outs, err := parseOutputs(o.format, o.outputs, "text", "json")
	if err != nil {
		return err
	}
	set, cfg, err := loadRulesFlag(o.configPath, o.rulesDirs)
	if err != nil {
		return err
	}
	w, sources, reqs, err := o.gather()
	if err != nil {
		return err
	}
	d := Diagnose(w, sources, set, cfg, vllm.Options{GroupBy: o.groupBy}, reqs...)
	if len(d.Targets) == 0 {
		return nothingDiagnosed(w, o.groupBy)
	}
	if err := writeOutputs(stdout, outs, o.color, func(f string, w io.Writer, opt report.TextOptions) error {
		switch f {
		case "json":
			return report.JSON(w, d)
		default:
			return report.Text(w, d, opt)
		}
	}); err != nil {
		return err
	}
	if failOn > 0 && worst(d) >= failOn {
		return &exitError{1, fmt.Sprintf("a finding at or above %s fired (--fail-on)", failOn)}
	}
	return nil
}

// gatherSources reads every source the flags name: one metrics source (or
// none) and any request-level files. Callers use gather, which masks
// credentials in what this returns.
func (o *diagnoseOpts) gatherSources() (*window.Window, []advisor.Source, []requestSource, error) {
	given := 0
	for _, n := range []int{len(o.vllmURLs), len(o.snapshots), len(o.prom.url), len(o.logFile)} {
		if n > 0 {
			given++
		}
	}
	reqs, reqSources, err := readRequestSources(o.benchFiles, o.requestFiles)
	if err != nil {
		return nil, nil, nil, err
	}
	if given == 0 && len(reqs) == 0 {
		return nil, nil, nil, usageErr("nothing to read: give --prom URL, --vllm URL, --snapshot FILE, --log FILE, --bench FILE or --requests FILE (try --help)")
	}
	if given > 1 {
		return nil, nil, nil, usageErr("give one kind of metrics source: --prom, --vllm, --snapshot or --log")
	}
	if len(o.dcgmURLs) > 0 && len(o.vllmURLs) == 0 {
		return nil, nil, nil, usageErr("--dcgm is scraped alongside --vllm; with snapshots, pass the exporter's saved output as another --snapshot")
	}
	if o.interval <= 0 || o.duration < 0 || o.scrapes < 0 {
		return nil, nil, nil, usageErr("--interval must be positive, --duration and --scrapes not negative")
	}
	if err := o.checkScrape(); err != nil {
		return nil, nil, nil, err
	}
	var w *window.Window
	var sources []advisor.Source
	switch {
	case given == 0:
	case o.prom.url != "":
		w, sources, err = o.prom.collect(o.groupBy)
	case o.logFile != "":
		w, sources, err = readLog(o.logFile, o.logModel)
	case len(o.snapshots) > 0:
		w, err = scrape.Files(o.snapshots, o.snapshotInterval)
		var se *scrape.SpacingError
		switch {
		case errors.As(err, &se) && se.Readings > 0:
			err = &exitError{2, err.Error() + ": leave out --snapshot-interval"}
		case errors.As(err, &se):
			err = &exitError{2, err.Error() + ": pass --snapshot-interval (e.g. 15m)"}
		case err != nil:
			err = &exitError{2, err.Error()}
		}
		for _, p := range o.snapshots {
			sources = append(sources, advisor.Source{Kind: "snapshot", Path: p, OK: true})
		}
	default:
		w, sources, err = o.scrapeLive()
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return w, append(sources, reqSources...), reqs, nil
}

func (o *diagnoseOpts) scrapeLive() (*window.Window, []advisor.Source, error) {
	var urls []string
	for _, u := range append(append([]string{}, o.vllmURLs...), o.dcgmURLs...) {
		urls = append(urls, scrape.MetricsURL(u))
	}
	client, err := o.scrapeClient()
	if err != nil {
		return nil, nil, err
	}
	s := &scrape.Scraper{URLs: urls, Interval: o.interval, Duration: o.duration, Scrapes: o.scrapes,
		Client: client}
	if isatty.IsTerminal(os.Stderr.Fd()) {
		s.Progress = redactWriter{os.Stderr, o.secrets()}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	w, err := s.Run(ctx)
	if err != nil {
		return nil, nil, &exitError{2, err.Error()}
	}
	var sources []advisor.Source
	alive := 0
	for i, u := range urls {
		kind := "scrape"
		if i >= len(o.vllmURLs) {
			kind = "dcgm"
		}
		src := advisor.Source{Kind: kind, URL: u, OK: s.Dead[i] == nil}
		if s.Dead[i] != nil {
			// One dead replica or exporter is named; the rest are diagnosed.
			src.Error = s.Dead[i].Error()
		} else if kind == "scrape" {
			alive++
		}
		sources = append(sources, src)
	}
	if alive == 0 {
		return nil, nil, &exitError{2, s.Dead[0].Error()}
	}
	return w, sources, nil
}

// Diagnose runs the path from a window (nil: none) and request-level sources
// to a diagnosis.
func Diagnose(w *window.Window, sources []advisor.Source, set *rules.Set, cfg *rules.Config, opt vllm.Options, reqs ...requestSource) *advisor.Diagnosis {
	evs, win, notes := buildEvidence(w, cfg, opt, reqs)
	d := &advisor.Diagnosis{Schema: advisor.Schema, Sources: sources, Targets: []advisor.Target{}, Notes: notes, Window: win}
	for _, s := range cfg.Expired() {
		d.Notes = append(d.Notes, fmt.Sprintf("suppression of %s expired on %s and no longer applies", s.Rule, s.Until))
	}
	for _, e := range evs {
		d.Targets = append(d.Targets, advisor.Advise(e, set.Evaluate(e, cfg), cfg))
	}
	return d
}

func worst(d *advisor.Diagnosis) rules.Severity {
	var w rules.Severity
	for _, t := range d.Targets {
		for _, f := range t.Findings {
			if s, err := rules.ParseSeverity(f.Severity); err == nil && s > w {
				w = s
			}
		}
	}
	return w
}

type output struct{ format, path string }

func parseOutputs(format string, extra []string, formats ...string) ([]output, error) {
	valid := func(f string) bool {
		for _, x := range formats {
			if f == x {
				return true
			}
		}
		return false
	}
	if !valid(format) {
		return nil, usageErr("--format %q: want %s", format, strings.Join(formats, ", "))
	}
	outs := []output{{format: format}}
	for _, x := range extra {
		f, p, ok := strings.Cut(x, "=")
		if !ok || !valid(f) || p == "" {
			return nil, usageErr("--output %q: want FORMAT=PATH with FORMAT one of %s", x, strings.Join(formats, ", "))
		}
		outs = append(outs, output{f, p})
	}
	return outs, nil
}

func writeOutputs(stdout io.Writer, outs []output, color string, render func(string, io.Writer, report.TextOptions) error) error {
	for _, o := range outs {
		if o.path == "" {
			tty := false
			if f, ok := stdout.(*os.File); ok {
				tty = isatty.IsTerminal(f.Fd())
			}
			if err := render(o.format, stdout, report.TextOptions{Color: color, IsTerminal: tty}); err != nil {
				return err
			}
			continue
		}
		f, err := os.Create(o.path)
		if err != nil {
			return &exitError{2, fmt.Sprintf("--output: %v", err)}
		}
		err = render(o.format, f, report.TextOptions{Color: "never"})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return &exitError{2, fmt.Sprintf("--output %s: %v", o.path, err)}
		}
	}
	return nil
}

func readLog(path, model string) (*window.Window, []advisor.Source, error) {
	var r io.Reader = os.Stdin
	name := "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, &exitError{2, fmt.Sprintf("--log: %v", err)}
		}
		defer f.Close()
		r, name = f, path
	}
	res, err := logs.Read(r, model, time.Now().Year(), name)
	if err != nil {
		return nil, nil, &exitError{2, err.Error()}
	}
	return res.Window, []advisor.Source{{Kind: "log", Path: name, OK: true}}, nil
}

// buildEvidence is the collector end of every command: window (nil: none)
// and request files to evidence per target, the window's description and
// the notes collecting left.
func buildEvidence(w *window.Window, cfg *rules.Config, opt vllm.Options, reqs []requestSource) ([]*evidence.Evidence, advisor.Window, []string) {
	if opt.WeightBytes == nil {
		opt.WeightBytes = cfg.WeightBytes()
	}
	if w == nil {
		w = window.New()
	}
	evs := vllm.Build(w, opt) // may add notes to the window
	notes := append([]string(nil), w.Notes...)
	notes = append(notes, dcgm.Attach(w, evs, cfg.PeakBandwidths())...)
	evs, more := attachRequests(evs, reqs)
	notes = append(notes, more...)
	for _, e := range evs {
		evidence.Check(e)
	}
	win := advisor.Window{Cumulative: w.Cumulative, Points: w.Points}
	if !w.Start.IsZero() {
		s, e := w.Start.UTC(), w.End.UTC()
		win.Start, win.End = &s, &e
	}
	if secs := w.Seconds(); !math.IsNaN(secs) {
		win.Seconds = secs
	}
	if w.Points == 2 && len(w.Gauges) > 0 {
		notes = append(notes, "gauges (running, waiting, KV usage) were sampled only at the window's two ends, so bursts between them are invisible; scrape with --vllm or query --prom for a sampled window")
	}
	if w.Cumulative {
		notes = append(notes, "one snapshot: counts and distributions cover the time since the server started, and rates cannot be computed; give two snapshots for a window")
	}
	return evs, win, notes
}

// requestSource is one request-level file, read.
type requestSource struct {
	acc   *requests.Accumulator
	from  string
	model string
}

func readRequestSources(bench, reqFiles []string) ([]requestSource, []advisor.Source, error) {
	var out []requestSource
	var srcs []advisor.Source
	read := func(path, kind string, fn func(io.Reader, string) (*requests.Accumulator, []string, error)) error {
		f, name, err := openInput(path)
		if err != nil {
			return &exitError{2, fmt.Sprintf("--%s: %v", kind, err)}
		}
		defer f.Close()
		acc, notes, err := fn(f, name)
		var fe *requests.FormatError
		if errors.As(err, &fe) && fe.Reader != "" && fe.Reader != kind {
			return &exitError{2, fmt.Sprintf("%v: use --%s", err, fe.Reader)}
		}
		if errors.As(err, &fe) && fe.Convert != "" {
			return &exitError{2, fmt.Sprintf("%v, then give it to --requests", err)}
		}
		if err != nil {
			return &exitError{2, err.Error()}
		}
		out = append(out, requestSource{acc: acc, from: name})
		src := advisor.Source{Kind: kind, Path: name, OK: true}
		src.Notes, src.Rows, src.Skipped = notes, acc.Rows(), acc.Skipped()
		srcs = append(srcs, src)
		return nil
	}
	for _, p := range bench {
		if err := read(p, "bench", requests.ReadBench); err != nil {
			return nil, nil, err
		}
	}
	for _, p := range reqFiles {
		if err := read(p, "requests", requests.ReadRequests); err != nil {
			return nil, nil, err
		}
	}
	return out, srcs, nil
}

// attachRequests adds request-level evidence: to the only target, or to a
// target of its own when there is no metrics source.
func attachRequests(evs []*evidence.Evidence, reqs []requestSource) ([]*evidence.Evidence, []string) {
	var notes []string
	for _, r := range reqs {
		switch len(evs) {
		case 0:
			e := evidence.New(evidence.Target{Model: "requests from " + r.from})
			r.acc.Fill(e, r.from)
			evs = append(evs, e)
		case 1:
			r.acc.Fill(evs[0], r.from)
		default:
			notes = append(notes, fmt.Sprintf("%s was not attached: the metrics hold %d targets and a request file does not say which it belongs to", r.from, len(evs)))
		}
	}
	return evs, notes
}
