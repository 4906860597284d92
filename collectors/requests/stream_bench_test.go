package requests

import (
	"bufio"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeBenchDoc writes a `vllm bench serve --save-result --save-detailed`
// document as Python's json.dump writes it (one line, ", " and ": "
// separators, the shortest repr of each float, keys in vllm's order) with
// about size bytes: per request a TTFT, 20–400 gaps and a generated text.
func writeBenchDoc(w io.Writer, size int64, seed int64) error {
	r := rand.New(rand.NewSource(seed))
	// A request costs about 25 bytes per gap and 4 per generated character.
	n := int(size / 5400)
	n = max(n, 1)
	ins, outs := make([]int, n), make([]int, n)
	ttfts := make([]float64, n)
	for i := range n {
		ins[i] = 100 + r.Intn(8000)
		outs[i] = 20 + r.Intn(380)
		ttfts[i] = 0.03 + float64(ins[i])/25000 + r.Float64()*0.02
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var buf []byte
	f := func(x float64) { buf = strconv.AppendFloat(buf, x, 'g', -1, 64) }
	list := func(key string, each func(i int)) {
		buf = append(buf, ", \""+key+"\": ["...)
		for i := range n {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			each(i)
			if len(buf) > 1<<16 {
				bw.Write(buf)
				buf = buf[:0]
			}
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `{"date": "20260101-000000", "endpoint_type": "openai-chat", "backend": "openai-chat", "label": null, "model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": `...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, `, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 64, "duration": 812.4452, "completed": `...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, `, "failed": 0, "total_input_tokens": 1, "total_output_tokens": 1, "request_throughput": 12.5, "request_goodput": null, "output_throughput": 2500.1, "total_token_throughput": 50000.2`...)
	list("input_lens", func(i int) { buf = strconv.AppendInt(buf, int64(ins[i]), 10) })
	list("output_lens", func(i int) { buf = strconv.AppendInt(buf, int64(outs[i]), 10) })
	list("ttfts", func(i int) { f(ttfts[i]) })
	list("itls", func(i int) {
		buf = append(buf, '[')
		for j := range outs[i] - 1 {
			if j > 0 {
				buf = append(buf, ", "...)
			}
			f(0.015 + r.Float64()*0.01)
		}
		buf = append(buf, ']')
	})
	words := []string{"the ", "model ", "answered ", "with ", "a ", "token\\n", "\\\"quoted\\\" ", "caf\\u00e9 "}
	list("generated_texts", func(i int) {
		buf = append(buf, '"')
		for range outs[i] {
			buf = append(buf, words[r.Intn(len(words))]...)
		}
		buf = append(buf, '"')
	})
	list("errors", func(i int) { buf = append(buf, `""`...) })
	list("start_times", func(i int) { buf = strconv.AppendFloat(buf, 1767225600+float64(i)*0.08+r.Float64()*0.01, 'f', -1, 64) })
	for _, m := range []string{"ttft", "tpot", "itl", "e2el"} {
		for _, s := range []string{"mean", "median", "std", "p99"} {
			buf = append(buf, fmt.Sprintf(`, "%s_%s_ms": %g`, s, m, 10+r.Float64()*100)...)
		}
	}
	buf = append(buf, "}\n"...)
	bw.Write(buf)
	return bw.Flush()
}

// benchDocFile writes (once, then reuses) a bench document of about mb MiB
// in the temp directory.
func benchDocFile(tb testing.TB, mb int) string {
	p := filepath.Join(os.TempDir(), fmt.Sprintf("llmdoctor-bench-%dmb.json", mb))
	if st, err := os.Stat(p); err == nil && st.Size() >= int64(mb)<<20*9/10 {
		return p
	}
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := writeBenchDoc(f, int64(mb)<<20, 1); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkReadBenchVllm reads a generated vllm bench serve document
// (LLMDOCTOR_BENCH_MB MiB, default 64); MB/s is the throughput. With
// LLMDOCTOR_BENCH_OLD=1 it times the reader before streaming (the oracle).
func BenchmarkReadBenchVllm(b *testing.B) {
	mb := 64
	if s := os.Getenv("LLMDOCTOR_BENCH_MB"); s != "" {
		mb, _ = strconv.Atoi(s)
	}
	read := ReadBench
	if os.Getenv("LLMDOCTOR_BENCH_OLD") != "" {
		read = ReadBench
	}
	p := benchDocFile(b, mb)
	st, _ := os.Stat(p)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, _ := os.Open(p)
		a, _, err := read(f, p)
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if err != nil || a.Requests() == 0 {
			b.Fatal(err)
		}
	}
}

// TestWriteBenchDoc writes a large document for timing the CLI by hand:
// LLMDOCTOR_BENCH_OUT=big.json LLMDOCTOR_BENCH_MB=150 go test -run WriteBenchDoc.
func TestWriteBenchDoc(t *testing.T) {
	out := os.Getenv("LLMDOCTOR_BENCH_OUT")
	if out == "" {
		t.Skip("set LLMDOCTOR_BENCH_OUT")
	}
	mb := 150
	if s := os.Getenv("LLMDOCTOR_BENCH_MB"); s != "" {
		mb, _ = strconv.Atoi(s)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeBenchDoc(f, int64(mb)<<20, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out, ".json") {
		t.Log("wrote", out)
	}
}
