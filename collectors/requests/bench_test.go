package requests

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// benchFile writes (once, then reuses) a JSONL of about mb MiB in the temp
// directory: requests of varied length with 4 ITL gaps each.
func benchFile(b *testing.B, mb int) string {
	p := filepath.Join(os.TempDir(), fmt.Sprintf("llmdoctor-requests-%dmb.jsonl", mb))
	if st, err := os.Stat(p); err == nil && st.Size() >= int64(mb)<<20 {
		return p
	}
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewSource(1))
	var n int64
	for i := 0; n < int64(mb)<<20; i++ {
		prompt := 100 + r.Intn(8000)
		ttft := 0.03 + float64(prompt)/25000 + r.Float64()*0.02
		out := 20 + r.Intn(400)
		line := fmt.Sprintf(`{"request_id":"r%d","start_time":%.3f,"prompt_tokens":%d,"output_tokens":%d,"max_tokens":512,"ttft":%.6f,"e2e":%.6f,"itl":[%.5f,%.5f,%.5f,%.5f],"streaming":true,"error":""}`+"\n",
			i, 1767225600+float64(i)*0.01, prompt, out, ttft, ttft+float64(out)*0.02, 0.02+r.Float64()*0.005, 0.02, 0.021, 0.019)
		k, _ := w.WriteString(line)
		n += int64(k)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkReadRequests streams a generated JSONL (LLMDOCTOR_BENCH_MB MiB,
// default 64) into evidence; MB/s is the throughput to compare with cat.
func BenchmarkReadRequests(b *testing.B) {
	mb := 64
	if s := os.Getenv("LLMDOCTOR_BENCH_MB"); s != "" {
		mb, _ = strconv.Atoi(s)
	}
	p := benchFile(b, mb)
	st, _ := os.Stat(p)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, _ := os.Open(p)
		a, _, err := ReadRequests(f, p)
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if err != nil || a.Requests() == 0 {
			b.Fatal(err)
		}
	}
}
