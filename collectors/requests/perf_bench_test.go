package requests

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/llmdoctor/llmdoctor/sim"
)

// benchJSONScenario is the run docs/performance.md times: queue-bound for 35
// minutes, a ~151 MB `vllm bench serve --save-detailed` result.
const benchJSONScenario = "../../bench/baseline/bench-35m.yaml"

// bigBenchJSON writes (once, then reuses) the scenario's bench JSON in the temp
// directory, as `llmdoctor sim --scenario bench/baseline/bench-35m.yaml
// --bench FILE` does, and returns its path.
func bigBenchJSON(b *testing.B) string {
	p := filepath.Join(os.TempDir(), "llmdoctor-bench-35m.json")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	sc, err := sim.Load(benchJSONScenario)
	if err != nil {
		b.Fatal(err)
	}
	tmp := p + ".part"
	f, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := (sim.Offline{Bench: w}).Run(sc); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkReadBench reads the ~151 MB bench JSON into evidence. Besides
// MB/s and B/op it reports alloc/file, the bytes allocated per byte read: a
// reader whose memory stays flat allocates well under one.
func BenchmarkReadBench(b *testing.B) {
	p := bigBenchJSON(b)
	b.Logf("input: %s", p)
	st, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	var n int
	for i := 0; i < b.N; i++ {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		a, _, err := ReadBench(f, p)
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if err != nil || a.Requests() == 0 {
			b.Fatal(err)
		}
		n = a.Requests()
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(b.N)/float64(st.Size()), "alloc/file")
	b.ReportMetric(float64(n), "requests")
}
