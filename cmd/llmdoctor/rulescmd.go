package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/rules"
)

// choice is a string flag holding one of a fixed set of values: a typo is
// refused when flags are parsed, not taken silently for the default.
type choice struct {
	v       *string
	allowed []string
}

func (c choice) String() string { return *c.v }
func (c choice) Type() string   { return "string" }

func (c choice) Set(s string) error {
	for _, a := range c.allowed {
		if s == a {
			*c.v = s
			return nil
		}
	}
	return fmt.Errorf("want %s or %s", strings.Join(c.allowed[:len(c.allowed)-1], ", "), c.allowed[len(c.allowed)-1])
}

func addRuleFlags(f *pflag.FlagSet, config *string, dirs *[]string) {
	f.StringVar(config, "config", "", "config file (per-rule enabled, severity, params; suppressions; - for stdin); default ./llmdoctor.yaml if present")
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
			return nil, nil, configError(configPath, err)
		}
		if err := validateConfig(configPath, cfg, set); err != nil {
			return nil, nil, err
		}
	}
	return set, cfg, nil
}

// validateConfig checks the config against every rule id a run knows: the
// diagnosis rules in set and the checklist items.
func validateConfig(name string, cfg *rules.Config, set *rules.Set) error {
	items, err := rules.ChecklistItems()
	if err != nil {
		return &exitError{2, err.Error()}
	}
	return configError(name, cfg.Validate(set, items))
}

// configError words a config problem for the command line: the file, the
// key, what is wrong and where to look.
func configError(name string, err error) error {
	if err == nil {
		return nil
	}
	var ce *rules.ConfigError
	if !errors.As(err, &ce) {
		return &exitError{2, err.Error()}
	}
	c := *ce
	if c.File == "" {
		c.File = name
	}
	msg := c.Error()
	if c.Kind == rules.UnknownRule {
		msg += " (see llmdoctor rules list)"
	}
	return &exitError{2, msg}
}

