package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
)

func newChecklist() *cobra.Command {
	o := &diagnoseOpts{}
	var slo string
	var strict bool
	c := &cobra.Command{
		Use:   "checklist",
		Short: "Pre-launch checklist: pass, fail or cannot-check for each item, with SLO gates",
		Long: "checklist reads the same sources as diagnose and checks the pre-launch items: the\n" +
			"metrics that must be exported, the benchmark's hygiene (streaming, varied prompt\n" +
			"lengths, open-loop load, warm-up, no cache pollution, no failures), headroom at\n" +
			"the tested load, and the SLOs given with --slo. An item that cannot be checked\n" +
			"never counts as a pass: the headline says NOT VERIFIED, and with --strict it fails\n" +
			"the gate." +
			exitStatus("0  no item failed (some may not have been checked, unless --strict)",
				"1  an item failed, or with --strict could not be checked",
				exitBadUsage),
		Example: "  llmdoctor checklist --bench run.json --slo ttft_p99=2s,itl_p99=100ms\n" +
			"  llmdoctor checklist --prom http://prometheus:9090 --bench run.json --format junit > checklist.xml",
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
			_, cfg, err := loadRulesFlag(o.in, o.configPath, nil)
			if err != nil {
				return err
			}
			src, err := o.sources()
			if err != nil {
				return err
			}
			items, err := rules.ChecklistItems()
			if err != nil {
				return &exitError{2, err.Error()}
			}
			// SLOs gate what clients saw when request-level files are given.
			slos, err := sloItems(slo, len(src.Bench)+len(src.Requests) > 0)
			if err != nil {
				return err
			}
			set, err := rules.NewSet(items.Rules, slos)
			if err != nil {
				return &exitError{2, err.Error()}
			}
			cl, err := diagnosis.Checklist(cmd.Context(), src, set, cfg, strict, o.progress(cmd.ErrOrStderr()))
			if err != nil {
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
	return c
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
