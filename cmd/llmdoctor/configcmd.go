package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llmdoctor/llmdoctor/examples"
	"github.com/llmdoctor/llmdoctor/rules"
)

// newConfig writes and checks llmdoctor.yaml.
func newConfig() *cobra.Command {
	c := &cobra.Command{Use: "config", Short: "Write a commented llmdoctor.yaml, or check one",
		Long: "llmdoctor.yaml holds the thresholds every rule shares, facts metrics do not carry\n" +
			"(model sizes, GPU bandwidths), per-rule overrides and suppressions. It is read from\n" +
			"the working directory when present, or given with --config." + exitStatus(exitRan, exitBadUsage),
		Example: "  llmdoctor config init\n  llmdoctor config check ./llmdoctor.yaml",
	}
	var force bool
	initCmd := &cobra.Command{Use: "init [PATH]", Short: "Write llmdoctor.yaml with every setting at its default, explained", Args: maxArgs(1),
		Long: "Write a llmdoctor.yaml (PATH, default ./llmdoctor.yaml; - for stdout) that holds\n" +
			"every setting at its default, each explained, with an example of each commented\n" +
			"out. As written it changes nothing. An existing file is kept unless --force." +
			exitStatus("0  it wrote the file", exitBadUsage),
		Example: "  llmdoctor config init\n  llmdoctor config init - | less",
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "llmdoctor.yaml"
			if len(args) == 1 {
				path = args[0]
			}
			if path == "-" {
				_, err := cmd.OutOrStdout().Write(examples.Config)
				return err
			}
			switch fi, err := os.Stat(path); {
			case err == nil && fi.IsDir():
				return &exitError{2, path + " is a directory: give a file's path, e.g. " + filepath.Join(path, "llmdoctor.yaml")}
			case err == nil && !force:
				return &exitError{2, path + " exists: keep it, give another PATH, or --force to replace it"}
			case err != nil && !errors.Is(err, fs.ErrNotExist):
				return &exitError{2, err.Error()}
			}
			// Written beside it, then renamed: a failed write leaves the
			// old file as it was.
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, examples.Config, 0o644); err != nil {
				_ = os.Remove(tmp) // the write's error is the one to tell
				return &exitError{2, err.Error()}
			}
			if err := os.Rename(tmp, path); err != nil {
				_ = os.Remove(tmp) // the rename's error is the one to tell
				return &exitError{2, err.Error()}
			}
			note(cmd.ErrOrStderr(), "wrote %s: every setting at its default; llmdoctor reads it from this directory\n", path)
			return nil
		}}
	initCmd.Flags().BoolVar(&force, "force", false, "replace an existing file")
	var dirs []string
	check := &cobra.Command{Use: "check [PATH]", Short: "Check llmdoctor.yaml against the rules, as a run would", Args: maxArgs(1),
		Long: "Read a llmdoctor.yaml (PATH, default ./llmdoctor.yaml; - for stdin) and check it\n" +
			"as diagnose would before reading anything: its keys, its numbers and their units,\n" +
			"that every rule id and param exists (--rules adds your rule directories), and that every\n" +
			"suppression has a reason." + exitStatus("0  the file is valid", "2  it is not, or cannot be read: one line says where"),
		Example: "  llmdoctor config check\n  llmdoctor config check deploy/llmdoctor.yaml --rules ./team-rules",
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "llmdoctor.yaml"
			if len(args) == 1 {
				path = args[0]
			}
			set, err := rules.Load(dirs...)
			if err != nil {
				return &exitError{2, err.Error()}
			}
			var cfg *rules.Config
			if path == "-" {
				data, rerr := io.ReadAll(cmd.InOrStdin())
				if rerr != nil {
					return &exitError{2, rerr.Error()}
				}
				cfg, err = rules.ParseConfig("-", data)
			} else {
				cfg, err = rules.LoadConfig(path)
			}
			if err != nil {
				return configError(path, err)
			}
			if err := validateConfig(path, cfg, set); err != nil {
				return err
			}
			if err := printf(cmd.OutOrStdout(), "%s: OK (%s, %s)\n", path, count(len(cfg.Rules), "rule override"), count(len(cfg.Suppress), "suppression")); err != nil {
				return err
			}
			for _, s := range cfg.Expired() {
				if err := printf(cmd.OutOrStdout(), "%s: the suppression of %s expired on %s\n", path, s.Rule, s.Until); err != nil {
					return err
				}
			}
			return nil
		}}
	check.Flags().StringArrayVar(&dirs, "rules", nil, "directory of extra rule files; repeatable")
	c.AddCommand(initCmd, check)
	return c
}

// count is "1 thing" or "n things".
func count(n int, thing string) string { return fmt.Sprintf("%d %s%s", n, thing, plural(n)) }
