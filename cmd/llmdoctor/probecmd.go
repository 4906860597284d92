package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/internal/redact"
	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/report"
)

// probeFlags are probe's settings, shared by probe, checklist --probe and
// demo --probe.
type probeFlags struct {
	target, model, apiKeyEnv, apiKeyFile string
	chat, noMetrics, prefix, dryRun      bool
	noRefine, keepRequests               bool
	metrics, dcgm, headers               []string
	lengths, concurrency                 []int
	rates                                []float64
	repeats, warmup                      int
	promptTokens, outputTokens           int
	stepRequests                         int
	stepTime                             time.Duration
	slo, launch                          string
	seed                                 int64
	limits                               probe.Limits
}

// add declares the flags. checklist --probe has --target, --dcgm,
// --target-header and --slo of its own, and runs the pre-launch run by
// default.
func (p *probeFlags) add(f *pflag.FlagSet, forChecklist bool) {
	d := probe.DefaultLimits()
	if !forChecklist {
		f.StringVar(&p.target, "target", "", "the server to probe: its URL (OpenAI-compatible: vLLM, SGLang, llm-d-inference-sim, llmdoctor sim)")
		f.StringArrayVar(&p.headers, "header", nil, "header \"Name: value\" sent with every request and scrape; repeatable")
		f.StringArrayVar(&p.dcgm, "dcgm", nil, "dcgm-exporter endpoint scraped alongside; repeatable")
		f.StringVar(&p.slo, "slo", "", "targets a load must meet: ttft_p99, itl_p99, tpot_p50, e2e_p99, e.g. ttft_p99=2s,itl_p99=100ms (default diagnose's: "+probe.DefaultSLO().String()+")")
		f.StringVar(&p.launch, "launch", "", "after the ladder, a pre-launch run: open-loop Poisson arrivals at a rate (5 requests/s) or a share of the capacity's throughput (80%), at least "+fmt.Sprint(probe.LaunchRequests)+" requests")
	} else {
		f.StringVar(&p.launch, "launch", "80%", "the pre-launch run's open-loop rate (requests/s) or share of the capacity's throughput (80%); 0 skips it")
	}
	f.StringVar(&p.apiKeyEnv, "api-key-env", "", "environment variable holding the API key to send as a bearer token (never printed)")
	f.StringVar(&p.apiKeyFile, "api-key-file", "", "file holding the API key (- for stdin; never printed)")
	f.StringArrayVar(&p.metrics, "metrics", nil, "the engine's /metrics to scrape during the ladder (default: the target's own); repeatable")
	f.BoolVar(&p.noMetrics, "no-metrics", false, "do not scrape the engine's /metrics")
	f.StringVar(&p.model, "model", "", "model to ask for (default: the first /v1/models lists)")
	f.BoolVar(&p.chat, "chat", false, "probe /v1/chat/completions instead of /v1/completions")
	f.IntSliceVar(&p.lengths, "lengths", nil, "prompt lengths of the sweep at concurrency 1, in tokens (default 128,512,1024,2048,4096)")
	f.IntVar(&p.repeats, "repeats", 3, "requests per sweep length")
	f.IntVar(&p.warmup, "warmup", 3, "warm-up requests, left out of every figure")
	f.BoolVar(&p.prefix, "prefix", false, "let requests of one length share their start, to measure what the prefix cache saves (default: every prompt distinct)")
	f.IntSliceVar(&p.concurrency, "concurrency", nil, "closed-loop concurrency levels of the ladder (default 1, 2, 4, … up to --max-concurrency)")
	f.Float64SliceVar(&p.rates, "rates", nil, "instead of concurrency: open-loop arrival rates, requests per second (Poisson)")
	f.IntVar(&p.promptTokens, "prompt-tokens", 512, "mean prompt length of a ladder request (lengths vary ±50%)")
	f.IntVar(&p.outputTokens, "output-tokens", 128, "output tokens of a ladder request (asked with ignore_eos)")
	f.IntVar(&p.stepRequests, "step-requests", 24, "least requests per load (at least four per concurrent request)")
	f.DurationVar(&p.stepTime, "step-time", time.Minute, "longest time one load runs")
	f.BoolVar(&p.noRefine, "no-refine", false, "do not add loads between the last that met the SLO and the first that did not")
	f.Int64Var(&p.seed, "seed", 0, "seed of the prompts and arrivals (default: from the clock)")
	f.IntVar(&p.limits.Requests, "max-requests", d.Requests, "most requests the probe sends, warm-up included")
	f.Float64Var(&p.limits.Rate, "max-rate", d.Rate, "most requests started per second")
	f.IntVar(&p.limits.Concurrency, "max-concurrency", d.Concurrency, "most requests in flight")
	f.DurationVar(&p.limits.Duration, "max-duration", d.Duration, "longest the probe runs")
	f.IntVar(&p.limits.OutputTokens, "max-output-tokens", d.OutputTokens, "most output tokens one request asks for")
	f.IntVar(&p.limits.PromptTokens, "max-prompt-tokens", d.PromptTokens, "longest prompt, in tokens")
	f.Float64Var(&p.limits.ErrorRate, "max-error-rate", d.ErrorRate, "share of failed requests at a load that ends the ladder")
	f.DurationVar(&p.limits.RequestTimeout, "request-timeout", d.RequestTimeout, "longest one request may take")
	f.BoolVar(&p.dryRun, "dry-run", false, "print the plan and how many requests it sends, and send none")
	f.BoolVar(&p.keepRequests, "keep-requests", false, "keep every request with its timings in the JSON (the sweep's are always there)")
}

