package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/view"
)

func newChecklist() *cobra.Command {
	o := &diagnoseOpts{}
	var slo string
	var strict, probeOn bool
	var pf probeFlags
	var probeNames []string
	c := &cobra.Command{
		Use:   "checklist",
		Short: "Pre-launch checklist: pass, fail or cannot-check for each item, with SLO gates",
		Long: "checklist reads the same sources as diagnose and checks the pre-launch items: the\n" +
			"metrics that must be exported, the benchmark's hygiene (streaming, varied prompt\n" +
			"lengths, open-loop load, warm-up, no cache pollution, no failures), headroom at\n" +
			"the tested load, and the SLOs given with --slo. An item that cannot be checked\n" +
			"never counts as a pass: the headline says NOT VERIFIED, and with --strict it fails\n" +
			"the gate.\n\n" +
			"With --probe it makes the pre-launch run itself: it probes the server at --target as\n" +
			"llmdoctor probe does (the prompt-length sweep, then the load ladder to the capacity at\n" +
			"the SLO), then sends open-loop Poisson arrivals at --launch (default 80% of the\n" +
			"capacity's throughput, at least 200 requests) with the benchmark hygiene built in:\n" +
			"streaming, prompt lengths varied ±50%, distinct prompt starts, a warm-up, and enough\n" +
			"requests for a p99. The items are checked on that run's requests and on the engine's\n" +
			"metrics scraped meanwhile; the probe's limits (--max-requests, --max-rate, …) hold." +
			exitStatus("0  no item failed (some may not have been checked, unless --strict)",
				"1  an item failed, or with --strict could not be checked",
				exitBadUsage),
		Example: "  llmdoctor checklist --bench run.json --slo ttft_p99=2s,itl_p99=100ms\n" +
			"  llmdoctor checklist --prom http://prometheus:9090 --bench run.json --format junit > checklist.xml\n" +
			"  llmdoctor checklist --probe --target http://127.0.0.1:8000 --slo ttft_p99=1s,itl_p99=80ms",
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error { o.setInput(cmd); return o.stdinUses() },
		RunE: func(cmd *cobra.Command, _ []string) error {
			outs, err := o.out.parse(report.ChecklistDoc)
			if err != nil {
				return err
			}
			if err := o.out.slack.prepare(o.in); err != nil {
				return err
			}
			if !probeOn {
				for _, n := range probeNames {
					if cmd.Flags().Changed(n) {
						return usageErr("--%s is for --probe", n)
					}
				}
			}
			all, cfg, err := loadRulesFlag(o.in, o.configPath, nil)
			if err != nil {
				return err
			}
			var src diagnosis.Sources
			if !probeOn {
				if src, err = o.sources(); err != nil {
					return err
				}
			}
			items, err := rules.ChecklistItems()
			if err != nil {
				return &exitError{2, err.Error()}
			}
			// SLOs gate what clients saw when request-level files are given
			// (a probe's requests are).
			slos, err := sloItems(slo, probeOn || len(src.Bench)+len(src.Requests) > 0)
			if err != nil {
				return err
			}
			set, err := rules.NewSet(items.Rules, slos)
			if err != nil {
				return &exitError{2, err.Error()}
			}
			var cl *advisor.Checklist
			if probeOn {
				var done bool
				if cl, done, err = checklistProbe(cmd, o, &pf, slo, all, set, cfg, strict); err != nil || done {
					return err
				}
			} else if cl, err = diagnosis.Checklist(cmd.Context(), src, set, cfg, strict, o.progress(cmd.ErrOrStderr())); err != nil {
				return o.explain(err)
			}
			if err := o.out.write(cmd.OutOrStdout(), outs, func(r report.Renderer, w io.Writer, opt report.Options) error {
				return r.Checklist(w, cl, opt)
			}); err != nil {
				return err
			}
			// A failed post is exit 2 (could not run); a checklist that
			// failed and was posted is still exit 1.
			if err := o.out.postChecklist(cmd.Context(), cmd.ErrOrStderr(), cl); err != nil {
				return err
			}
			// Unverified is no failure: without --strict, what could not be
			// checked does not fail the gate, though the headline says so.
			if cl.Status == advisor.Fail {
				return &exitError{1, ""}
			}
			return nil
		},
	}
	f := c.Flags()
	o.addSourceFlags(f)
	o.out.add(f, report.ChecklistDoc)
	f.StringVar(&o.configPath, "config", "", "config file (min_samples, models, gpus; - for stdin)")
	f.StringVar(&slo, "slo", "", "SLO gates, e.g. ttft_p99=2s,itl_p99=100ms,e2e_p99=30s,tpot_p99=80ms")
	f.BoolVar(&strict, "strict", false, "fail the gate when an item cannot be checked")
	f.BoolVar(&probeOn, "probe", false, "make the pre-launch run: probe the server at --target (as llmdoctor probe), then check its run at --launch")
	// The probe's own flags, refused without --probe.
	pfs := pflag.NewFlagSet("probe", pflag.ContinueOnError)
	pf.add(pfs, true)
	pfs.VisitAll(func(fl *pflag.Flag) {
		probeNames = append(probeNames, fl.Name)
		fl.Usage = "with --probe: " + fl.Usage
		f.AddFlag(fl)
	})
	return c
}

