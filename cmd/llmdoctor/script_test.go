package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"go.uber.org/goleak"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/sim"
)

// TestMain makes the test binary the llmdoctor command as well: run as
// "llmdoctor" (a script's exec llmdoctor, or execCLI) it runs the command
// through run and exits; otherwise it runs the tests, with the command on
// PATH, stops the shared Prometheus once they are done and fails if a
// goroutine outlived them.
func TestMain(m *testing.M) {
	testscript.Main(afterTests{m}, map[string]func(){"llmdoctor": scriptMain})
}

// afterTests runs the tests, then cleans up what they shared.
type afterTests struct{ m *testing.M }

func (a afterTests) Run() int {
	slackSleep = noSleep
	code := a.m.Run()
	stopSharedProm()
	// Connections the tests left idle in the default client's pool (its
	// keep-alive readers and writers) are not leaks.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "goroutines outlived the tests: %v\n", err)
		code = 1
	}
	return code
}

// exitFileEnv names the file where the llmdoctor command of a script
// leaves its exit code, for the script's status command.
const exitFileEnv = "LLMDOCTOR_TEST_EXIT_FILE"

// scriptMain is main as a script runs it.
func scriptMain() {
	slackSleep = noSleep
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if p := os.Getenv(exitFileEnv); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(code)), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "recording the exit code: %v\n", err)
			os.Exit(3)
		}
	}
	os.Exit(code)
}

// noSleep is the wait between tries of a Slack post in tests: none.
func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

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
		UpdateScripts:       *testkit.Update,
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
				if err := os.Remove(p); err != nil {
					ts.Fatalf("%v", err)
				}
				if got := string(b); got != args[0] {
					ts.Fatalf("llmdoctor exited %s, want %s", got, args[0])
				}
			},
			"fakeslack": fakeSlackCmd,
		},
	})
}

// fakeSlacks are the fake Slacks the scripts started, one per script.
var fakeSlacks sync.Map // *testscript.TestScript → *fakeslack.Server

// fakeSlackCmd is the scripts' fake Slack (internal/testkit/fakeslack), served by
// the test process on a loopback port for the llmdoctor the script runs:
//
//	fakeslack start           serve it, and set $SLACK_WEBHOOK (the incoming
//	                          webhook's URL), $SLACK_HOOK_SECRET (its secret
//	                          path segment), $SLACK_API (the Web API base),
//	                          $SLACK_TOKEN (the bot token it takes),
//	                          $SLACK_CHANNEL (a channel the bot is in) and
//	                          $SLACK_NOT_IN_CHANNEL (one it is not in)
//	fakeslack answer STATUS [BODY [RETRY_AFTER]]
//	                          answer the next request so instead
//	fakeslack received        print the requests received, one a line:
//	                          "#N via [channel=C] [reply to #M] [text]
//	                          blocks=B [attachments=A] → ok" (or the code)
//	fakeslack payload N       print request N's message as JSON
//	fakeslack write webhook|token FILE
//	                          write the webhook's URL or the token to FILE
//
// The fake refuses, as Slack would, a message over Slack's limits or
// without fallback text.
func fakeSlackCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: fakeslack start | answer STATUS [BODY [RETRY_AFTER]] | received | payload N | write webhook|token FILE")
	}
	if args[0] == "start" {
		f := fakeslack.Start()
		if _, dup := fakeSlacks.LoadOrStore(ts, f); dup {
			f.Close()
			ts.Fatalf("fakeslack already started")
		}
		ts.Defer(func() { f.Close(); fakeSlacks.Delete(ts) })
		for k, v := range map[string]string{"SLACK_WEBHOOK": f.WebhookURL(), "SLACK_HOOK_SECRET": fakeslack.HookSecret,
			"SLACK_API": f.APIURL(), "SLACK_TOKEN": fakeslack.Token, "SLACK_CHANNEL": fakeslack.Channel,
			"SLACK_NOT_IN_CHANNEL": fakeslack.NotInChannel} {
			ts.Setenv(k, v)
		}
		return
	}
	v, ok := fakeSlacks.Load(ts)
	if !ok {
		ts.Fatalf("fakeslack start first")
	}
	f := v.(*fakeslack.Server)
	switch args[0] {
	case "answer":
		if len(args) < 2 || len(args) > 4 {
			ts.Fatalf("usage: fakeslack answer STATUS [BODY [RETRY_AFTER]]")
		}
		a := fakeslack.Answer{}
		var err error
		if a.Status, err = strconv.Atoi(args[1]); err != nil {
			ts.Fatalf("fakeslack answer: status %q", args[1])
		}
		if len(args) > 2 {
			a.Body = args[2]
		}
		if len(args) > 3 {
			a.RetryAfter = args[3]
		}
		f.Queue(a)
	case "received":
		if _, err := io.WriteString(ts.Stdout(), f.Summary()); err != nil {
			ts.Fatalf("%v", err)
		}
	case "payload":
		reqs := f.Requests()
		n, err := strconv.Atoi(args[len(args)-1])
		if len(args) != 2 || err != nil || n < 1 || n > len(reqs) {
			ts.Fatalf("fakeslack payload N, N from 1 to %d", len(reqs))
		}
		b, _ := json.MarshalIndent(reqs[n-1].Payload, "", "  ")
		if _, err := ts.Stdout().Write(append(b, '\n')); err != nil {
			ts.Fatalf("%v", err)
		}
	case "write":
		v := map[string]string{"webhook": f.WebhookURL(), "token": fakeslack.Token}
		if len(args) != 3 || v[args[1]] == "" {
			ts.Fatalf("usage: fakeslack write webhook|token FILE")
		}
		if err := os.WriteFile(ts.MkAbs(args[2]), []byte(v[args[1]]+"\n"), 0o600); err != nil {
			ts.Fatalf("%v", err)
		}
	default:
		ts.Fatalf("fakeslack: unknown %q", args[0])
	}
}
