// Command llmdoctor tells where an LLM inference server's latency goes and
// what to change first.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/llmdoctor/llmdoctor/internal/redact"
)

// exitError carries an exit code and a one-line message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usageErr is a bad command line: exit 2 with the message. An error
// formatted with %w stays in the chain, for errors.Is and errors.As.
func usageErr(format string, a ...any) error {
	err := fmt.Errorf(format, a...)
	return &usageError{exitError{2, err.Error()}, err}
}

// usageError is an exitError that keeps its cause.
type usageError struct {
	exitError
	err error
}

func (e *usageError) Unwrap() error { return e.err }

// As finds the exitError in it, as errors.As asks.
func (e *usageError) As(target any) bool {
	if p, ok := target.(**exitError); ok {
		*p = &e.exitError
		return true
	}
	return false
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs one command line with its own standard input, output and error,
// and returns the exit code. It touches no state another run shares, so
// runs may go in parallel: every command reads stdin, writes and decides
// whether it writes to a terminal through the command's own streams (an
// *os.File that is a terminal is one; any other writer is not).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// One context for the command: Ctrl-C (or SIGTERM, as a container
	// runtime or timeout sends) cancels it, so that a live scrape
	// stops and diagnoses what it gathered and a Prometheus query stops.
	// After the first Ctrl-C the default handling is back, so a second one
	// ends the process whatever it is doing.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }()
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	// Every error line passes the redaction: a URL in it shows no
	// credentials, whichever command or flag it came from.
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			note(stderr, "llmdoctor: %s\n", redact.String(ee.msg))
		}
		return ee.code
	}
	note(stderr, "llmdoctor: %s\n", redact.String(err.Error()))
	return 2
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "llmdoctor",
		Short: "Where your LLM server's latency goes, and what to change first",
		Long: "llmdoctor reads what a vLLM deployment already exposes — Prometheus, /metrics, DCGM\n" +
			"GPU metrics, server logs, benchmark results — builds one evidence model, runs\n" +
			"declarative rules over it and reports the likely bottleneck, the numbers that prove\n" +
			"it, and the next step, cheapest first. Start with: llmdoctor demo" +
			exitStatus("0  it ran (findings alone never fail a run)",
				"1  a gate failed: diagnose --fail-on, a checklist item, rules lint or rules test",
				exitBadUsage),
		Example: "  llmdoctor demo\n" +
			"  llmdoctor diagnose --prom http://prometheus:9090 --window 15m\n" +
			"  llmdoctor checklist --bench run.json --slo ttft_p99=2s\n" +
			"  llmdoctor explain stage.queue.mean",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = buildVersion()
	root.SetVersionTemplate("llmdoctor {{.Version}}\n")
	// Declared here, not left to cobra at run time, so the docs checks see it.
	root.Flags().BoolP("version", "v", false, "print the module version and VCS revision")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%w (see %s --help)", err, c.CommandPath())
	})
	root.AddCommand(newDemo(), newDiagnose(), newChecklist(), newCompare(), newWhatif(), newSim(), newRulesCmd(), newServe(), newProbe(), newExplain(), newConfig(), newDocs())
	addCompletions(root)
	return root
}
