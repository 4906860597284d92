package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
			if err := writeManPages(root, args[0]); err != nil {
				return &exitError{2, err.Error()}
			}
			return nil
		}}
	c.AddCommand(man)
	return c
}

// writeManPages writes the page of c and of every command under it into
// dir: each titled by its command (LLMDOCTOR-DIAGNOSE), section 1, and in
// ASCII, every other character escaped for groff (\[u2014]), so that groff
// reads it without a warning whatever the locale.
func writeManPages(c *cobra.Command, dir string) error {
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := writeManPages(sub, dir); err != nil {
			return err
		}
	}
	// No title: cobra titles the page by its command path, upper case.
	header := &doc.GenManHeader{Section: "1", Source: "llmdoctor " + buildVersion(), Manual: "llmdoctor manual"}
	var b bytes.Buffer
	if err := doc.GenMan(c, header, &b); err != nil {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	}
	name := filepath.Join(dir, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
	return os.WriteFile(name, []byte(groffASCII(b.String())), 0o644)
}

// groffASCII escapes every character outside ASCII as groff's \[uXXXX].
func groffASCII(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, "\\[u%04X]", r)
	}
	return b.String()
}
