package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/sim"
)

// execCLI runs the llmdoctor command as its own process (testscript.Main
// puts it on PATH, see script_test.go), with stdin as the process's own
// standard input: what --snapshot - reads.
func execCLI(t *testing.T, stdin []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command("llmdoctor", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

func readFixture(t *testing.T, path ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(path...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sourcePaths runs diagnose --format json with stdin as standard input and
// returns the sources' paths.
func sourcePaths(t *testing.T, stdin []byte, args ...string) []string {
	t.Helper()
	code, out, errOut := runCLIIn(t, stdin, append([]string{"diagnose", "--format", "json"}, args...)...)
	return sourcePathsOf(t, code, out, errOut)
}

// sourcePathsOf checks a diagnose --format json run and returns its
// sources' paths.
func sourcePathsOf(t *testing.T, code int, out, errOut string) []string {
	t.Helper()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d struct {
		Sources []struct{ Kind, Path string } `json:"sources"`
		Targets []json.RawMessage             `json:"targets"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Targets) == 0 {
		t.Fatalf("%v: %s", err, out)
	}
	var paths []string
	for _, s := range d.Sources {
		paths = append(paths, s.Kind+":"+s.Path)
	}
	return paths
}

// refusedOneLine checks a run exits 2 with one stderr line containing want.
func refusedOneLine(t *testing.T, want string, args ...string) {
	t.Helper()
	refusedOneLineIn(t, nil, want, args...)
}

// refusedOneLineIn is refusedOneLine with stdin as standard input.
func refusedOneLineIn(t *testing.T, stdin []byte, want string, args ...string) {
	t.Helper()
	code, out, errOut := runCLIIn(t, stdin, args...)
	if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, want) || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", code, out, errOut, want)
	}
}

func TestVersionLine(t *testing.T) {
	for _, c := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.modified", Value: "true"}}}, "v0.3.1 (rev 1a2b3c4, modified)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "1a2b3c4d5e6f"}, {Key: "vcs.modified", Value: "false"}}}, "(devel) (rev 1a2b3c4)"},
		{&debug.BuildInfo{}, "(devel)"},
		{nil, "(unknown)"},
	} {
		if got := version(c.info, c.info != nil); got != c.want {
			t.Errorf("version %+v = %q, want %q", c.info, got, c.want)
		}
	}
}

func init() {
	queueing := func(t *testing.T, f string) []byte { return readFixture(t, "..", "..", "examples", "queueing", f) }
	robustCases = append(robustCases,
		robustCase{Area: "flags", Input: "--version",
			Want: "one line: llmdoctor, the module version and the VCS revision the binary was built from (devel when built from a checkout)",
			Test: func(t *testing.T) {
				code, out, errOut := runCLI(t, "--version")
				if code != 0 || errOut != "" || !strings.HasPrefix(out, "llmdoctor ") || strings.Count(out, "\n") != 1 || out != "llmdoctor "+buildVersion()+"\n" {
					t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
				}
			}},
		robustCase{Area: "flags", Input: "--snapshot - with an exposition piped in",
			Want: "read from standard input as one snapshot (totals since the server started)",
			Test: func(t *testing.T) {
				// A snapshot is read from the process's own standard input.
				code, out, errOut := execCLI(t, queueing(t, "end.prom"), "diagnose", "--format", "json", "--snapshot", "-")
				if p := sourcePathsOf(t, code, out, errOut); len(p) != 1 {
					t.Fatalf("sources %q", p)
				}
			}},
		robustCase{Area: "flags", Input: "--bench - with vllm bench serve JSON piped in",
			Want: `read from standard input; the source is named "stdin"`,
			Test: func(t *testing.T) {
				if p := sourcePaths(t, readFixture(t, benchFile("bench-detailed.json")), "--bench", "-"); len(p) != 1 || p[0] != "bench:stdin" {
					t.Fatalf("sources %q", p)
				}
			}},
		robustCase{Area: "flags", Input: "--requests - with per-request JSONL piped in",
			Want: `read from standard input; the source is named "stdin"`,
			Test: func(t *testing.T) {
				if p := sourcePaths(t, readFixture(t, benchFile("requests.jsonl")), "--requests", "-"); len(p) != 1 || p[0] != "requests:stdin" {
					t.Fatalf("sources %q", p)
				}
			}},
		robustCase{Area: "flags", Input: "--config - with llmdoctor.yaml piped in",
			Want: `the configuration is read from standard input, and its errors name "stdin"`,
			Test: func(t *testing.T) {
				code, out, errOut := runCLIIn(t, []byte("rules:\n  queue/ttft-dominated: {enabled: false}\n"),
					append([]string{"diagnose", "--format", "json", "--config", "-"}, example("queueing")...)...)
				var d diagnosisView
				if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || len(d.Targets) != 1 {
					t.Fatalf("exit %d, %v: %s", code, err, errOut)
				}
				for _, f := range d.Targets[0].Findings {
					if f.Rule == "queue/ttft-dominated" {
						t.Fatal("the rule disabled on stdin fired")
					}
				}
				refusedOneLineIn(t, []byte("rules:\n  queue/nope: {enabled: false}\n"), "stdin:", append([]string{"diagnose", "--config", "-"}, example("queueing")...)...)
			}},
		robustCase{Area: "flags", Input: "--prom-token-file - with the token piped in",
			Want: "the token is read from standard input once and used for every query; it never appears in output",
			Test: func(t *testing.T) {
				p := promFlags{url: "http://prometheus:9090", tokenFile: "-", in: newInput(strings.NewReader("s3cret-token\n"))}
				for i := 0; i < 2; i++ { // read to mask and read to send: the same token
					c, err := p.connection()
					if err != nil || c.BearerToken != "s3cret-token" {
						t.Fatalf("read %d: token %q, %v", i, c.BearerToken, err)
					}
				}
			}},
		robustCase{Area: "flags", Input: "demo --scenario - with a scenario file piped in",
			Want: "the scenario is read from standard input and diagnosed",
			Test: func(t *testing.T) {
				all, err := sim.Scenarios()
				if err != nil {
					t.Fatal(err)
				}
				y, err := all[0].YAML()
				if err != nil {
					t.Fatal(err)
				}
				if code, out, errOut := runCLIIn(t, y, "demo", "--scenario", "-", "--format", "json"); code != 0 || !strings.Contains(out, `"targets"`) {
					t.Fatalf("exit %d: %s %s", code, errOut, out)
				}
			}},
		robustCase{Area: "flags", Input: "two flags reading stdin (--snapshot - --bench -)",
			Want: "refused before anything is read, exit 2, one line naming both flags",
			Test: func(t *testing.T) {
				refusedOneLineIn(t, queueing(t, "end.prom"), "--snapshot and --bench both read standard input", "diagnose", "--snapshot", "-", "--bench", "-")
				refusedOneLine(t, "--config and --requests both read standard input", "checklist", "--config", "-", "--requests", "-")
				refusedOneLine(t, "--config and --scenario both read standard input", "demo", "--config", "-", "--scenario", "-")
			}},
		robustCase{Area: "flags", Input: "--snapshot - given twice",
			Want: "refused, exit 2: standard input can be read only once",
			Test: func(t *testing.T) {
				refusedOneLine(t, "--snapshot - is given 2 times", "diagnose", "--snapshot", "-", "--snapshot", "-")
			}},
		robustCase{Area: "flags", Input: "--prom-ca - (or --prom-cert -, --prom-key -)",
			Want: "refused, exit 2: TLS files are read by path, not from standard input",
			Test: func(t *testing.T) {
				refusedOneLine(t, "--prom-ca does not read standard input", "diagnose", "--prom", "http://127.0.0.1:1", "--prom-ca", "-")
			}},
	)
}
