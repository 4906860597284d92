package main

import (
	"fmt"
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
)

type diagnoseOpts struct {
	prom             promFlags
	targetURLs       []string
	vllmURLs         []string
	dcgmURLs         []string
	scrapeHeaders    []string
	vllmHeaders      []string
	engine           string
	interval         time.Duration
	duration         time.Duration
	scrapes          int
	snapshots        []string
	logFile          string
	logModel         string
	benchFiles       []string
	requestFiles     []string
	snapshotInterval time.Duration
	slo              string
	out              outputFlags
	configPath       string
	rulesDirs        []string
	failOn           string
	groupBy          []string
	timeout          time.Duration
	whatif           whatifFlags
	// in is the run's standard input (see input).
	in *input
}

// setInput makes the command's standard input what "-" reads in this run.
func (o *diagnoseOpts) setInput(cmd *cobra.Command) {
	o.in = newInput(cmd.InOrStdin())
	o.prom.in = o.in
	o.prom.stderr = cmd.ErrOrStderr()
}

func newDiagnose() *cobra.Command {
	o := &diagnoseOpts{}
	c := &cobra.Command{
		Use:   "diagnose",
		Short: "Diagnose vLLM or SGLang from Prometheus, live scrapes, snapshots, logs or benchmark results",
		Long: "diagnose reads one metrics source (--prom, --target, --snapshot or --log) and any\n" +
			"request-level files beside it (--bench, --requests) into one window, runs the rules\n" +
			"over each target (a model, or the labels of --group-by) and prints the verdict: the\n" +
			"bottleneck, the numbers that show it, and the next steps, cheapest first. What could\n" +
			"not be checked is named as a gap, never passed. The text report's first screen is\n" +
			"short; --details prints everything, --format json the v1 contract." +
			exitStatus("0  it ran, whatever it found",
				"1  a finding at or above --fail-on fired",
				exitBadUsage),
		Example: "  llmdoctor diagnose --prom http://prometheus:9090 --window 15m --selector 'namespace=\"prod\"'\n" +
			"  llmdoctor diagnose --target http://127.0.0.1:8000 --dcgm 127.0.0.1:9400 --duration 2m\n" +
			"  llmdoctor diagnose --snapshot start.prom --snapshot end.prom --snapshot-interval 15m --format json\n" +
			"  llmdoctor diagnose --prom http://prometheus:9090 --at 2026-11-30T14:05:00Z --print-queries\n" +
			"  llmdoctor diagnose --log vllm.log --bench run.json\n" +
			"  llmdoctor diagnose --bench run.json --details",
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error { o.setInput(cmd); return o.stdinUses() },
		RunE:    func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := c.Flags()
	o.addSourceFlags(f)
	o.out.add(f, report.DiagnosisDoc)
	addRuleFlags(f, &o.configPath, &o.rulesDirs)
	f.StringVar(&o.failOn, "fail-on", "", "exit 1 when a finding of this severity or above fires (info, warning, critical)")
	f.StringVar(&o.slo, "slo", "", "targets a healthy verdict is judged against, e.g. ttft_p99=2s,tpot_p50=50ms,e2e_p99=30s (default: interactive serving; see llmdoctor config init)")
	o.whatif.add(f, true)
	return c
}

// addSourceFlags declares the sources diagnose and checklist share.
func (o *diagnoseOpts) addSourceFlags(f *pflag.FlagSet) {
	o.prom.add(f)
	o.prom.addOneRun(f)
	f.StringArrayVar(&o.targetURLs, "target", nil, "serving engine to scrape, vLLM or SGLang, found from what it exposes (host:port or URL of /metrics); repeatable")
	f.StringArrayVar(&o.vllmURLs, "vllm", nil, "same as --target (its older name); repeatable")
	f.StringVar(&o.engine, "engine", "auto", "serving engine whose metrics to read: auto (every engine found), "+strings.Join(engine.Names(), " or "))
	f.StringArrayVar(&o.dcgmURLs, "dcgm", nil, "dcgm-exporter to scrape alongside --target (host:port or URL); repeatable")
	f.StringArrayVar(&o.scrapeHeaders, "target-header", nil, `extra request header "Name: value" for --target and --dcgm scrapes (e.g. "Authorization: Bearer …"); repeatable`)
	f.StringArrayVar(&o.vllmHeaders, "vllm-header", nil, "same as --target-header (its older name); repeatable")
	f.DurationVar(&o.interval, "interval", 5*time.Second, "time between scrapes with --target")
	f.DurationVar(&o.duration, "duration", 60*time.Second, "how long to scrape with --target")
	// A step-mode simulator's clock moves per scrape, not per second: a fixed
	// count of scrapes gives it a fixed window.
	f.IntVar(&o.scrapes, "scrapes", 0, "with --target: stop after this many scrapes following the first instead of after --duration")
	hide(f, "scrapes")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "timeout of one scrape")
	f.StringArrayVar(&o.snapshots, "snapshot", nil, "saved /metrics exposition file (- for stdin), oldest first; repeatable")
	f.DurationVar(&o.snapshotInterval, "snapshot-interval", 0, "time between consecutive --snapshot files (default: from sample timestamps or file times)")
	f.StringVar(&o.logFile, "log", "", "vLLM server log to read stats lines from (- for stdin)")
	f.StringVar(&o.logModel, "log-model", "", "model name for a --log target (default: what the log's start-up lines say, else the engine's name)")
	f.StringArrayVar(&o.benchFiles, "bench", nil, "vllm bench serve result JSON (--save-result, ideally --save-detailed; - for stdin); repeatable")
	f.StringArrayVar(&o.requestFiles, "requests", nil, "per-request JSONL or CSV (docs/requests.md; - for stdin); repeatable")
	f.StringSliceVar(&o.groupBy, "group-by", []string{"model_name"}, "labels that make one target")
}