// checklistProbe runs the probe at --target and checks what its
// pre-launch run measured (else the diagnosed load's): done is true when
// only the plan was printed (--dry-run).
func checklistProbe(cmd *cobra.Command, o *diagnoseOpts, pf *probeFlags, slo string, all, set *rules.Set, cfg *rules.Config, strict bool) (_ *advisor.Checklist, done bool, _ error) {
	targets := append(append([]string{}, o.targetURLs...), o.vllmURLs...)
	if len(targets) != 1 {
		return nil, false, usageErr("--probe probes one server: give it with --target URL, once")
	}
	if o.prom.url != "" || len(o.snapshots)+len(o.benchFiles)+len(o.requestFiles) > 0 || o.logFile != "" {
		return nil, false, usageErr("--probe makes its own run: give --target alone, without --prom, --snapshot, --log, --bench or --requests")
	}
	pf.target, pf.dcgm = targets[0], o.dcgmURLs
	pf.headers = append(append([]string{}, o.scrapeHeaders...), o.vllmHeaders...)
	pf.slo = probeSLO(slo)
	po, err := pf.options(o.in)
	if err != nil {
		return nil, false, err
	}
	po.Rules, po.Config = all, cfg
	res, done, err := probeRun(cmd, po, pf)
	if err != nil || done {
		return nil, done, err
	}
	in := res.Input()
	if in == nil {
		why := "no load completed a request"
		if res.Stopped != "" {
			why = res.Stopped
		}
		return nil, false, &exitError{2, "the probe measured nothing to check: " + pf.secrets(po).String(why)}
	}
	cl := in.Checklist(set, cfg, strict)
	v := view.ProbeOf(res)
	notes := []string{"probe: " + strings.ToLower(v.CapacityWord) + ": " + v.Capacity}
	if v.Launch != "" {
		notes = append(notes, "checked on the pre-launch run: "+v.Launch)
	} else {
		notes = append(notes, "checked on "+v.DiagnosedLoad)
	}
	cl.Notes = append(append(notes, res.Notes...), cl.Notes...)
	return cl, false, nil
}

// probeSLO keeps the targets of a checklist's --slo that the probe judges
// a load by (ttft_p99, itl_p99, tpot_p50, e2e_p99); the rest stay gates.
func probeSLO(spec string) string {
	var keep []string
	for _, part := range strings.Split(spec, ",") {
		k, _, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch strings.TrimSpace(k) {
		case "ttft_p99", "itl_p99", "tpot_p50", "e2e_p99":
			keep = append(keep, strings.TrimSpace(part))
		}
	}
	return strings.Join(keep, ",")
}

// sloMetrics maps an SLO name to the evidence it gates: what clients saw
// when request-level sources exist, else the server's histograms.
var sloMetrics = map[string]struct{ client, server, what string }{
	"ttft": {"service.client_ttft", "stage.ttft", "time to first token"},
	"itl":  {"service.client_itl", "stage.itl", "inter-token latency"},
	"tpot": {"service.client_tpot", "stage.tpot", "time per output token"},
	"e2e":  {"service.client_e2e", "service.e2e", "end-to-end latency"},
}

// sloItems turns --slo ttft_p99=2s,... into checklist rules.
func sloItems(spec string, client bool) ([]*rules.Rule, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var out []*rules.Rule
	parts := strings.Split(spec, ",")
	sort.Strings(parts)
	for _, part := range parts {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		metric, q, ok2 := strings.Cut(k, "_")
		m, known := sloMetrics[metric]
		if !ok || !ok2 || !known || (q != "p50" && q != "p90" && q != "p95" && q != "p99") {
			return nil, usageErr("--slo %q: want NAME_PCT=DURATION with NAME ttft, itl, tpot or e2e and PCT p50, p90, p95 or p99", part)
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, usageErr("--slo %q: %q is not a duration like 2s or 100ms", part, v)
		}
		path := m.server
		if client {
			path = m.client
		}
		src := fmt.Sprintf(`id: slo/%s-%s
title: %s %s within %s
layer: service
bottleneck: none
severity: critical
params: {limit: %g}
thresholds: {limit: "the SLO given with --slo"}
when: %s.%s > params.limit
says: "%s %s is {{dur .%s.%s}}, above the SLO of {{dur .params.limit}}."
ok: "%s %s is {{dur .%s.%s}}, within {{dur .params.limit}}."
`, metric, q, q, m.what, d, d.Seconds(), path, q, q, m.what, path, q, q, m.what, path, q)
		r, err := rules.Parse("--slo "+k, []byte(src))
		if err != nil {
			return nil, &exitError{2, err.Error()}
		}
		out = append(out, r)
	}
	return out, nil
}
