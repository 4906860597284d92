package simtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
	"github.com/llmdoctor/llmdoctor/sim"
)

// FleetWindow writes one queue-bound vLLM instance's 15-minute window as
// OpenMetrics (1-minute samples) and returns its path and the window's end.
func FleetWindow(tb testing.TB, dir string) (om string, end time.Time) {
	tb.Helper()
	sc, err := sim.Load("queue-bound")
	if err != nil {
		tb.Fatal(err)
	}
	sc.Warmup, sc.Duration = time.Minute, 15*time.Minute
	om = filepath.Join(dir, "one.om")
	f, err := os.Create(om)
	if err != nil {
		tb.Fatal(err)
	}
	if err := (sim.Offline{OpenMetrics: f, Step: time.Minute}).Run(sc); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return om, sim.Epoch.Add(sc.Warmup + sc.Duration)
}

// WithInstances copies an OpenMetrics file, giving every series n instance
// labels: a fleet of n replicas with identical traffic. Within each family
// the instances come one after another, so every series stays contiguous
// and in time order, as OpenMetrics requires; the copy is streamed.
func WithInstances(tb testing.TB, src, dst string, n int) {
	tb.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(out, 1<<20)
	var block []string
	flush := func() {
		for k := 0; k < n; k++ {
			for _, l := range block {
				i := strings.IndexByte(l, '{')
				fmt.Fprintf(w, "%s{instance=\"10.0.%d.%d:8000\",%s\n", l[:i], k/250, k%250, l[i+1:])
			}
		}
		block = block[:0]
	}
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "#"):
			flush()
			w.WriteString(l + "\n")
		default:
			block = append(block, l)
		}
	}
	flush()
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}

// Fleet backfills a TSDB under dir with n identical queue-bound instances
// (FleetWindow, WithInstances) and returns its directory and the window's
// end.
func Fleet(tb testing.TB, dir string, n int) (tsdb string, end time.Time) {
	tb.Helper()
	one, end := FleetWindow(tb, dir)
	src := filepath.Join(dir, fmt.Sprintf("fleet%d.om", n))
	WithInstances(tb, one, src, n)
	tsdb = filepath.Join(dir, fmt.Sprintf("tsdb%d", n))
	promtest.Backfill(tb, src, tsdb)
	if err := os.Remove(src); err != nil {
		tb.Fatal(err)
	}
	return tsdb, end
}
