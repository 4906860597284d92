package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/rules"
)

func addOutputFlags(f *pflag.FlagSet, format *string, outputs *[]string, color *string, formats string) {
	f.StringVar(format, "format", "text", "output format on stdout: "+formats)
	f.StringArrayVar(outputs, "output", nil, "also write FORMAT=PATH (e.g. json=diagnosis.json); repeatable")
	f.StringVar(color, "color", "auto", "colour: auto, always or never (NO_COLOR is honoured)")
}

func addRuleFlags(f *pflag.FlagSet, config *string, dirs *[]string) {
	f.StringVar(config, "config", "", "config file (per-rule enabled, severity, params; suppressions); default ./llmdoctor.yaml if present")
	f.StringArrayVar(dirs, "rules", nil, "directory of extra rule files; repeatable")
}

// loadRules loads built-in and user rules and the config, and checks one
// against the other.
func loadRules(configPath string, dirs []string) (*rules.Set, *rules.Config, error) {
	set, err := rules.Load(dirs...)
	if err != nil {
		return nil, nil, &exitError{2, strings.TrimSpace(err.Error())}
	}
	cfg := &rules.Config{}
	if configPath == "-" {
		return set, cfg, nil
	}
	if configPath == "" {
		if _, err := os.Stat("llmdoctor.yaml"); err == nil {
			configPath = "llmdoctor.yaml"
		}
	}
	if configPath != "" {
		cfg, err = rules.LoadConfig(configPath)
		if err != nil {
			return nil, nil, &exitError{2, err.Error()}
		}
		if err := cfg.Validate(set); err != nil {
			return nil, nil, &exitError{2, configPath + ": " + strings.TrimPrefix(err.Error(), "config: ")}
		}
	}
	return set, cfg, nil
}

func newRulesCmd() *cobra.Command {
	var dirs []string
	c := &cobra.Command{Use: "rules", Short: "List, show, lint and test diagnosis rules"}
	c.PersistentFlags().StringArrayVar(&dirs, "rules", nil, "directory of extra rule files; repeatable")

	list := &cobra.Command{Use: "list", Short: "List every rule", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, _, err := loadRules("-", dirs)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, r := range set.Rules {
				fmt.Fprintf(w, "%-32s %-8s %-20s %s\n", r.ID, r.Sev, r.Bottleneck, r.Title)
			}
			return nil
		}}

	show := &cobra.Command{Use: "show ID", Short: "Show one rule and its documentation", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, _, err := loadRules("-", dirs)
			if err != nil {
				return err
			}
			r, ok := set.Get(args[0])
			if !ok {
				return usageErr("no rule %q (see llmdoctor rules list)", args[0])
			}
			_, err = io.WriteString(cmd.OutOrStdout(), rules.Doc(r))
			return err
		}}

	lint := &cobra.Command{Use: "lint DIR", Short: "Load and compile the rule files in DIR, reporting every error", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := rules.LoadFS(os.DirFS(args[0]), ".", false)
			if err != nil {
				for _, l := range strings.Split(err.Error(), "\n") {
					fmt.Fprintln(cmd.ErrOrStderr(), filepath.Join(args[0], l))
				}
				return &exitError{1, "lint failed"}
			}
			b, _ := rules.Builtin()
			if _, err := rules.NewSet(b, rs); err != nil {
				return &exitError{1, err.Error()}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d rule(s) OK\n", len(rs))
			return nil
		}}

	test := &cobra.Command{Use: "test [DIR]", Short: "Run rule fixtures (fired, quiet, insufficient cases per rule)", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var results []rules.TestResult
			if len(args) == 0 {
				set, _, err := loadRules("-", nil)
				if err != nil {
					return err
				}
				results = rules.RunFixtures(set, set.Rules, rules.BuiltinFS, func(r *rules.Rule) string { return r.File })
			} else {
				fsys := os.DirFS(args[0])
				rs, err := rules.LoadFS(fsys, ".", false)
				if err != nil {
					return &exitError{2, err.Error()}
				}
				b, _ := rules.Builtin()
				set, err := rules.NewSet(b, rs)
				if err != nil {
					return &exitError{2, err.Error()}
				}
				results = rules.RunFixtures(set, rs, fsys, func(r *rules.Rule) string { return r.File })
			}
			w := cmd.OutOrStdout()
			failed := 0
			for _, r := range results {
				if r.OK() {
					fmt.Fprintf(w, "ok    %s\n", r.File)
					continue
				}
				failed++
				msg := fmt.Sprintf("want %s, got %s", r.Want, r.Got)
				if r.Err != "" {
					msg = r.Err
				}
				fmt.Fprintf(w, "FAIL  %s: %s\n", r.File, msg)
			}
			fmt.Fprintf(w, "%d passed, %d failed\n", len(results)-failed, failed)
			if failed > 0 {
				return &exitError{1, ""}
			}
			return nil
		}}

	docs := &cobra.Command{Use: "docs DIR", Short: "Write the rule catalogue and one page per rule into DIR", Args: cobra.ExactArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			set, _, err := loadRules("-", nil)
			if err != nil {
				return err
			}
			c, err := rules.ChecklistItems()
			if err != nil {
				return err
			}
			return rules.WriteDocs(set, c, args[0])
		}}
	c.AddCommand(list, show, lint, test, docs)
	return c
}