// options checks the flags and makes the probe's options.
func (p *probeFlags) options(in *input) (probe.Options, error) {
	o := probe.Options{Target: p.target, Model: p.model, Chat: p.chat, NoMetrics: p.noMetrics, Prefix: p.prefix,
		Lengths: p.lengths, Repeats: p.repeats, Warmup: p.warmup, Concurrency: p.concurrency, Rates: p.rates,
		PromptTokens: p.promptTokens, OutputTokens: p.outputTokens, StepRequests: p.stepRequests, StepTime: p.stepTime,
		NoRefine: p.noRefine, KeepRequests: p.keepRequests, Seed: p.seed, Limits: p.limits, Metrics: p.metrics, GPUExporters: p.dcgm}
	if o.OutputTokens > o.Limits.OutputTokens {
		return o, usageErr("--output-tokens %d is above --max-output-tokens %d", o.OutputTokens, o.Limits.OutputTokens)
	}
	slo, err := probe.ParseSLO(p.slo, probe.DefaultSLO())
	if err != nil {
		return o, usageErr("--slo %w", err)
	}
	o.SLO = slo
	if o.Launch, err = parseLaunch(p.launch); err != nil {
		return o, err
	}
	if len(p.headers) > 0 {
		o.Header = http.Header{}
		for _, h := range p.headers {
			k, v, ok := strings.Cut(h, ":")
			if !ok || strings.TrimSpace(k) == "" {
				return o, usageErr("--header %q: want \"Name: value\"", redact.String(h))
			}
			o.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	switch {
	case p.apiKeyEnv != "" && p.apiKeyFile != "":
		return o, usageErr("give the API key with --api-key-env or --api-key-file, not both")
	case p.apiKeyEnv != "":
		o.APIKey = strings.TrimSpace(os.Getenv(p.apiKeyEnv))
		if o.APIKey == "" {
			return o, usageErr("--api-key-env %s: the variable is not set", p.apiKeyEnv)
		}
	case p.apiKeyFile != "":
		b, err := in.read(p.apiKeyFile)
		if err != nil {
			return o, usageErr("--api-key-file: %w", err)
		}
		if o.APIKey = strings.TrimSpace(string(b)); o.APIKey == "" {
			return o, usageErr("--api-key-file %s is empty", p.apiKeyFile)
		}
	}
	if _, err := probe.MakePlan(o); err != nil {
		return o, usageErr("%w", err)
	}
	return o, nil
}

// parseLaunch reads --launch: a rate in requests per second, or a share of
// the capacity's throughput as a percentage (returned negative, as
// probe.Options.Launch takes it); empty or 0 is none.
func parseLaunch(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		x, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || !(x > 0 && x <= 100) {
			return 0, usageErr("--launch %q: a share of the capacity is a percentage above 0 and at most 100", s)
		}
		return -x / 100, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, usageErr("--launch %q: want requests per second like 5, or a share of the capacity like 80%%", s)
	}
	return x, nil
}

// secrets are what no output may show: the key and header values.
func (p *probeFlags) secrets(o probe.Options) *redact.Secrets {
	s := &redact.Secrets{}
	if o.APIKey != "" {
		s.Add(o.APIKey)
	}
	for _, vs := range o.Header {
		for _, v := range vs {
			s.AddHeader(v)
		}
	}
	s.AddURL(o.Target)
	for _, u := range o.Metrics {
		s.AddURL(u)
	}
	return s
}

func newProbe() *cobra.Command {
	var (
		p   probeFlags
		out outputFlags
		cfg struct {
			path string
			dirs []string
		}
	)
	c := &cobra.Command{
		Use:   "probe",
		Short: "Ask the server directly: prefill cost per token, latency under load, and its capacity at the SLO",
		Long: "probe sends OpenAI-compatible streaming requests to a server (vLLM, SGLang,\n" +
			"llm-d-inference-sim, llmdoctor sim) and measures what metrics cannot tell:\n" +
			"  1. a prompt-length sweep at concurrency 1, after a warm-up: TTFT against prompt\n" +
			"     tokens gives the prefill cost per 1k tokens and its fixed part, with the fit's error;\n" +
			"     every prompt starts with text no other has, so a prefix cache cannot hide it;\n" +
			"  2. a load ladder, concurrency 1, 2, 4, … (or open-loop --rates) until the SLO breaks,\n" +
			"     a limit is reached or too many requests fail, then loads between the last that\n" +
			"     met the SLO and the first that did not: TTFT, ITL, TPOT and end-to-end\n" +
			"     percentiles, throughput and goodput per load, and the knee;\n" +
			"  3. the capacity at the SLO: the highest load that met it, with its band.\n" +
			"While the ladder runs it scrapes the engine's /metrics (the target's own, or\n" +
			"--metrics), so each load splits into queue, prefill and decode, and the first load\n" +
			"past the SLO is diagnosed by the same rules as diagnose: what breaks first, and the\n" +
			"next step.\n\n" +
			"A server being probed is someone's: every request counts against --max-requests,\n" +
			"--max-rate, --max-concurrency, --max-duration and --max-output-tokens, each with a\n" +
			"modest default; --dry-run prints the plan; a target that is not this machine gets\n" +
			"the plan printed before the first request; 429 and 503 answers back off and are\n" +
			"counted; Ctrl-C stops at once and reports what was measured. The API key is read\n" +
			"from --api-key-env or --api-key-file and never printed." +
			exitStatus("0  it ran (a probe stopped early reports what it measured)",
				"2  bad usage, or the server did not answer /v1/models or does not serve --model"),
		Example: "  llmdoctor probe --target http://127.0.0.1:8000 --dry-run\n" +
			"  llmdoctor probe --target http://vllm:8000 --slo ttft_p99=1s,itl_p99=80ms --api-key-env VLLM_API_KEY\n" +
			"  llmdoctor probe --target http://sglang:30000 --rates 2,4,8,16 --format json > probe.json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := newInput(cmd.InOrStdin())
			if p.target == "" {
				return usageErr("give the server to probe with --target URL (llmdoctor demo --probe probes the simulator)")
			}
			outs, err := out.parse(report.ProbeDoc)
			if err != nil {
				return err
			}
			if err := out.slack.prepare(in); err != nil {
				return err
			}
			o, err := p.options(in)
			if err != nil {
				return err
			}
			set, rcfg, err := loadRulesFlag(in, cfg.path, cfg.dirs)
			if err != nil {
				return err
			}
			o.Rules, o.Config = set, rcfg
			return runProbe(cmd, o, &p, &out, outs)
		},
	}
	f := c.Flags()
	p.add(f, false)
	addRuleFlags(f, &cfg.path, &cfg.dirs)
	out.add(f, report.ProbeDoc)
	return c
}