// sloTargets reads --slo for diagnose: the targets a healthy verdict is
// judged against, over those of the configuration.
func sloTargets(spec string, cfg *rules.Config) error {
	if strings.TrimSpace(spec) == "" {
		return nil
	}
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if !ok || err != nil || d < time.Millisecond {
			return usageErr("--slo %q: want NAME=DURATION like ttft_p99=2s", part)
		}
		switch strings.TrimSpace(k) {
		case "ttft_p99":
			cfg.SLO.TTFTP99 = d
		case "tpot_p50", "itl_p50":
			cfg.SLO.TPOT = d
		case "e2e_p99":
			cfg.SLO.E2EP99 = d
		default:
			return usageErr("--slo %q: diagnose judges against ttft_p99, tpot_p50 and e2e_p99", part)
		}
	}
	cfg.SLOFrom = "--slo"
	return nil
}

func (o *diagnoseOpts) run(cmd *cobra.Command) error {
	var failOn rules.Severity
	if o.failOn != "" {
		s, err := rules.ParseSeverity(o.failOn)
		if err != nil {
			return usageErr("--fail-on: %w", err)
		}
		failOn = s
	}
	outs, err := o.out.parse(report.DiagnosisDoc)
	if err != nil {
		return err
	}
	if err := o.out.slack.prepare(o.in); err != nil {
		return err
	}
	set, cfg, err := loadRulesFlag(o.in, o.configPath, o.rulesDirs)
	if err != nil {
		return err
	}
	if err := sloTargets(o.slo, cfg); err != nil {
		return err
	}
	wo, err := o.whatif.options(set, cfg, true)
	if err != nil {
		return err
	}
	src, err := o.sources()
	if err != nil {
		return err
	}
	d, err := diagnosis.Run(cmd.Context(), src, set, cfg, o.progress(cmd.ErrOrStderr()))
	if err != nil {
		return o.explain(err)
	}
	o.whatif.apply(cmd.Context(), d, wo)
	if err := o.out.write(cmd.OutOrStdout(), outs, func(r report.Renderer, w io.Writer, opt report.Options) error {
		return r.Diagnosis(w, d, opt)
	}); err != nil {
		return err
	}
	if err := o.out.postDiagnosis(cmd.Context(), cmd.ErrOrStderr(), d); err != nil {
		return err
	}
	if failOn > 0 && worst(d) >= failOn {
		return &exitError{1, fmt.Sprintf("a finding at or above %s fired (--fail-on)", failOn)}
	}
	return nil
}

// sources turns the source flags into what the pipeline reads. It refuses
// flag values that are malformed on their own; what is wrong with the
// sources together is diagnosis.Sources.Validate's to say (see explain).
func (o *diagnoseOpts) sources() (diagnosis.Sources, error) {
	// --vllm and --vllm-header are the older names of --target and
	// --target-header: both kinds add up.
	o.targetURLs = append(o.targetURLs, o.vllmURLs...)
	o.vllmURLs = nil
	o.scrapeHeaders = append(o.scrapeHeaders, o.vllmHeaders...)
	o.vllmHeaders = nil
	src := diagnosis.Sources{Snapshots: o.snapshots, SnapshotInterval: o.snapshotInterval, Bench: o.benchFiles,
		Requests: o.requestFiles, GroupBy: o.groupBy, Stdin: o.in.reader()}
	if o.engine != "auto" {
		src.Engine = o.engine
	}
	if o.prom.url == "" && (o.prom.at != "" || o.prom.printQueries) {
		return src, usageErr("--at and --print-queries read a --prom server: give --prom URL")
	}
	if o.prom.url != "" {
		p, err := o.prom.source()
		if err != nil {
			return src, o.mask(err)
		}
		if o.prom.printQueries {
			p.Options.Trace = queryPrinter(redactWriter{o.prom.stderr, o.secrets()})
		}
		src.Prom = p
	}
	if len(o.targetURLs)+len(o.dcgmURLs)+len(o.scrapeHeaders) > 0 {
		h, err := o.scrapeHeader()
		if err != nil {
			return src, o.mask(err)
		}
		src.Scrape = &diagnosis.ScrapeSource{Engines: o.targetURLs, GPUExporters: o.dcgmURLs, Header: h,
			Interval: o.interval, Duration: o.duration, Scrapes: o.scrapes, Timeout: o.timeout}
	}
	if o.logFile != "" {
		src.Log = &diagnosis.LogSource{Path: o.logFile, Model: o.logModel}
	}
	// Sources are checked together first, so that their problems are named
	// before a flag that would not be used.
	if err := src.Validate(); err != nil {
		return src, o.explain(err)
	}
	if err := o.checkScrapeFlags(); err != nil {
		return src, err
	}
	return src, nil
}

// progress prints a live scrape's progress to a terminal's stderr, one line
// rewritten in place, with credentials masked; elsewhere nothing.
func (o *diagnoseOpts) progress(stderr io.Writer) func(diagnosis.Progress) {
	f, ok := stderr.(*os.File)
	if !ok || !isatty.IsTerminal(f.Fd()) {
		return nil
	}
	w := redactWriter{stderr, o.secrets()}
	return func(p diagnosis.Progress) {
		switch {
		case p.Stage != diagnosis.StageScrape:
		case p.Done:
			note(w, "\n")
		default:
			note(w, "\r%s ", p.Message)
		}
	}
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