func newRulesCmd() *cobra.Command {
	var dirs []string
	var verbose bool
	c := &cobra.Command{Use: "rules", Short: "List, show, lint and test diagnosis rules",
		Long: "A rule is a YAML file: a condition in expr over the evidence, what it reads, its\n" +
			"thresholds, its message and next steps, and fixtures beside it (docs/writing-rules.md).\n" +
			"--rules DIR adds a directory of your own to the built-in ones." +
			exitStatus(exitRan, "1  rules lint found an error, or rules test a failing case", exitBadUsage),
		Example: "  llmdoctor rules list\n" +
			"  llmdoctor rules show queue/ttft-dominated\n" +
			"  llmdoctor rules lint ./team-rules\n" +
			"  llmdoctor rules test ./team-rules"}
	c.PersistentFlags().StringArrayVar(&dirs, "rules", nil, "directory of extra rule files; repeatable")

	list := &cobra.Command{Use: "list", Short: "List every rule", Args: cobra.NoArgs,
		Long: "List every diagnosis rule and checklist item, built-in and from --rules: its id,\n" +
			"severity, bottleneck and title, one a line under a header. On a terminal titles are\n" +
			"cut to its width; piped, lines are whole." + exitStatus(exitRan, exitBadUsage),
		Example: "  llmdoctor rules list\n  llmdoctor rules list --rules ./team-rules | grep critical",
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, _, err := loadRules("-", dirs)
			if err != nil {
				return err
			}
			items, err := checklistOnly(set)
			if err != nil {
				return err
			}
			// A table with a header, as kubectl lists; on a terminal the
			// titles are cut to its width, piped they are whole.
			out := cmd.OutOrStdout()
			width := 0
			if f, ok := out.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
				if cols, _, err := term.GetSize(f.Fd()); err == nil {
					width = max(cols, minWidth)
				}
			}
			all := append(append([]*rules.Rule{}, set.Rules...), items...)
			idW, bnW := len("RULE"), len("BOTTLENECK")
			for _, r := range all {
				idW, bnW = max(idW, len(r.ID)), max(bnW, len(r.Bottleneck))
			}
			var lines []string
			row := func(id, sev, bn, title string) {
				line := fmt.Sprintf("%-*s  %-8s  %-*s  %s", idW, id, sev, bnW, bn, title)
				if width > 0 && ansi.StringWidth(line) > width {
					line = ansi.Truncate(line, width, "…")
				}
				lines = append(lines, line)
			}
			row("RULE", "SEVERITY", "BOTTLENECK", "TITLE")
			for _, r := range all {
				row(r.ID, r.Sev.String(), r.Bottleneck, r.Title)
			}
			return printf(out, "%s\n", strings.Join(lines, "\n"))
		}}

	showFormat := "text"
	var showWidth widthFlag
	show := &cobra.Command{Use: "show ID", Short: "Show one rule and its documentation", Args: exactArgs(1),
		Long: "Show one rule or checklist item: what it judges and why, when it fires, the evidence\n" +
			"it reads and how to get each piece, its thresholds, next steps and message.\n" +
			"--format markdown prints its page under docs/rules." +
			exitStatus("0  the rule exists", "2  it does not, or the rules cannot be loaded"),
		Example:           "  llmdoctor rules show queue/ttft-dominated\n  llmdoctor rules show check/kv-headroom --format markdown > kv-headroom.md",
		ValidArgsFunction: completeRuleIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			set, _, err := loadRules("-", dirs)
			if err != nil {
				return err
			}
			r, ok := set.Get(args[0])
			if !ok {
				items, err := rules.ChecklistItems()
				if err != nil {
					return &exitError{2, err.Error()}
				}
				if r, ok = items.Get(args[0]); !ok {
					return usageErr("no rule %q (see llmdoctor rules list)", args[0])
				}
			}
			doc := rules.Doc(r)
			if showFormat == "text" {
				doc = rules.DocText(r, showWidth.columns(cmd.OutOrStdout()))
			}
			_, err = io.WriteString(cmd.OutOrStdout(), doc)
			return err
		}}
	show.Flags().Var(choice{&showFormat, []string{"text", "markdown"}}, "format", "text, for a terminal, or markdown, the page under docs/rules")
	show.Flags().Var(&showWidth, "width", fmt.Sprintf("columns of the text: %d or more (default the terminal's width, else 80)", minWidth))

	lint := &cobra.Command{Use: "lint DIR", Short: "Load and compile the rule files in DIR, reporting every error", Args: exactArgs(1),
		Long: "Load and compile every rule file under DIR beside the built-in rules: YAML, the\n" +
			"expressions, the evidence paths they read, params, message templates, ids that\n" +
			"clash. Every error is printed as FILE:LINE: what is wrong. A DIR holding every\n" +
			"built-in rule file (rules/builtin, as you edit them) is linted in their place." +
			exitStatus("0  every rule compiles", "1  a rule does not", exitBadUsage),
		Example: "  llmdoctor rules lint ./team-rules",
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := rules.LoadFS(os.DirFS(args[0]), ".", false)
			if err != nil {
				for _, l := range strings.Split(err.Error(), "\n") {
					note(cmd.ErrOrStderr(), "%s\n", filepath.Join(args[0], l))
				}
				return &exitError{1, "lint failed"}
			}
			b, err := rules.Builtin()
			if err != nil {
				return &exitError{2, err.Error()}
			}
			// DIR holding every built-in rule file is the built-in tree
			// (being edited): it is linted in place of the built-in rules,
			// not against them.
			if holdsBuiltin(rs, b) {
				b = nil
			}
			if _, err := rules.NewSet(b, rs); err != nil {
				return &exitError{1, err.Error()}
			}
			return printf(cmd.OutOrStdout(), "%d rule%s OK\n", len(rs), plural(len(rs)))
		}}

	test := &cobra.Command{Use: "test [DIR]", Short: "Run rule fixtures (fired, quiet, insufficient cases per rule)", Args: maxArgs(1),
		Long: "Run each rule's fixtures: the files in RULE.tests/ beside it, named for the outcome\n" +
			"they expect (fired-*.yaml, quiet-*.yaml, insufficient-*.yaml), each an evidence\n" +
			"set and what the message or bound must say. Without DIR, the built-in rules." +
			exitStatus("0  every case gave its outcome", "1  a case did not", exitBadUsage),
		Example: "  llmdoctor rules test\n  llmdoctor rules test ./team-rules",
		RunE: func(cmd *cobra.Command, args []string) error {
			var results []rules.TestResult
			file := func(r *rules.Rule) string { return r.File }
			if len(args) == 0 {
				set, _, err := loadRules("-", nil)
				if err != nil {
					return err
				}
				results = rules.RunFixtures(set, set.Rules, rules.BuiltinFS, file)
				items, err := rules.ChecklistItems()
				if err != nil {
					return &exitError{2, err.Error()}
				}
				only, _ := checklistOnly(set)
				results = append(results, rules.RunFixtures(items, only, rules.BuiltinFS, file)...)
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
			var w strings.Builder
			failed := 0
			for _, r := range results {
				if r.OK() {
					if verbose {
						fmt.Fprintf(&w, "ok    %s\n", r.File)
					}
					continue
				}
				failed++
				fmt.Fprintf(&w, "FAIL  %s: %s\n", r.File, fixtureFailure(r))
			}
			fmt.Fprintf(&w, "%d passed, %d failed\n", len(results)-failed, failed)
			if err := printf(cmd.OutOrStdout(), "%s", w.String()); err != nil {
				return err
			}
			if failed > 0 {
				return &exitError{1, ""}
			}
			return nil
		}}
	test.Flags().BoolVarP(&verbose, "verbose", "v", false, "also list the cases that pass")

	c.AddCommand(list, show, lint, test)
	return c
}

