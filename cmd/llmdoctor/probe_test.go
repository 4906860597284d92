package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/probe"
)

// A small probe of the simulator at ten times real time, read from the
// requests alone (the simulator's clock is not the client's).
func probeArgs(url string, extra ...string) []string {
	return append([]string{"probe", "--target", url, "--concurrency", "1,2,4", "--lengths", "128,512",
		"--repeats", "1", "--warmup", "1", "--step-requests", "8", "--output-tokens", "16", "--max-rate", "1000",
		"--seed", "1", "--no-metrics"}, extra...)
}

type probeJSON struct {
	Schema  string `json:"schema"`
	Sent    int    `json:"requests_sent"`
	Stopped string `json:"stopped"`
	Sweep   struct {
		Samples []json.RawMessage `json:"requests"`
	} `json:"sweep"`
	Steps []struct {
		Load float64 `json:"load"`
		Sent int     `json:"sent"`
	} `json:"steps"`
	Capacity *struct {
		Load float64 `json:"load"`
	} `json:"capacity"`
}

func readProbeJSON(t *testing.T, s string) probeJSON {
	t.Helper()
	var p probeJSON
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatalf("%v\n%.600s", err, s)
	}
	if p.Schema != "llmdoctor.probe/v1" || p.Steps == nil || p.Sweep.Samples == nil {
		t.Fatalf("schema %q, steps %v, sweep %v: want llmdoctor.probe/v1 with arrays, never null\n%.600s", p.Schema, p.Steps, p.Sweep.Samples, s)
	}
	return p
}

// The probe end to end through the command: a ladder, a capacity, and the
// JSON's request count the server's own.
func TestProbeCommandEndToEnd(t *testing.T) {
	t.Parallel()
	url, sent := serveSimAPI(t, "queue-bound", 10)
	code, out, stderr := runCLI(t, probeArgs(url, "--format", "json", "--slo", "ttft_p99=1s,itl_p99=500ms")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p := readProbeJSON(t, out)
	if p.Sent != int(sent.Load()) || p.Sent == 0 {
		t.Errorf("JSON says %d requests sent, the server had %d", p.Sent, sent.Load())
	}
	if len(p.Steps) < 3 || p.Capacity == nil || len(p.Sweep.Samples) != 2 {
		t.Errorf("%d loads, capacity %v, %d sweep requests: want the ladder 1, 2, 4, a capacity and two sweep requests\n%.900s",
			len(p.Steps), p.Capacity, len(p.Sweep.Samples), out)
	}
}

// --dry-run prints the plan and its request count and sends nothing, not
// even the model list.
func TestProbeDryRunSendsNothing(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	code, out, stderr := runCLI(t, "probe", "--target", srv.URL, "--dry-run", "--max-requests", "57")
	if code != 0 || hits.Load() != 0 {
		t.Fatalf("exit %d, %d requests reached the server: %s", code, hits.Load(), stderr)
	}
	if !strings.Contains(out, "llmdoctor probe plan") || !strings.Contains(out, "57 requests at most") {
		t.Errorf("the plan does not say what it would send:\n%s", out)
	}
}

// However small or large the bound, the server never sees more requests
// than --max-requests, and the report counts exactly what it saw.
func TestProbeCommandKeepsTheRequestBound(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{1, 7, 40} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			t.Parallel()
			url, sent := serveSimAPI(t, "queue-bound", 10)
			code, out, stderr := runCLI(t, probeArgs(url, "--max-requests", fmt.Sprint(limit), "--format", "json")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			p := readProbeJSON(t, out)
			if n := int(sent.Load()); n > limit || p.Sent != n {
				t.Errorf("limit %d: the server had %d requests, the JSON says %d", limit, n, p.Sent)
			}
			// The plan asks for 35 requests or more: a smaller bound ends it.
			if limit < 35 && p.Stopped != probe.StopRequests || p.Stopped == "" && p.Sent >= limit {
				t.Errorf("limit %d: stopped %q after %d requests", limit, p.Stopped, p.Sent)
			}
		})
	}
}

// keyServer is the simulator behind a handler that records the
// credentials each request carried.
type keyServer struct {
	url  string
	mu   sync.Mutex
	seen map[string]int
}

func serveSimWithKeys(t *testing.T) *keyServer {
	t.Helper()
	inner, _ := serveSimAPI(t, "healthy", 10)
	k := &keyServer{seen: map[string]int{}}
	proxy := func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.seen["authorization "+r.Header.Get("Authorization")]++
		k.seen["x-team-token "+r.Header.Get("X-Team-Token")]++
		k.mu.Unlock()
		req, err := http.NewRequestWithContext(r.Context(), r.Method, inner+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }() // read only
		for key, v := range resp.Header {
			w.Header()[key] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n]) // the client went away: the read ends too
				if f, ok := w.(http.Flusher); ok {
					f.Flush()
				}
			}
			if err != nil {
				return
			}
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(proxy))
	t.Cleanup(srv.Close)
	k.url = srv.URL
	return k
}

func (k *keyServer) received(t *testing.T, what string) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen[what] == 0 {
		t.Errorf("the server never received %q; it saw %v", what, k.seen)
	}
}

