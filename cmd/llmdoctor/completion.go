package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmdoctor/llmdoctor/internal/sim"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
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
			"group-by": fixed(groupLabels...),
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
