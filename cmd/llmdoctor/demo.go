package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
	"github.com/llmdoctor/llmdoctor/simrun"
)

func newDemo() *cobra.Command {
	var (
		scenario, configPath string
		rulesDirs            []string
		out                  outputFlags
		list                 bool
		engineName           string
		wf                   whatifFlags
		probeOn              bool
		probeSLO             string
	)
	c := &cobra.Command{
		Use:   "demo",
		Short: "Diagnose a built-in serving-engine simulator: nothing to install",
		Long: "demo starts the simulator in-process on a loopback port, scrapes its /metrics (with\n" +
			"vLLM's names, or SGLang's with --engine sglang) over HTTP through the same collector as\n" +
			"diagnose --target, and prints the diagnosis. Each scrape advances the simulator's\n" +
			"clock, so a 15-minute window takes a second. --list names the scenarios, each\n" +
			"a bottleneck the diagnosis should find; --scenario also takes your own file.\n\n" +
			"With --probe the simulator instead runs in real time with no traffic of its own and\n" +
			"answers the OpenAI API, and llmdoctor probe measures it end to end over HTTP: the\n" +
			"prompt-length sweep, the load ladder (up to 48 concurrent requests, 64 output tokens\n" +
			"each) and the capacity at the SLO, with the first load past it diagnosed. It takes\n" +
			"under a minute. Its SLO is diagnose's with a TTFT p99 of 1s, which the queue-bound\n" +
			"scenario breaks within the ladder." +
			exitStatus(exitRan, exitBadUsage),
		Example: "  llmdoctor demo\n" +
			"  llmdoctor demo --list\n" +
			"  llmdoctor demo --scenario kv-capacity --details\n" +
			"  llmdoctor demo --scenario decode-bound --engine sglang --format html > report.html\n" +
			"  llmdoctor demo --probe --slo ttft_p99=500ms",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if list {
				return listScenarios(cmd.OutOrStdout())
			}
			if !probeOn && cmd.Flags().Changed("slo") {
				return usageErr("--slo is for --probe: the diagnosis judges against the configuration's SLO")
			}
			if probeOn && wf.on {
				return usageErr("--whatif predicts a diagnosis's next steps: give it without --probe")
			}
			doc := report.DiagnosisDoc
			if probeOn {
				doc = report.ProbeDoc
			}
			outs, err := out.parse(doc)
			if err != nil {
				return err
			}
			if err := oneStdin(append([]stdinUse{{"--config", []string{configPath}}, {"--scenario", []string{scenario}}},
				out.slack.stdinUses()...)...); err != nil {
				return err
			}
			in := newInput(cmd.InOrStdin())
			if err := out.slack.prepare(in); err != nil {
				return err
			}
			set, cfg, err := loadRulesFlag(in, configPath, rulesDirs)
			if err != nil {
				return err
			}
			wo, err := wf.options(set, cfg, true)
			if err != nil {
				return err
			}
			sc, err := loadScenario(in, scenario)
			if err != nil {
				return usageErr("%v", err)
			}
			if sc.Exposes, err = simEngine(engineName); err != nil {
				return err
			}
			if probeOn {
				res, err := demoProbe(cmd, sc, set, cfg, probeSLO)
				if err != nil {
					return err
				}
				if err := out.write(cmd.OutOrStdout(), outs, func(r report.Renderer, w io.Writer, opt report.Options) error {
					return r.Probe(w, res, opt)
				}); err != nil {
					return err
				}
				return out.postProbe(cmd.Context(), cmd.ErrOrStderr(), res)
			}
			d, err := runDemo(cmd.Context(), sc, set, cfg)
			if err != nil {
				return &exitError{2, err.Error()}
			}
			wf.apply(cmd.Context(), d, wo)
			if err := out.write(cmd.OutOrStdout(), outs, func(r report.Renderer, w io.Writer, opt report.Options) error {
				return r.Diagnosis(w, d, opt)
			}); err != nil {
				return err
			}
			return out.postDiagnosis(cmd.Context(), cmd.ErrOrStderr(), d)
		},
	}
	f := c.Flags()
	f.StringVar(&scenario, "scenario", "queue-bound", "scenario name (see --list) or a scenario .yaml file (- for stdin)")
	f.StringVar(&engineName, "engine", "vllm", "whose metric names the simulator serves: "+strings.Join(sim.Exposures, " or "))
	f.BoolVar(&list, "list", false, "list the built-in scenarios")
	f.BoolVar(&probeOn, "probe", false, "probe the simulator over its OpenAI API in real time instead (llmdoctor probe, end to end)")
	f.StringVar(&probeSLO, "slo", "ttft_p99=1s", "with --probe: targets a load must meet, on top of diagnose's ("+probe.DefaultSLO().String()+")")
	out.add(f, report.DiagnosisDoc)
	addRuleFlags(f, &configPath, &rulesDirs)
	wf.add(f, true)
	return c
}