// checklistOnly returns the checklist items that are not diagnosis rules
// too (the measurement rules are both).
func checklistOnly(set *rules.Set) ([]*rules.Rule, error) {
	items, err := rules.ChecklistItems()
	if err != nil {
		return nil, &exitError{2, err.Error()}
	}
	var out []*rules.Rule
	for _, r := range items.Rules {
		if _, dup := set.Get(r.ID); !dup {
			out = append(out, r)
		}
	}
	return out, nil
}

// fixtureFailure says why a case failed; an insufficient outcome names what
// the rule lacked, since that is usually a field the case forgot.
func fixtureFailure(r rules.TestResult) string {
	if r.Err != "" {
		return r.Err
	}
	msg := fmt.Sprintf("want %s, got %s", r.Want, r.Got)
	if r.Got == rules.Insufficient && len(r.Missing) > 0 {
		var parts []string
		for _, m := range r.Missing {
			parts = append(parts, m.Path+" ("+m.Why+")")
		}
		msg += ": the evidence lacks " + strings.Join(parts, ", ")
	}
	return msg
}

// exactArgs and maxArgs word a wrong argument count as the other usage
// errors are: one line that names the usage and points at --help.
func exactArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr("usage: %s (see %s --help)", c.UseLine(), c.CommandPath())
		}
		return nil
	}
}

func maxArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) > n {
			return usageErr("usage: %s (see %s --help)", c.UseLine(), c.CommandPath())
		}
		return nil
	}
}

// holdsBuiltin says whether rs, read from a directory, hold every built-in
// rule file at its place: the directory is rules/builtin, or rules/.
func holdsBuiltin(rs, builtin []*rules.Rule) bool {
	have := map[string]bool{}
	for _, r := range rs {
		have[r.File] = true
	}
	for _, r := range builtin {
		if !have[r.File] && !have[strings.TrimPrefix(r.File, "builtin/")] {
			return false
		}
	}
	return len(builtin) > 0
}
