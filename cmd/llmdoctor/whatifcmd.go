package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/whatif"
)

// whatifFlags are whatif's settings, on the whatif command and opt-in on
// diagnose and demo.
type whatifFlags struct {
	on        bool
	assume    []string
	tolerance float64
}

func (w *whatifFlags) add(f *pflag.FlagSet, optIn bool) {
	if optIn {
		f.BoolVar(&w.on, "whatif", false, "predict each next step's effect with a simulator calibrated to the window and put it beside the step (docs/whatif.md); takes seconds")
	}
	f.StringSliceVar(&w.assume, "assume", nil, "engine settings the metrics cannot show, for whatif: "+strings.Join(whatif.Assumable, ", ")+", e.g. max_num_seqs=32,chunked_prefill=1")
	f.Float64Var(&w.tolerance, "whatif-tolerance", whatif.DefaultTolerance, "largest relative error of the unchanged replay at which whatif predicts (0 to 1)")
}

// options checks the flags and makes whatif's options.
func (w *whatifFlags) options(set *rules.Set, cfg *rules.Config, optIn bool) (whatif.Options, error) {
	o := whatif.Options{Rules: set, Config: cfg, Tolerance: w.tolerance, Assume: map[string]float64{}}
	if optIn && !w.on && len(w.assume) > 0 {
		return o, usageErr("--assume is for --whatif")
	}
	if optIn && !w.on && w.tolerance != whatif.DefaultTolerance {
		return o, usageErr("--whatif-tolerance is for --whatif")
	}
	if !(w.tolerance > 0 && w.tolerance <= 1) {
		return o, usageErr("--whatif-tolerance %v: give a share between 0 and 1, e.g. 0.25", w.tolerance)
	}
	for _, a := range w.assume {
		k, v, ok := strings.Cut(a, "=")
		k = strings.TrimSpace(k)
		if !ok || !slices.Contains(whatif.Assumable, k) {
			return o, usageErr("--assume %q: give NAME=VALUE, NAME one of %s", a, strings.Join(whatif.Assumable, ", "))
		}
		if _, dup := o.Assume[k]; dup {
			return o, usageErr("--assume names %s twice", k)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		switch {
		case err != nil:
			return o, usageErr("--assume %s=%s: not a number", k, v)
		case k == "chunked_prefill" && x != 0 && x != 1:
			return o, usageErr("--assume chunked_prefill=%s: give 1 (on) or 0 (off)", v)
		case k != "chunked_prefill" && (x < 1 || x != float64(int(x)) || x > 1<<20):
			return o, usageErr("--assume %s=%s: give a whole number from 1", k, v)
		}
		o.Assume[k] = x
	}
	return o, nil
}

// apply runs whatif on a diagnosis when asked: effects go beside the steps.
func (w *whatifFlags) apply(ctx context.Context, d *advisor.Diagnosis, o whatif.Options) *whatif.Result {
	if !w.on {
		return nil
	}
	return whatif.Run(ctx, d, o)
}

func newWhatif() *cobra.Command {
	o := &diagnoseOpts{}
	var (
		w        whatifFlags
		scenario string
		format   = "text"
		width    widthFlag
		color    = "auto"
	)
	w.on = true
	c := &cobra.Command{
		Use:   "whatif",
		Short: "Predict what each next step would do, with a simulator calibrated to the window",
		Long: "whatif diagnoses a window as diagnose does (same sources; --scenario takes a simulated\n" +
			"one), then fits a scenario of the continuous-batching simulator to each target's\n" +
			"evidence: arrival rate, prompt and output lengths, prefix reuse, the engine's limits,\n" +
			"KV capacity, and a step cost fitted to the observed inter-token and prefill times.\n" +
			"It replays that scenario unchanged and sets the replay beside what was observed.\n" +
			"Only when every counted figure is within --whatif-tolerance (a quantile anywhere\n" +
			"in its observed bucket counts as met) does it simulate each next step\n" +
			"that names a change (max_num_seqs, the token budget, chunked prefill, fp8 KV, one\n" +
			"more replica) and print the predicted TTFT, ITL and E2E; otherwise it says which\n" +
			"figure the replay missed. docs/whatif.md says how far predictions miss.\n" +
			"diagnose --whatif puts the same predictions beside the steps of any report." +
			exitStatus(exitRan+", whether or not the window could be reproduced", exitBadUsage),
		Example: "  llmdoctor whatif --scenario queue-bound\n" +
			"  llmdoctor whatif --prom http://prometheus:9090 --window 15m --assume max_num_seqs=64\n" +
			"  llmdoctor whatif --snapshot start.prom --snapshot end.prom --snapshot-interval 15m --format json",
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error { o.setInput(cmd); return o.stdinUses() },
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, cfg, err := loadRulesFlag(o.in, o.configPath, o.rulesDirs)
			if err != nil {
				return err
			}
			wo, err := w.options(set, cfg, false)
			if err != nil {
				return err
			}
			var d *advisor.Diagnosis
			if scenario != "" {
				if o.prom.url != "" || len(o.targetURLs)+len(o.vllmURLs)+len(o.snapshots)+len(o.benchFiles)+len(o.requestFiles) > 0 || o.logFile != "" {
					return usageErr("--scenario is a source of its own: give it or the other sources, not both")
				}
				sc, err := loadScenario(o.in, scenario)
				if err != nil {
					return usageErr("%w", err)
				}
				if d, err = runDemo(cmd.Context(), sc, set, cfg); err != nil {
					return &exitError{2, err.Error()}
				}
			} else {
				src, err := o.sources()
				if err != nil {
					return err
				}
				if d, err = diagnosis.Run(cmd.Context(), src, set, cfg, o.progress(cmd.ErrOrStderr())); err != nil {
					return o.explain(err)
				}
			}
			res := whatif.Run(cmd.Context(), d, wo)
			out := cmd.OutOrStdout()
			if format == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			return report.WhatifText(out, res, report.Options{Color: color, IsTerminal: isTerminal(out), Width: width.columns(out)})
		},
	}
	f := c.Flags()
	o.addSourceFlags(f)
	f.StringVar(&scenario, "scenario", "", "instead of a source: a simulated window, a built-in scenario (demo --list) or a scenario .yaml file")
	w.add(f, false)
	addRuleFlags(f, &o.configPath, &o.rulesDirs)
	f.Var(choice{&format, []string{"text", "json"}}, "format", "text, or json (schema "+whatif.Schema+")")
	f.Var(choice{&color, []string{"auto", "always", "never"}}, "color", "colour: auto, always or never (NO_COLOR is honoured)")
	f.Var(&width, "width", fmt.Sprintf("columns of the text: %d or more (default the terminal's width, else 80)", minWidth))
	return c
}
