// Package testkit holds what every test of the project shares: the switch
// between the quick tier (the README's go test ./...) and the heavy one
// (LLMDOCTOR_HEAVY=1, always on in .ci/run), and the one way a test asks for
// a tool installed on the machine.
package testkit

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// HeavyEnv is the environment variable that turns the heavy tier on.
const HeavyEnv = "LLMDOCTOR_HEAVY"

// Heavy reports whether the heavy tier runs: the full accuracy sets,
// whatif's validation, 1 GiB files, browser and Alertmanager end to end.
func Heavy() bool {
	v := os.Getenv(HeavyEnv)
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// NeedHeavy skips the test unless the heavy tier runs; what says what it
// does, for the skip message.
func NeedHeavy(t testing.TB, what string) {
	t.Helper()
	if !Heavy() {
		t.Skipf("heavy tier (%s): set %s=1", what, HeavyEnv)
	}
}

// CI reports whether the tests run in CI (the environment variable CI is
// set, as .ci/run and CI services set it), where every tool is installed
// and a missing one is a failure, not a skip.
func CI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// Need returns the path of the first of names found on PATH, or skips the
// test; in CI it fails instead, as CI installs debianPkg.
func Need(t testing.TB, debianPkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s is not installed (apt-get install %s)", strings.Join(names, " or "), debianPkg)
	if CI() {
		t.Fatal(msg + ": CI must install it")
	}
	t.Skip(msg)
	return ""
}

// Update is the one flag that rewrites golden and generated files:
// go test ./... -update.
var Update = flag.Bool("update", false, "rewrite golden and generated files instead of comparing with them")