// runProbe probes and writes the outputs.
func runProbe(cmd *cobra.Command, o probe.Options, p *probeFlags, out *outputFlags, outs []output) error {
	res, done, err := probeRun(cmd, o, p)
	if err != nil || done {
		return err
	}
	sec := p.secrets(o)
	if err := out.write(cmd.OutOrStdout(), outs, func(r report.Renderer, w io.Writer, opt report.Options) error {
		return r.Probe(redactWriter{w, sec}, res, opt)
	}); err != nil {
		return err
	}
	return out.postProbe(cmd.Context(), cmd.ErrOrStderr(), res)
}

// probeRun prints the plan when asked (done: nothing else to do) or when
// the target is not this machine, then probes; probe and checklist --probe
// share it.
func probeRun(cmd *cobra.Command, o probe.Options, p *probeFlags) (_ *probe.Result, done bool, _ error) {
	stderr := cmd.ErrOrStderr()
	sec := p.secrets(o)
	plan, err := probe.MakePlan(o)
	if err != nil {
		return nil, false, usageErr("%w", err)
	}
	if p.dryRun {
		return nil, true, report.ProbePlanText(redactWriter{cmd.OutOrStdout(), sec}, plan)
	}
	if !plan.Loopback {
		// Someone else's server: say what is about to happen first.
		if err := report.ProbePlanText(redactWriter{stderr, sec}, plan); err != nil {
			return nil, false, err
		}
	}
	o.Progress = func(line string) {
		if isTerminal(stderr) {
			note(redactWriter{stderr, sec}, "%s\n", line)
		}
	}
	res, err := probe.Run(cmd.Context(), o)
	if err != nil {
		return nil, false, &exitError{2, sec.String(err.Error())}
	}
	if res.Stopped == probe.StopInterrupted {
		note(stderr, "stopped: reporting what was measured\n")
	}
	return res, false, nil
}
