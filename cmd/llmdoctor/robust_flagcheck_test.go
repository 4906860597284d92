package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// refusedWith checks a run exits 2 with one stderr line that holds every
// want and none of unwanted.
func refusedWith(want []string, unwanted []string, args ...string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		code, out, errOut := runCLI(t, args...)
		line := strings.TrimSpace(errOut)
		ok := code == 2 && out == "" && strings.HasPrefix(line, "llmdoctor: ") && !strings.Contains(line, "\n")
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		for _, u := range unwanted {
			ok = ok && !strings.Contains(line, u)
		}
		if !ok {
			t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", code, out, errOut, want)
		}
	}
}

// promAPI serves h as a Prometheus API on loopback for the test.
func promAPI(t *testing.T, h http.HandlerFunc) string {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

func init() {
	const prom = "http://127.0.0.1:1"
	ex := func(name string) []string { return example(name) }
	snap := func(extra ...string) []string {
		return append(append([]string{"diagnose"}, extra...), ex("queueing")...)
	}
	robustCases = append(robustCases,
		robustCase{Area: "flags", Input: "--step -5s",
			Want: "refused before any query, exit 2: --step -5s: want a positive duration such as 30s, or leave it out",
			Test: refusedWith([]string{"--step -5s: want a positive duration"}, nil, "diagnose", "--prom", prom, "--step", "-5s")},
		robustCase{Area: "flags", Input: "--prom-parallel 0",
			Want: "refused before any query, exit 2: --prom-parallel 0: want at least 1 query in flight",
			Test: refusedWith([]string{"--prom-parallel 0: want at least 1 query in flight"}, nil, "diagnose", "--prom", prom, "--prom-parallel", "0")},
		robustCase{Area: "flags", Input: "--prom-timeout 0s",
			Want: "refused, exit 2: --prom-timeout 0s: want a positive duration",
			Test: refusedWith([]string{"--prom-timeout 0s: want a positive duration"}, nil, "diagnose", "--prom", prom, "--prom-timeout", "0s")},
		robustCase{Area: "flags", Input: "--color blue",
			Want: `refused while flags are parsed, exit 2: invalid argument "blue" for "--color" flag: want auto, always or never`,
			Test: refusedWith([]string{`invalid argument "blue" for "--color" flag: want auto, always or never`}, nil, snap("--color", "blue")...)},
		robustCase{Area: "flags", Input: "--window 10s with --prom",
			Want: `refused while flags are parsed, exit 2: invalid argument "10s" for "--window" flag: shorter than 15s, one scrape interval (a shorter window holds one sample)`,
			Test: refusedWith([]string{`invalid argument "10s" for "--window" flag: shorter than 15s, one scrape interval`}, nil,
				"diagnose", "--prom", prom, "--window", "10s")},
		robustCase{Area: "flags", Input: "--window 30d, --window 100000h",
			Want: `refused while flags are parsed, exit 2: invalid argument "30d" for "--window" flag: longer than 7d, the longest window llmdoctor diagnoses (serve's API and slash command say the same)`,
			Test: func(t *testing.T) {
				for _, w := range []string{"30d", "100000h"} {
					refusedWith([]string{`invalid argument "` + w + `" for "--window" flag: longer than 7d, the longest window llmdoctor diagnoses`}, nil,
						"diagnose", "--prom", prom, "--window", w)(t)
				}
			}},
		robustCase{Area: "flags", Input: "--window 10m --step 1h",
			Want: "refused, exit 2: --window 10m is shorter than --step 1h",
			Test: refusedWith([]string{"--window 10m is shorter than --step 1h"}, nil, "diagnose", "--prom", prom, "--window", "10m", "--step", "1h")},
		robustCase{Area: "flags", Input: "--window 0s with --prom",
			Want: `refused while flags are parsed, exit 2: invalid argument "0s" for "--window" flag: shorter than 15s`,
			Test: refusedWith([]string{`invalid argument "0s" for "--window" flag: shorter than 15s`}, nil, "diagnose", "--prom", prom, "--window", "0s")},
		robustCase{Area: "flags", Input: "--prom-cert without --prom-key",
			Want: "refused before any file is read, exit 2: --prom-cert needs --prom-key",
			Test: refusedWith([]string{"--prom-cert needs --prom-key"}, nil, "diagnose", "--prom", prom, "--prom-cert", "client.pem")},
		robustCase{Area: "flags", Input: "--prom-key without --prom-cert",
			Want: "refused before any file is read, exit 2: --prom-key needs --prom-cert",
			Test: refusedWith([]string{"--prom-key needs --prom-cert"}, nil, "diagnose", "--prom", prom, "--prom-key", "client.key")},
		robustCase{Area: "flags", Input: "--prom 127.0.0.1:9090 (no scheme)",
			Want: `refused, exit 2, naming the value given: --prom "127.0.0.1:9090" is not a URL like http://prometheus:9090: add the scheme, --prom http://127.0.0.1:9090`,
			Test: refusedWith([]string{`--prom "127.0.0.1:9090" is not a URL`, "--prom http://127.0.0.1:9090"}, []string{"the --prom URL"},
				"diagnose", "--prom", "127.0.0.1:9090")},
		robustCase{Area: "flags", Input: "--prom ftp://prometheus:9090",
			Want: "refused, exit 2: not a URL like http://prometheus:9090 (only http and https are queried)",
			Test: refusedWith([]string{`--prom "ftp://prometheus:9090" is not a URL like http://prometheus:9090`}, nil, "diagnose", "--prom", "ftp://prometheus:9090")},
		robustCase{Area: "flags", Input: "a Prometheus slower than --prom-timeout",
			Want: "exit 2, one line: the server timed out; raise --prom-timeout (the flag that sets it, not --timeout, which is the scrape timeout) or shorten --window",
			Test: func(t *testing.T) {
				slow := promAPI(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
				refusedWith([]string{"timed out", "raise --prom-timeout (now 200ms) or shorten --window"}, []string{" --timeout"},
					"diagnose", "--prom", slow, "--prom-timeout", "200ms")(t)
			}},
		robustCase{Area: "flags", Input: "a Prometheus without vLLM metrics in the window",
			Want: "exit 2, one line: no SGLang or vLLM metrics between START and END: check --prom, --selector and --end",
			Test: func(t *testing.T) {
				empty := promAPI(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"status":"success","data":[]}`) })
				refusedWith([]string{"has no SGLang or vLLM metrics", "check --prom, --selector and --end"}, nil, "diagnose", "--prom", empty)(t)
			}},
		robustCase{Area: "flags", Input: "--duration 1s --interval 5s with --vllm",
			Want: "refused before the first scrape, exit 2: --duration 1s is shorter than --interval 5s (the window would be one interval, not what was asked)",
			Test: refusedWith([]string{"--duration 1s is shorter than --interval 5s"}, nil, "diagnose", "--vllm", "127.0.0.1:1", "--duration", "1s")},
		robustCase{Area: "flags", Input: "--timeout 0s with --vllm",
			Want: "refused, exit 2: --timeout 0s: want a positive duration (a scrape with no timeout could hang forever)",
			Test: refusedWith([]string{"--timeout 0s: want a positive duration"}, nil, "diagnose", "--vllm", "127.0.0.1:1", "--timeout", "0s")},
		robustCase{Area: "flags", Input: "--snapshot-interval -15m",
			Want: "refused, exit 2: --snapshot-interval -15m: want a positive duration",
			Test: refusedWith([]string{"--snapshot-interval -15m: want a positive duration"}, nil, "diagnose", "--snapshot", "a.prom", "--snapshot", "b.prom", "--snapshot-interval", "-15m")},
	)
}
