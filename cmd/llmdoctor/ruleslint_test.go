package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rules lint passes on the built-in rules themselves (linted in place of
// the built-in set) and still catches an id used twice.
func TestRulesLintBuiltinAndDuplicates(t *testing.T) {
	for _, dir := range []string{"../../rules/builtin", "../../rules"} {
		code, out, errOut := runCLI(t, "rules", "lint", dir)
		if code != 0 || !strings.HasSuffix(out, " rules OK\n") {
			t.Errorf("rules lint %s: exit %d, stdout %q, stderr %q", dir, code, out, errOut)
		}
	}

	paced, err := os.ReadFile("../../rules/builtin/client/paced.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A team rule taking a built-in id.
	team := t.TempDir()
	if err := os.WriteFile(filepath.Join(team, "mine.yaml"), paced, 0o644); err != nil {
		t.Fatal(err)
	}
	// The built-in tree with one rule copied under a second name.
	tree := t.TempDir()
	if err := os.CopyFS(tree, os.DirFS("../../rules/builtin")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "client", "paced-again.yaml"), paced, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{team, tree} {
		code, _, errOut := runCLI(t, "rules", "lint", dir)
		if code != 1 || !strings.Contains(errOut, "rule client/paced: duplicate id") {
			t.Errorf("rules lint %s: exit %d, stderr %q; want exit 1 and the duplicate id", dir, code, errOut)
		}
	}
}
