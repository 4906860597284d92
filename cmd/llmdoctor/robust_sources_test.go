package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/scrape"
	"github.com/llmdoctor/llmdoctor/evidence"
)

// serveText serves one exposition on every path.
func serveText(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// oneLine2 asserts a refusal: exit 2, nothing on stdout, one line on stderr
// containing want.
func oneLine2(t *testing.T, want string, args ...string) {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 with %q", code, out, errOut, want)
	}
}

func init() {
	robustCases = append(robustCases,
		robustCase{Area: "sources", Input: "an endpoint that serves another program's metrics",
			Want: "exit 2, one line: no SGLang or vLLM metrics in the sources; never an empty report that reads as success",
			Test: func(t *testing.T) {
				u := serveText(t, "# TYPE go_goroutines gauge\ngo_goroutines 12\n")
				oneLine2(t, "no SGLang or vLLM metrics", "diagnose", "--vllm", u, "--duration", "0s")
			}},
		robustCase{Area: "sources", Input: "a dcgm-exporter file alone as --snapshot",
			Want: "exit 2, one line: dcgm-exporter metrics only, add the vLLM server's",
			Test: func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "dcgm.prom")
				if err := os.WriteFile(p, []byte("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\",modelName=\"NVIDIA H100 80GB HBM3\"} 97\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				oneLine2(t, "dcgm-exporter metrics only", "diagnose", "--snapshot", p)
			}},
		robustCase{Area: "sources", Input: "--group-by a label no series carries",
			Want: "exit 2, one line naming the labels that are there",
			Test: func(t *testing.T) {
				oneLine2(t, "labels present: engine, finished_reason, model_name", append([]string{"diagnose", "--group-by", "pod"}, example("queueing")...)...)
			}},
		robustCase{Area: "sources", Input: "two --vllm replicas, one of them down",
			Want: "the dead one is marked ✗ with why; the other is diagnosed",
			Test: func(t *testing.T) {
				u := serveText(t, exampleText(t, "queueing", "end.prom"))
				dead := httptest.NewServer(http.NotFoundHandler())
				deadURL := dead.URL
				dead.Close()
				code, out, errOut := runCLI(t, "diagnose", "--color", "never", "--vllm", u, "--vllm", deadURL, "--duration", "0s")
				if code != 0 || !strings.Contains(out, "✗ scrape "+deadURL+"/metrics") || !strings.Contains(out, "connection refused") ||
					!strings.Contains(out, "── model meta-llama/Llama-3.1-8B-Instruct") {
					t.Fatalf("exit %d: %s%s", code, out, errOut)
				}
			}},
		robustCase{Area: "sources", Input: "every --vllm server down",
			Want: "exit 2, one line naming the first failure",
			Test: func(t *testing.T) {
				dead := httptest.NewServer(http.NotFoundHandler())
				u := dead.URL
				dead.Close()
				oneLine2(t, "connection refused", "diagnose", "--vllm", u, "--duration", "0s")
			}},
		robustCase{Area: "sources", Input: "--prom with --step shorter than the scrape interval",
			Want: "each scrape counts once: gauge summaries hold the samples Prometheus has, not one per step",
			Test: func(t *testing.T) {
				fx := backfilledProm(t)
				end := strconv.FormatInt(fx.ends["queue-bound"].Unix(), 10)
				v := diagnoseInto[lintView](t, "--prom", fx.url, "--window", "15m", "--step", "1s", "--end", end)
				// The backfill holds a sample every 15 s: 61 in the window, not 900.
				if n := evidence.TreeNumber(v.Targets[0].Evidence, "service.waiting.samples"); !(n >= 55 && n <= 125) {
					t.Fatalf("waiting samples %v over 15m of 15 s scrapes", n)
				}
			}},
		robustCase{Area: "sources", Input: "scraping interrupted (Ctrl-C) during --duration",
			Want: "what was collected is diagnosed, with a note saying the scraping stopped early",
			Test: func(t *testing.T) {
				// Interrupted once the third scrape has been served.
				body := exampleText(t, "queueing", "end.prom")
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var served atomic.Int32
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/plain; version=0.0.4")
					w.Write([]byte(body))
					if served.Add(1) == 3 {
						cancel()
					}
				}))
				defer srv.Close()
				s := &scrape.Scraper{URLs: []string{srv.URL + "/metrics"}, Interval: 20 * time.Millisecond, Duration: time.Hour}
				w, err := s.Run(ctx)
				if err != nil || w.Points < 2 || !strings.Contains(strings.Join(w.Notes, "\n"), "the diagnosis covers what was collected") {
					t.Fatalf("err %v, %d points, notes %v", err, w.Points, w.Notes)
				}
			}},
	)
}
