package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newDocs writes llmdoctor's own documentation; the rules' pages
// (docs/rules) are go generate's.
func newDocs() *cobra.Command {
	c := &cobra.Command{Use: "docs", Short: "Write llmdoctor's manual pages",
		Long: "Write the documentation of the commands themselves, from the same text as --help.\n" +
			"The rules' pages are docs/rules in the source tree." + exitStatus(exitRan, exitBadUsage),
		Example: "  llmdoctor docs man /usr/local/share/man/man1",
	}
	man := &cobra.Command{Use: "man DIR", Short: "Write one man page per command into DIR (section 1)", Args: exactArgs(1),
		Long: "Write llmdoctor.1 and one page per command (llmdoctor-diagnose.1,\n" +
			"llmdoctor-rules-show.1, …) into DIR, made if missing. SOURCE_DATE_EPOCH, when set,\n" +
			"dates them, for a build that gives the same pages each time." + exitStatus(exitRan, exitBadUsage),
		Example: "  llmdoctor docs man ./man && man -l ./man/llmdoctor-diagnose.1",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return &exitError{2, err.Error()}
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			header := &doc.GenManHeader{Title: "LLMDOCTOR", Section: "1", Source: "llmdoctor " + buildVersion(), Manual: "llmdoctor manual"}
			if err := doc.GenManTree(root, header, args[0]); err != nil {
				return &exitError{2, err.Error()}
			}
			return nil
		}}
	c.AddCommand(man)
	return c
}