// demoProbe serves the scenario's engine in real time on a loopback port,
// with no traffic of its own, and probes it as probe --target does; the
// limits suit a simulator on this machine, not someone's server.
func demoProbe(cmd *cobra.Command, sc *sim.Scenario, set *rules.Set, cfg *rules.Config, slo string) (*probe.Result, error) {
	o := probe.Options{Rules: set, Config: cfg, Seed: 1, OutputTokens: 64, StepRequests: 16, Limits: probe.DefaultLimits()}
	o.Limits.Concurrency, o.Limits.Rate = 48, 200
	var err error
	if o.SLO, err = probe.ParseSLO(slo, probe.DefaultSLO()); err != nil {
		return nil, usageErr("--slo %w", err)
	}
	e, err := sim.New(sim.NoTraffic(sc), false)
	if err != nil {
		return nil, &exitError{2, err.Error()}
	}
	url, stop, err := sim.ServeLoopback(sim.NewServer(e, 0, 1))
	if err != nil {
		return nil, &exitError{2, err.Error()}
	}
	defer stop()
	o.Target = url
	stderr := cmd.ErrOrStderr()
	note(stderr, "probing the simulated %s (%s) on %s over HTTP in real time; Ctrl-C stops and reports what was measured\n",
		sc.Name, e.ServedModel(), o.Target)
	o.Progress = func(line string) {
		if isTerminal(stderr) {
			note(stderr, "%s\n", line)
		}
	}
	res, err := probe.Run(cmd.Context(), o)
	if err != nil {
		return nil, &exitError{2, err.Error()}
	}
	return res, nil
}

func listScenarios(w io.Writer) error {
	all, err := sim.Scenarios()
	if err != nil {
		return err
	}
	for _, s := range all {
		if err := printf(w, "%-22s expect %-22s %s\n", s.Name, s.Expect, s.Setup()); err != nil {
			return err
		}
	}
	return nil
}

// runDemo serves the scenario on a loopback port and diagnoses it over HTTP,
// through the same reading and evidence building as diagnose --target.
func runDemo(ctx context.Context, sc *sim.Scenario, set *rules.Set, cfg *rules.Config) (*advisor.Diagnosis, error) {
	return simrun.Diagnose(ctx, sc, simrun.Options{Rules: set, Config: cfg, Loopback: true})
}

