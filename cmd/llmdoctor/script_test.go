package main

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/internal/sim"
	"github.com/llmdoctor/llmdoctor/report"
)

var updateScripts = flag.Bool("update-scripts", false,
	"TestScripts: when a cmp against a file in the archive fails, rewrite that file in testdata/script/*.txtar instead")

// TestMain makes the test binary the llmdoctor command as well: run as
// "llmdoctor" (a script's exec llmdoctor, or execCLI) it runs the command
// through run and exits; otherwise it runs the tests, with the command on
// PATH, and stops the shared Prometheus once they are done.
func TestMain(m *testing.M) {
	testscript.Main(afterTests{m}, map[string]func(){"llmdoctor": scriptMain})
}

// afterTests runs the tests, then cleans up what they shared.
type afterTests struct{ m *testing.M }

func (a afterTests) Run() int {
	code := a.m.Run()
	stopSharedProm()
	return code
}

// exitFileEnv names the file where the llmdoctor command of a script
// leaves its exit code, for the script's status command.
const exitFileEnv = "LLMDOCTOR_TEST_EXIT_FILE"

// scriptMain is main as a script runs it.
func scriptMain() {
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if p := os.Getenv(exitFileEnv); p != "" {
		os.WriteFile(p, []byte(strconv.Itoa(code)), 0o644)
	}
	os.Exit(code)
}

// TestScripts runs the CLI tests in testdata/script: one .txtar per
// behaviour, each the command, its exit code and what it prints. See
// docs/testing.md.
func TestScripts(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *updateScripts,
		Setup: func(env *testscript.Env) error {
			for k, v := range map[string]string{
				// The repository, and the inputs kept in it: the example
				// snapshot windows, benchmark results and server logs.
				"ROOT":     root,
				"EXAMPLES": filepath.Join(root, "examples"),
				"REQUESTS": filepath.Join(root, "collectors", "requests", "testdata"),
				"LOGS":     filepath.Join(root, "collectors", "logs", "testdata"),
				// What the registries hold, as help and errors list them.
				"DIAGNOSIS_FORMATS": strings.Join(report.Names(report.DiagnosisDoc), ", "),
				"CHECKLIST_FORMATS": strings.Join(report.Names(report.ChecklistDoc), ", "),
				"ENGINES":           strings.Join(engine.Names(), " or "),
				"SIM_ENGINES":       strings.Join(sim.Exposures, " or "),
				exitFileEnv:         filepath.Join(env.WorkDir, ".llmdoctor-exit"),
			} {
				env.Setenv(k, v)
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// status CODE: the last exec llmdoctor exited with CODE
			// (exec and ! exec tell only zero from non-zero).
			"status": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: status CODE")
				}
				p := ts.Getenv(exitFileEnv)
				b, err := os.ReadFile(p)
				if err != nil {
					ts.Fatalf("no exit code recorded: status follows exec llmdoctor")
				}
				os.Remove(p)
				if got := string(b); got != args[0] {
					ts.Fatalf("llmdoctor exited %s, want %s", got, args[0])
				}
			},
		},
	})
}
