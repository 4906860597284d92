package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
)

// groupLabels are the labels a target is commonly grouped by, offered when
// --group-by is completed (any label of the source works).
var groupLabels = []string{"model_name", "engine", "instance", "job", "namespace", "pod", "service"}

// addCompletions offers values for the flags and arguments that have a
// known set: shells call back into llmdoctor for them (llmdoctor completion).
func addCompletions(root *cobra.Command) {
	fixed := func(vals ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
			var out []string
			for _, v := range vals {
				if strings.HasPrefix(v, prefix) {
					out = append(out, v)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		doc := report.DiagnosisDoc
		if c.Name() == "checklist" {
			doc = report.ChecklistDoc
		}
		comps := map[string]func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective){
			"format":   fixed(report.Names(doc)...),
			"color":    fixed("auto", "always", "never"),
			"group-by": completeGroupBy,
			"fail-on":  fixed("info", "warning", "critical"),
			"scenario": func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
				var out []string
				if scs, err := sim.Scenarios(); err == nil {
					for _, s := range scs {
						if strings.HasPrefix(s.Name, prefix) {
							out = append(out, s.Name)
						}
					}
				}
				return out, cobra.ShellCompDirectiveDefault // or a scenario file
			},
		}
		if c.Name() != "sim" && c.Name() != "demo" {
			comps["engine"] = fixed("auto", "vllm", "sglang")
		} else {
			comps["engine"] = fixed(sim.Exposures...)
		}
		for name, fn := range comps {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, fn) // each name once per command
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeRuleIDs offers the ids of the built-in rules and checklist items.
func completeRuleIDs(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, load := range []func() (*rules.Set, error){func() (*rules.Set, error) { return rules.Load() }, rules.ChecklistItems} {
		set, err := load()
		if err != nil {
			continue
		}
		for _, r := range set.Rules {
			if strings.HasPrefix(r.ID, prefix) {
				out = append(out, r.ID)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeGroupBy offers the label names of the engines' series when
// --prom is given and answers within a few seconds, else the common ones.
// A comma-separated list is completed at its last name.
func completeGroupBy(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	done, last := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	names := groupLabels
	if live := sourceLabels(cmd); len(live) > 0 {
		names = live
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, last) && !slices.Contains(strings.Split(done, ","), n) {
			out = append(out, done+n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// sourceLabels asks the --prom server of the command line being completed
// for its label names over the day before --end or --at (else now); nil
// when there is none, or it does not answer within three seconds.
func sourceLabels(cmd *cobra.Command) []string {
	f := cmd.Flags()
	url, _ := f.GetString("prom")
	if url == "" {
		return nil
	}
	p := promFlags{url: url, in: newInput(strings.NewReader(""))}
	p.selector, _ = f.GetString("selector")
	p.tokenFile, _ = f.GetString("prom-token-file")
	p.user, _ = f.GetString("prom-user")
	p.ca, _ = f.GetString("prom-ca")
	p.cert, _ = f.GetString("prom-cert")
	p.key, _ = f.GetString("prom-key")
	p.insecure, _ = f.GetBool("prom-insecure")
	p.headers, _ = f.GetStringArray("prom-header")
	p.timeout = 3 * time.Second
	if p.tokenFile == "-" {
		return nil // standard input is the shell's
	}
	conn, err := p.connection()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
	defer cancel()
	// Over the day before the window's end, where the line gives one.
	end := time.Now()
	for _, name := range []string{"end", "at"} {
		if v, _ := f.GetString(name); v != "" {
			if t, err := parseTime("--"+name, v, end); err == nil {
				end = t
			}
		}
	}
	names, err := prom.LabelNames(ctx, conn, p.selector, end.Add(-24*time.Hour), end)
	if err != nil {
		return nil
	}
	return names
}