func newSim() *cobra.Command {
	var (
		scenario, listen        string
		speed                   float64
		benchOut, logOut, omOut string
		engineName              string
		noTraffic               bool
	)
	c := &cobra.Command{
		Use:   "sim",
		Short: "Serve a simulated vLLM or SGLang server: its /metrics (and /dcgm/metrics) and an OpenAI-compatible API",
		Long: "sim runs a scenario of the continuous-batching simulator the demo uses and serves\n" +
			"what a real server would: vLLM's /metrics (SGLang's with --engine sglang) and\n" +
			"dcgm-exporter's GPU metrics on /dcgm/metrics, virtual time running --speed times\n" +
			"faster than real time, until interrupted.\n\n" +
			"It also answers the OpenAI API: /v1/models, /v1/completions and /v1/chat/completions,\n" +
			"streamed or not. Those requests join the scenario's own in the engine's queue, count\n" +
			"in its metrics, and get each token when the engine step that made it ends (at\n" +
			"--speed 1, the engine's own TTFT and inter-token latency). Prompts are counted as\n" +
			"llm-d-inference-sim's dummy tokenizer counts them; there is no EOS, so every answer\n" +
			"has max_tokens tokens (default 16). With --no-traffic the scenario sends nothing of\n" +
			"its own (its engine, GPU and model kept), so a probe measures the engine alone:\n\n" +
			"  llmdoctor sim --scenario queue-bound --no-traffic --listen 127.0.0.1:8000\n" +
			"  llmdoctor probe --target http://127.0.0.1:8000     (in another terminal)\n\n" +
			"With --bench, --log or --openmetrics it instead runs the whole scenario at once and\n" +
			"writes its requests as vllm bench serve JSON, the engine's periodic log (vLLM's stats\n" +
			"lines, SGLang's scheduler lines with --engine sglang), or timestamped OpenMetrics to\n" +
			"backfill Prometheus." +
			exitStatus("0  it served until interrupted, or wrote its files", exitBadUsage),
		Example: "  llmdoctor sim --scenario queue-bound --listen 127.0.0.1:8000 --speed 10\n" +
			"  llmdoctor sim --scenario queue-bound --no-traffic --listen 127.0.0.1:8000\n" +
			"  llmdoctor sim --scenario kv-capacity --bench run.json\n" +
			"  llmdoctor sim --scenario decode-bound --openmetrics window.om",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sc, err := loadScenario(newInput(cmd.InOrStdin()), scenario)
			if err != nil {
				return usageErr("%v", err)
			}
			if sc.Exposes, err = simEngine(engineName); err != nil {
				return err
			}
			if speed <= 0 {
				return usageErr("--speed must be positive")
			}
			if benchOut != "" || logOut != "" || omOut != "" {
				if noTraffic {
					return usageErr("--no-traffic serves only what it is sent: it cannot go with --bench, --log or --openmetrics")
				}
				return runOffline(sc, benchOut, logOut, omOut)
			}
			if noTraffic {
				sc = sim.NoTraffic(sc)
			}
			e, err := sim.New(sc, false)
			if err != nil {
				return &exitError{2, err.Error()}
			}
			e.AdvanceTo(sc.Warmup.Seconds())
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &exitError{2, fmt.Sprintf("--listen: %v", err)}
			}
			traffic := ""
			if noTraffic {
				traffic = " with no traffic of its own"
			}
			note(cmd.ErrOrStderr(), "simulating %s%s at %g× on http://%s/metrics (GPU metrics on /dcgm/metrics; OpenAI API on /v1/completions and /v1/chat/completions); Ctrl-C stops\n",
				sc.Name, traffic, speed, ln.Addr())
			srv := sim.NewServer(e, 0, speed)
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second}
			go func() {
				<-cmd.Context().Done()
				_ = srv.Close() // ends the streams in flight, so that hs.Close need not wait on them; never fails
				_ = hs.Close()  // Serve then returns ErrServerClosed, which is checked
			}()
			if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
				return &exitError{2, err.Error()}
			}
			return nil
		},
	}
	c.Flags().StringVar(&scenario, "scenario", "queue-bound", "scenario name or .yaml file (- for stdin)")
	c.Flags().StringVar(&engineName, "engine", "vllm", "whose metric names to serve: "+strings.Join(sim.Exposures, " or "))
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:8000", "address to serve on")
	c.Flags().Float64Var(&speed, "speed", 1, "virtual seconds per real second")
	c.Flags().BoolVar(&noTraffic, "no-traffic", false, "send no traffic of the scenario's own: serve only the API requests it is sent")
	c.Flags().StringVar(&benchOut, "bench", "", "instead of serving, run the scenario and write its requests as vllm bench serve JSON")
	c.Flags().StringVar(&logOut, "log", "", "instead of serving, run the scenario and write the engine's periodic log (SGLang's scheduler lines with --engine sglang)")
	c.Flags().StringVar(&omOut, "openmetrics", "", "instead of serving, run the scenario and write timestamped OpenMetrics (for promtool tsdb create-blocks-from openmetrics)")
	return c
}

// simEngine checks an --engine value against the names the simulator can
// serve.
func simEngine(name string) (string, error) {
	for _, x := range sim.Exposures {
		if x == name {
			return name, nil
		}
	}
	return "", usageErr("--engine %q: the simulator serves %s names", name, strings.Join(sim.Exposures, " or "))
}

// runOffline writes the requested files from one run of the scenario.
func runOffline(sc *sim.Scenario, benchOut, logOut, omOut string) error {
	var o sim.Offline
	var files []*os.File
	open := func(path string) (*os.File, error) {
		f, err := os.Create(path)
		if err == nil {
			files = append(files, f)
		}
		return f, err
	}
	defer func() {
		for _, f := range files {
			_ = f.Close() // only after an error, which is the one to tell; success closes each and checks
		}
	}()
	for _, x := range []struct {
		path string
		dst  *io.Writer
	}{{benchOut, &o.Bench}, {logOut, &o.Log}, {omOut, &o.OpenMetrics}} {
		if x.path == "" {
			continue
		}
		f, err := open(x.path)
		if err != nil {
			return &exitError{2, err.Error()}
		}
		*x.dst = f
	}
	if err := o.Run(sc); err != nil {
		return &exitError{2, err.Error()}
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			return &exitError{2, err.Error()}
		}
	}
	files = nil
	return nil
}
