package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/rules"
)

// explain is kubectl explain for the evidence model: what a field is, in
// which unit, how a deployment gives it (per engine where engines differ)
// and which rules read it; for a layer or a distribution, its fields.
func newExplain() *cobra.Command {
	var dirs []string
	cmd := &cobra.Command{
		Use:   "explain FIELD",
		Short: "Say what an evidence field is: its unit, its meaning, how to obtain it and which rules read it",
		Long: `Say what an evidence field is: its unit, its meaning, how a deployment gives
it (what each serving engine exports for it, where engines differ) and which
rules read it. FIELD is a path as rules, findings and gaps name it
(stage.queue.mean); a layer (stage) or a distribution (stage.queue) lists the
fields under it.` + exitStatus("0  the field exists",
			"2  it does not (the nearest names are listed), or the rules cannot be loaded"),
		Example: `  llmdoctor explain stage.queue.mean
  llmdoctor explain stage.queue
  llmdoctor explain resource
  llmdoctor explain cond.kv_capacity_tokens --rules ./team-rules`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("explain takes one FIELD (e.g. stage.queue.mean), got %d arguments", len(args))
			}
			return nil
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return fieldNames(toComplete), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			set, err := rules.Load(dirs...)
			if err != nil {
				return &exitError{2, strings.TrimSpace(err.Error())}
			}
			return explain(cmd.OutOrStdout(), args[0], set)
		},
	}
	cmd.Flags().StringArrayVar(&dirs, "rules", nil, "directory of extra rule files whose reads to count; repeatable")
	return cmd
}

// fieldNames are the paths, distributions and layers that start with prefix.
func fieldNames(prefix string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range evidence.Fields() {
		for _, p := range []string{f.Layer, f.Dist, f.Series, f.Path} {
			if p != "" && !seen[p] && strings.HasPrefix(p, prefix) {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// explain writes what path is to out, or refuses a path that is no field.
func explain(out io.Writer, path string, set *rules.Set) error {
	var w strings.Builder
	readers, steps := map[string][]string{}, map[string][]string{}
	for _, r := range set.Rules {
		for _, p := range r.Reads() {
			readers[p] = append(readers[p], r.ID)
		}
		for _, p := range r.StepReads() {
			steps[p] = append(steps[p], r.ID)
		}
	}
	if f, ok := evidence.Lookup(path); ok {
		explainField(&w, f, readers[f.Path])
		if by := steps[f.Path]; len(by) > 0 {
			sort.Strings(by)
			fmt.Fprintf(&w, "STEPS    the next steps of %d rule%s fit it: %s\n", len(by), plural(len(by)), strings.Join(by, ", "))
		}
		return printf(out, "%s", w.String())
	}
	var under []evidence.Field
	for _, f := range evidence.Fields() {
		if strings.HasPrefix(f.Path, path+".") {
			under = append(under, f)
		}
	}
	if len(under) == 0 {
		return usageErr("no evidence field %q%s", path, nearest(path))
	}
	fmt.Fprintf(&w, "FIELD    %s (%d fields)\n", path, len(under))
	if mean, ok := evidence.Lookup(path + ".mean"); ok && (mean.Dist == path || mean.Series == path) {
		kind := "distribution over the window (count, mean, quantiles)"
		if mean.Series == path {
			kind = "gauge sampled over the window (mean, min, max, last, samples)"
		}
		fmt.Fprintf(&w, "KIND     %s\nUNIT     %s\nMEANING  %s\nOBTAIN   %s\n", kind, mean.Unit,
			strings.TrimPrefix(mean.Meaning, "mean "), obtain(path, mean.How))
	}
	fmt.Fprintln(&w, "\nFIELDS")
	for _, f := range under {
		n := len(readers[f.Path])
		read := ""
		if n > 0 {
			read = fmt.Sprintf(" · read by %d rule%s", n, plural(n))
		}
		fmt.Fprintf(&w, "  %-42s %-8s %s%s\n", f.Path, f.Unit, f.Meaning, read)
	}
	return printf(out, "%s", w.String())
}

func explainField(w *strings.Builder, f evidence.Field, readBy []string) {
	fmt.Fprintf(w, "FIELD    %s\nLAYER    %s\nUNIT     %s\nMEANING  %s\n", f.Path, f.Layer, f.Unit, f.Meaning)
	if f.Dist != "" {
		fmt.Fprintf(w, "PART OF  the distribution %s: rules judge it only with enough observations\n", f.Dist)
	}
	if f.Series != "" {
		fmt.Fprintf(w, "PART OF  the gauge %s: rules judge it only with enough samples\n", f.Series)
	}
	fmt.Fprintf(w, "OBTAIN   %s\n", obtain(f.Path, f.How))
	if len(readBy) == 0 {
		fmt.Fprintln(w, "READ BY  no rule")
		return
	}
	sort.Strings(readBy)
	fmt.Fprintf(w, "READ BY  %d rule%s: %s\n", len(readBy), plural(len(readBy)), strings.Join(readBy, ", "))
}

// obtain is how a deployment gives path: the catalogue's words, and each
// engine's own where it says more.
func obtain(path, how string) string {
	var out []string
	if how != "" {
		out = append(out, how)
	}
	for _, e := range engine.Engines() {
		ev := &evidence.Evidence{Engine: e.Vocabulary()}
		if h := ev.How(path); h != "" && h != how && !slices.Contains(out, e.Title+": "+h) {
			out = append(out, e.Title+": "+h)
		}
	}
	if len(out) == 0 {
		return "derived by llmdoctor from other fields"
	}
	return strings.Join(out, "\n         ")
}

// nearest suggests paths like the one asked for: those containing its last
// part, else those sharing its layer.
func nearest(path string) string {
	last := path[strings.LastIndex(path, ".")+1:]
	var like []string
	for _, f := range evidence.Fields() {
		if last != "" && strings.Contains(f.Path, last) {
			like = append(like, f.Path)
		}
	}
	if len(like) == 0 {
		return "; the layers are " + strings.Join(rules.Layers, ", ") + " (llmdoctor explain LAYER lists their fields)"
	}
	if len(like) > 5 {
		like = append(like[:5], "…")
	}
	return "; did you mean " + strings.Join(like, ", ") + "?"
}
