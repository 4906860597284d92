package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// Every command says what it does, shows how it is used and what its exit
// codes mean; every example it shows parses: its command exists, and its
// flags and arguments are ones the command takes.
func TestHelpOfEveryCommand(t *testing.T) {
	root := newRoot()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || c.HasParent() && c.Parent().Name() == "completion" {
			return
		}
		path := c.CommandPath()
		if !strings.Contains(c.Long, "\n\nExit status:\n  0  ") {
			t.Errorf("%s: long help has no exit status section", path)
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no examples", path)
		}
		for _, line := range strings.Split(c.Long, "\n") {
			if len([]rune(line)) > 90 {
				t.Errorf("%s: long help line of %d characters: %q", path, len([]rune(line)), line)
			}
		}
		for _, ex := range exampleLines(c.Example) {
			args := words(ex)
			if len(args) == 0 || args[0] != "llmdoctor" {
				t.Errorf("%s: example %q does not run llmdoctor", path, ex)
				continue
			}
			found, rest, err := newRoot().Find(args[1:])
			if err != nil {
				t.Errorf("%s: example %q: %v", path, ex, err)
				continue
			}
			if p := found.CommandPath(); p != path && !strings.HasPrefix(p, path+" ") {
				t.Errorf("%s: example %q runs %s", path, ex, p)
				continue
			}
			if err := found.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", path, ex, err)
				continue
			}
			if err := found.ValidateArgs(found.Flags().Args()); err != nil {
				t.Errorf("%s: example %q: %v", path, ex, err)
			}
		}
	}
	walk(root)
}

// exampleLines are an Example's command lines: continuation lines joined, an
// environment assignment before the command, a redirection or a pipe
// after it dropped.
func exampleLines(s string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	for i, ex := range out {
		for _, cut := range []string{" > ", " | ", " && "} {
			if j := strings.Index(ex, cut); j >= 0 {
				ex = ex[:j]
			}
		}
		f := strings.Fields(ex)
		for len(f) > 0 && strings.Contains(f[0], "=") && !strings.HasPrefix(f[0], "-") {
			f = f[1:]
		}
		out[i] = strings.Join(f, " ")
	}
	return out
}

// words splits a command line as a shell does for the quoting examples
// use: spaces, and single quotes around a word.
func words(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, in := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// docs man writes a page for every command, and groff reads each without
// a warning.
func TestManPages(t *testing.T) {
	groff := testkit.Need(t, "groff-base", "groff")
	dir := t.TempDir()
	if code, _, errOut := runCLI(t, "docs", "man", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		page := filepath.Join(dir, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		// No preprocessor (-k): a page in ASCII, every other character
		// escaped, reads without a warning in any locale.
		out, err := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", page).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("%s: %v %s", page, err, out)
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		title := strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-"))
		if !strings.Contains(string(b), "\n.TH \""+title+"\" \"1\" ") {
			t.Errorf("%s is not titled %s, section 1:\n%.200s", page, title, b)
		}
		if c.Long != "" {
			b, _ := os.ReadFile(page)
			if !strings.Contains(string(b), "Exit status:") && !strings.HasPrefix(c.CommandPath(), "llmdoctor completion") {
				t.Errorf("%s has no exit status", page)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
}