// The API key, a header's value and a password in the URL reach the server
// and appear in no output: any format on stdout, every --output file,
// stderr, the dry run's plan.
func TestProbeNeverShowsTheAPIKey(t *testing.T) {
	t.Parallel()
	const key, token, password = "sk-probe-SECRET-1234", "tok-SECRET-5678", "pw-SECRET-9012"
	k := serveSimWithKeys(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	var outputs []string
	for _, f := range []string{"text", "json", "html", "slack"} {
		files[f] = filepath.Join(dir, "probe."+f)
		outputs = append(outputs, "--output", f+"="+files[f])
	}
	withPassword := strings.Replace(k.url, "http://", "http://ops:"+password+"@", 1)
	check := func(what, s string) {
		t.Helper()
		for _, secret := range []string{key, token, password} {
			if strings.Contains(s, secret) {
				t.Errorf("%s shows %q:\n%.400s", what, secret, s[max(0, strings.Index(s, secret)-200):])
			}
		}
	}
	for _, format := range []string{"text", "json", "html", "slack"} {
		args := probeArgs(withPassword, "--api-key-file", keyFile, "--header", "X-Team-Token: "+token,
			"--format", format, "--details", "--keep-requests")
		args = append(args, outputs...)
		code, out, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("--format %s: exit %d: %s", format, code, stderr)
		}
		check("stdout in "+format, out)
		check("stderr with "+format, stderr)
		for f, path := range files {
			b, err := os.ReadFile(path)
			if err != nil || len(b) == 0 {
				t.Fatalf("--output %s: %v, %d bytes", f, err, len(b))
			}
			check("the "+f+" file", string(b))
		}
	}
	k.received(t, "authorization Bearer "+key)
	k.received(t, "x-team-token "+token)

	// The plan, an error and a key from the environment.
	// A name of its own: t.Setenv cannot run beside parallel tests.
	if err := os.Setenv("PROBE_TEST_KEY", key); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Unsetenv("PROBE_TEST_KEY") }) // a name no other test reads
	_, out, stderr := runCLI(t, "probe", "--target", withPassword, "--api-key-env", "PROBE_TEST_KEY", "--header", "X-Team-Token: "+token, "--dry-run")
	check("the dry run", out+stderr)
	_, out, stderr = runCLI(t, "probe", "--target", withPassword, "--api-key-env", "PROBE_TEST_KEY", "--model", "none-such", "--no-metrics")
	check("an error", out+stderr)
	_, out, stderr = runCLI(t, "probe", "--target", "http://ops:"+password+"@127.0.0.1:1", "--api-key-env", "PROBE_TEST_KEY")
	check("a refused connection", out+stderr)
}

// Bad usage is one line and exit 2, before any request; a server that
// cannot be reached is one line too.
func TestProbeUsageErrors(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"probe"}, "--target"},
		{[]string{"probe", "--target", "ftp://x"}, "http or https"},
		{[]string{"probe", "--target", srv.URL, "--slo", "ttft_p99=fast"}, "--slo"},
		{[]string{"probe", "--target", srv.URL, "--output-tokens", "500"}, "--max-output-tokens"},
		{[]string{"probe", "--target", srv.URL, "--api-key-env", "PROBE_TEST_UNSET_VARIABLE"}, "not set"},
		{[]string{"probe", "--target", srv.URL, "--api-key-env", "A", "--api-key-file", "b"}, "not both"},
		{[]string{"probe", "--target", srv.URL, "--header", "no colon"}, "--header"},
		{[]string{"probe", "--target", srv.URL, "--launch", "150%"}, "--launch"},
		{[]string{"probe", "--target", srv.URL, "--format", "junit"}, "format"},
		{[]string{"probe", "--target", "http://127.0.0.1:1", "--no-metrics"}, "connection refused"},
	} {
		code, out, stderr := runCLI(t, c.args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q: want exit 2 and one line naming %q", c.args, code, out, stderr, c.want)
		}
		if strings.Count(stderr, "127.0.0.1:1") > 1 {
			t.Errorf("%q: the target said more than once: %s", c.args, stderr)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests reached the server on bad usage", hits.Load())
	}
}

// SIGTERM and Ctrl-C stop a probe at once, requests in flight abandoned,
// and what was measured is reported with exit 0. Not parallel: the signal
// goes to the whole test process.
func TestProbeStopsOnASignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			// The simulator at a fifth of real time: a request takes a
			// second or more, so the signal lands with one in flight.
			url, sent := serveSimAPI(t, "healthy", 0.2)
			type result struct {
				code      int
				out, errs string
			}
			done := make(chan result, 1)
			go func() {
				code, out, errs := runCLI(t, "probe", "--target", url, "--lengths", "128", "--repeats", "2", "--warmup", "1",
					"--concurrency", "1,2", "--step-requests", "8", "--output-tokens", "64", "--no-metrics", "--format", "json")
				done <- result{code, out, errs}
			}()
			deadline := time.Now().Add(60 * time.Second)
			for sent.Load() < 3 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if sent.Load() < 3 {
				t.Fatal("the probe did not reach its third request in a minute")
			}
			p, _ := os.FindProcess(os.Getpid())
			if err := p.Signal(sig); err != nil {
				t.Skip("cannot signal on this platform:", err)
			}
			signalled := time.Now()
			select {
			case r := <-done:
				if took := time.Since(signalled); took > 5*time.Second {
					t.Errorf("stopped %s after the signal: want at once", took.Round(time.Millisecond))
				}
				if r.code != 0 || !strings.Contains(r.errs, "stopped: reporting what was measured") {
					t.Fatalf("exit %d\nstderr %s", r.code, r.errs)
				}
				res := readProbeJSON(t, r.out)
				if res.Stopped != probe.StopInterrupted || res.Sent != int(sent.Load()) || len(res.Sweep.Samples) == 0 {
					t.Errorf("stopped %q, %d sent (the server had %d), %d sweep requests: want what was measured",
						res.Stopped, res.Sent, sent.Load(), len(res.Sweep.Samples))
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the probe did not stop on " + sig.String())
			}
		})
	}
}
