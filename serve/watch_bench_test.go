package serve

import (
	"context"
	"github.com/llmdoctor/llmdoctor/sim/simtest"
	"syscall"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/serve/watch/watchtest"
)

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWatchFleet runs the watch over a real Prometheus holding 1000
// identical vLLM replicas of one model: each run diagnoses the fleet,
// renders its Slack message, keeps the run for the report pages and saves
// the state; the first run posts (cold start), later ones compare.
// Reported: this process's CPU seconds per run (CPU-s/op; Prometheus runs
// in a process of its own), which must stay at or under one.
func BenchmarkWatchFleet(b *testing.B) {
	promtest.Need(b)
	set, err := rules.Load()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	tsdb, end := simtest.Fleet(b, dir, 1000)
	url := promtest.Start(b, tsdb, "").URL
	fs := fakeslack.Start()
	defer fs.Close()
	s, err := New(Config{Prom: diagnosis.PromSource{Connection: prom.Connection{URL: url, Timeout: 2 * time.Minute},
		Options: prom.Options{Window: 15 * time.Minute, Step: time.Minute, GroupBy: []string{"model_name"}, Parallel: prom.DefaultParallel}},
		Rules: set, RequestTimeout: 2 * time.Minute, Slack: watchtest.BotDest(fs),
		Watch: &WatchConfig{Enabled: true, Hold: 1}})
	if err != nil {
		b.Fatal(err)
	}
	s.watch.SetPace(0)
	s.now = func() time.Time { return end }
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := s.watch.Once(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	used := cpuTime() - cpu
	b.StopTimer()
	if len(watchtest.Mains(fs)) != 1 {
		b.Fatalf("posts:\n%s", fs.Summary())
	}
	if ts := s.history.all(); len(ts) != 1 {
		b.Fatalf("%d targets kept for the pages", len(ts))
	}
	b.ReportMetric(used.Seconds()/float64(b.N), "CPU-s/op")
}
