package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/compare"
	"github.com/llmdoctor/llmdoctor/report"
)

func newCompare() *cobra.Command {
	var (
		format, gates, tolerances string
		strict                    bool
		width                     widthFlag
		color                     = "auto"
	)
	c := &cobra.Command{
		Use:   "compare BEFORE.json AFTER.json",
		Short: "Set two saved diagnoses side by side: whether they saw the same traffic, then what changed",
		Long: "compare reads two diagnoses saved with --format json and, for each target in both,\n" +
			"first sets the request conditions side by side (prompt and output lengths, arrival\n" +
			"rate, streaming, prefix hits) and the settings; when the traffic moved beyond its\n" +
			"tolerance by as much as the latency did, the verdict is NOT COMPARABLE, not a delta.\n" +
			"Otherwise each stage and latency figure (queue, prefill, decode, TTFT, ITL, E2E) is\n" +
			"shown before and after with its noise band, from each side's sample count and spread:\n" +
			"a change inside it is no change. Histogram bucket widths are not in the band yet.\n" +
			"--fail-on-regression gates a CI job on figures that grew past a limit and the noise." +
			exitStatus("0  no gate failed (a pair not comparable passes, unless --strict)",
				"1  a gate failed, or with --strict the pair is not comparable",
				exitBadUsage),
		Example: "  llmdoctor compare before.json after.json\n" +
			"  llmdoctor compare before.json after.json --fail-on-regression ttft_p99=10%,itl_p99=5% --format markdown",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			limits, err := parseLimits("--fail-on-regression", gates, compare.Gates())
			if err != nil {
				return err
			}
			tols, err := parseLimits("--tolerance", tolerances, compare.Tolerances())
			if err != nil {
				return err
			}
			var sides [2]*advisor.Diagnosis
			for i, path := range args {
				if sides[i], err = readDiagnosis(path); err != nil {
					return err
				}
			}
			cmp := compare.Compare(sides[0], sides[1], args[0], args[1], compare.Options{Tolerances: tols})
			failed := cmp.Gate(limits)
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				err = enc.Encode(cmp)
			case "markdown":
				err = report.ComparisonMarkdown(out, cmp)
			default:
				err = report.ComparisonText(out, cmp, report.Options{Color: color, IsTerminal: isTerminal(out), Width: width.columns(out)})
			}
			if err != nil {
				return err
			}
			notComparable := false
			for _, t := range cmp.Targets {
				notComparable = notComparable || t.Verdict == compare.NotComparable
			}
			switch {
			case failed:
				return &exitError{1, ""}
			case strict && notComparable:
				return &exitError{1, "the runs are not comparable (--strict)"}
			}
			return nil
		},
	}
	f := c.Flags()
	f.Var(choice{&format, []string{"text", "json", "markdown"}}, "format", "text, json (schema llmdoctor.comparison/v1) or markdown (for a pull request)")
	format = "text"
	f.StringVar(&gates, "fail-on-regression", "", "exit 1 when a figure grew past its limit and its noise, e.g. ttft_p99=10%,itl_p99=5% (names: "+strings.Join(sortedKeys(compare.Gates()), ", ")+")")
	f.StringVar(&tolerances, "tolerance", "", "how far the traffic may move and still compare, e.g. prompt_p90=30%,prefix_hit=5% (names: "+strings.Join(sortedKeys(compare.Tolerances()), ", ")+"; a share in points)")
	f.BoolVar(&strict, "strict", false, "fail (exit 1) when the runs are not comparable")
	f.Var(choice{&color, []string{"auto", "always", "never"}}, "color", "colour: auto, always or never (NO_COLOR is honoured)")
	f.Var(&width, "width", fmt.Sprintf("columns of the text: %d or more (default the terminal's width, else 80)", minWidth))
	return c
}

func sortedKeys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// parseLimits reads name=10%,name=0.1 pairs whose names are known's keys.
func parseLimits[T any](flag, s string, known map[string]T) (map[string]float64, error) {
	out := map[string]float64{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if _, isKnown := known[k]; !ok || !isKnown {
			return nil, usageErr("%s %q: want NAME=PERCENT with NAME one of %s", flag, kv, strings.Join(sortedKeys(known), ", "))
		}
		pct := strings.HasSuffix(v, "%")
		x, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if pct {
			x /= 100
		}
		if err != nil || !(x >= 0) || x > 100 {
			return nil, usageErr("%s %s=%s: want a share such as 10%% or 0.1", flag, k, v)
		}
		out[k] = x
	}
	return out, nil
}

// readDiagnosis reads a diagnosis saved with --format json.
func readDiagnosis(path string) (*advisor.Diagnosis, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &exitError{2, err.Error()}
	}
	var d advisor.Diagnosis
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, &exitError{2, fmt.Sprintf("%s: not a diagnosis saved with --format json: %v", path, err)}
	}
	if d.Schema != "llmdoctor.diagnosis/v1" {
		return nil, &exitError{2, fmt.Sprintf("%s: schema %q, want llmdoctor.diagnosis/v1 (a diagnosis saved with --format json)", path, d.Schema)}
	}
	return &d, nil
}
