package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestHeavyAndCI(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{{"", false}, {"0", false}, {"false", false}, {"FALSE", false}, {"1", true}, {"true", true}, {"yes", true}} {
		t.Setenv(HeavyEnv, c.v)
		t.Setenv("CI", c.v)
		if Heavy() != c.want || CI() != c.want {
			t.Errorf("%q: Heavy %v, CI %v; want %v", c.v, Heavy(), CI(), c.want)
		}
	}
}

func TestNeedHeavy(t *testing.T) {
	t.Setenv(HeavyEnv, "")
	f := runFake(func(tb testing.TB) { NeedHeavy(tb, "a 1 GiB read") })
	if len(f.skips) != 1 || !strings.Contains(f.skips[0], "a 1 GiB read") || !strings.Contains(f.skips[0], HeavyEnv+"=1") {
		t.Errorf("quick tier: skips %q; want one naming the test and the switch", f.skips)
	}
	t.Setenv(HeavyEnv, "1")
	if f := runFake(func(tb testing.TB) { NeedHeavy(tb, "x") }); len(f.skips)+len(f.fatals) > 0 {
		t.Errorf("heavy tier: skips %q, fatals %q; want the test to run", f.skips, f.fatals)
	}
}

// Need finds the first name on PATH; without any it skips, naming the
// Debian package, and fails in CI.
func TestNeed(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "second")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	t.Setenv("CI", "")
	var got string
	f := runFake(func(tb testing.TB) { got = Need(tb, "pkg", "first", "second") })
	if got != tool || len(f.skips)+len(f.fatals) > 0 {
		t.Errorf("found %q (skips %q, fatals %q); want %s", got, f.skips, f.fatals, tool)
	}
	f = runFake(func(tb testing.TB) { Need(tb, "some-pkg", "absent", "missing") })
	if len(f.skips) != 1 || len(f.fatals) > 0 || f.skips[0] != "absent or missing is not installed (apt-get install some-pkg)" {
		t.Errorf("without the tool: skips %q, fatals %q; want one skip", f.skips, f.fatals)
	}
	t.Setenv("CI", "true")
	f = runFake(func(tb testing.TB) { Need(tb, "some-pkg", "absent") })
	if len(f.fatals) != 1 || len(f.skips) > 0 || !strings.Contains(f.fatals[0], "CI must install it") {
		t.Errorf("in CI: skips %q, fatals %q; want a failure", f.skips, f.fatals)
	}
}

// fakeTB records skips and failures; like the real ones they end the
// goroutine. What it does not implement panics on the nil TB.
type fakeTB struct {
	testing.TB
	mu            sync.Mutex
	fatals, skips []string
}

func runFake(fn func(testing.TB)) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

func (f *fakeTB) Helper()                       {}
func (f *fakeTB) record(to *[]string, s string) { f.mu.Lock(); *to = append(*to, s); f.mu.Unlock() }
func (f *fakeTB) Fatal(a ...any)                { f.record(&f.fatals, fmt.Sprint(a...)); runtime.Goexit() }
func (f *fakeTB) Skip(a ...any)                 { f.record(&f.skips, fmt.Sprint(a...)); runtime.Goexit() }
func (f *fakeTB) Skipf(s string, a ...any)      { f.Skip(fmt.Sprintf(s, a...)) }
func (f *fakeTB) Fatalf(s string, a ...any)     { f.Fatal(fmt.Sprintf(s, a...)) }
