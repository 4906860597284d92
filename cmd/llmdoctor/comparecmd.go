package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/compare"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/report"
)

func newCompare() *cobra.Command {
	var (
		format, gates, tolerances string
		strict                    bool
		width                     widthFlag
		color                     = "auto"
		at                        []string
		// Only --prom is read here: the scrape settings stay at their defaults.
		o = &diagnoseOpts{interval: 5 * time.Second, duration: time.Minute, timeout: 10 * time.Second}
	)
	c := &cobra.Command{
		Use:   "compare BEFORE.json AFTER.json | --prom URL --at T1 --at T2",
		Short: "Set two saved diagnoses side by side: whether they saw the same traffic, then what changed",
		Long: "compare reads two diagnoses saved with --format json and, for each target in both,\n" +
			"first sets the request conditions side by side (prompt and output lengths, arrival\n" +
			"rate, streaming, prefix hits) and the settings; when the traffic moved beyond its\n" +
			"tolerance, the verdict is NOT COMPARABLE, not a delta. Otherwise each stage and\n" +
			"latency figure (queue, prefill, decode, TTFT, ITL, E2E) is shown before and after\n" +
			"with its 95% noise band, from each side's request count, spread and histogram\n" +
			"buckets: a change inside it is no change, and a figure whose band is unknown makes\n" +
			"the target INCONCLUSIVE, never NO CHANGE (docs/compare.md says how).\n" +
			"--fail-on-regression gates a CI job on figures that grew past a limit and the noise.\n" +
			"With --prom and two --at, the two windows (--window long, centred on each time)\n" +
			"are diagnosed first, as diagnose --prom --at would." +
			exitStatus("0  every gate was judged and held (without gates: it ran)",
				"1  a gate failed or could not be judged, or with --strict the pair is not comparable",
				exitBadUsage),
		Example: "  llmdoctor compare before.json after.json\n" +
			"  llmdoctor compare before.json after.json --fail-on-regression ttft_p99=10%,itl_p99=5% --format markdown\n" +
			"  llmdoctor compare --prom http://prometheus:9090 --at 2026-11-30T10:00:00Z --at 2026-11-30T16:00:00Z --window 30m",
		Args:    maxArgs(2),
		PreRunE: func(cmd *cobra.Command, _ []string) error { o.setInput(cmd); return nil },
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
			var names [2]string
			switch {
			case o.prom.url != "" && len(at) == 2 && len(args) == 0:
				// Two windows that overlap share requests: their likeness
				// would say nothing.
				now := time.Now()
				t1, err1 := parseTime("--at", at[0], now)
				t2, err2 := parseTime("--at", at[1], now)
				if err1 == nil && err2 == nil && t2.Sub(t1).Abs() < o.prom.window {
					return usageErr("--at %s and --at %s are closer than --window %s: the windows would overlap", at[0], at[1], o.prom.window)
				}
				set, cfg, err := loadRulesFlag(o.in, o.configPath, o.rulesDirs)
				if err != nil {
					return err
				}
				for i, t := range at {
					o.prom.at = t
					src, err := o.sources()
					if err != nil {
						return err
					}
					if sides[i], err = diagnosis.Run(cmd.Context(), src, set, cfg, nil); err != nil {
						return o.explain(err)
					}
					names[i] = "--at " + t
				}
			case o.prom.url == "" && len(at) == 0 && len(args) == 2:
				for i, path := range args {
					if sides[i], err = readDiagnosis(path); err != nil {
						return err
					}
					names[i] = path
				}
			default:
				return usageErr("give two saved diagnoses (BEFORE.json AFTER.json), or --prom URL with two --at times")
			}
			cmp := compare.Compare(sides[0], sides[1], names[0], names[1], compare.Options{Tolerances: tols})
			failed := len(limits) > 0 && cmp.Gate(limits)
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				err = enc.Encode(cmp)
			case "markdown":
				err = report.ComparisonMarkdown(out, cmp)
			case "html":
				err = report.ComparisonHTML(out, cmp, report.Options{})
			case "slack":
				err = report.ComparisonSlack(out, cmp)
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
	f.Var(choice{&format, []string{"text", "json", "markdown", "html", "slack"}}, "format", "text, json (schema llmdoctor.comparison/v1), markdown (for a pull request), html (one self-contained page) or slack (Block Kit messages)")
	format = "text"
	f.StringVar(&gates, "fail-on-regression", "", "exit 1 when a figure grew past its limit and its noise, e.g. ttft_p99=10%,itl_p99=5% (names: "+strings.Join(sortedKeys(compare.Gates()), ", ")+")")
	f.StringVar(&tolerances, "tolerance", "", "how far the traffic may move and still compare, e.g. prompt_p90=30%,prefix_hit=5% (names: "+strings.Join(sortedKeys(compare.Tolerances()), ", ")+"; a share in points)")
	f.BoolVar(&strict, "strict", false, "fail (exit 1) when the runs are not comparable")
	f.Var(choice{&color, []string{"auto", "always", "never"}}, "color", "colour: auto, always or never (NO_COLOR is honoured)")
	f.Var(&width, "width", fmt.Sprintf("columns of the text: %d or more (default the terminal's width, else 80)", minWidth))
	o.prom.add(f)
	hide(f, "end")
	f.Lookup("window").Usage = "with --prom: the length of each window"
	f.StringArrayVar(&at, "at", nil, "with --prom, twice: the moments to compare, each the centre of a --window (now-2h, RFC 3339 or Unix seconds)")
	f.StringSliceVar(&o.groupBy, "group-by", []string{"model_name"}, "labels that make one target")
	addRuleFlags(f, &o.configPath, &o.rulesDirs)
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
		if _, dup := out[k]; dup {
			return nil, usageErr("%s: %s given twice", flag, k)
		}
		pct := strings.HasSuffix(v, "%")
		x, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if pct {
			x /= 100
		}
		// A bare number is a share: 0.1, not 10 (which would be 1000%).
		if err != nil || !(x >= 0) || x > 10 || !pct && x > 1 {
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
		return nil, usageErr("%s: not a diagnosis saved with --format json: %w", path, err)
	}
	if d.Schema != "llmdoctor.diagnosis/v1" {
		return nil, &exitError{2, fmt.Sprintf("%s: schema %q, want llmdoctor.diagnosis/v1 (a diagnosis saved with --format json)", path, d.Schema)}
	}
	return &d, nil
}
