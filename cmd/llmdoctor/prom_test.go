package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/sim/simtest"

	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
	"github.com/llmdoctor/llmdoctor/sim"
)

// promScenarios are diagnosed both from a Prometheus holding the backfilled
// window and from the same window's first and last /metrics snapshots: all
// the built-in scenarios in the heavy tier, four verdicts (among them the
// ones tests name) in the quick one.
var promScenarios = func() []string {
	all, _ := sim.Scenarios()
	quick := map[string]bool{"healthy": true, "queue-bound": true, "moe-bandwidth": true, "kv-capacity": true}
	var out []string
	for _, s := range all {
		if testkit.Heavy() || quick[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}()

// sglangPromScenarios are also backfilled with SGLang's metric names (two
// of them in the quick tier); each is one of promScenarios too.
var sglangPromScenarios = func() []string {
	if testkit.Heavy() {
		return []string{"queue-bound", "kv-capacity", "decode-bound", "prefill-interference", "speculation-not-paying", "lora-slots", "router-imbalance", "kv-transfer"}
	}
	return []string{"queue-bound", "kv-capacity"}
}()

type promFixture struct {
	url  string
	dir  string
	ends map[string]time.Time
	// points are every sample point's /metrics, saved as files, oldest first.
	points map[string][]string
	server *promtest.Server
}

// fixtureStep is the backfill's sample spacing and --prom's default --step
// for a 15-minute window, so gauge samples and query steps coincide.
const fixtureStep = 15 * time.Second

// sharedProm is the Prometheus backfilledProm starts, under sharedPromMu;
// sharedPromFailed says an earlier test failed to start it.
var (
	sharedPromMu     sync.Mutex
	sharedProm       *promFixture
	sharedPromFailed bool
)

// backfilledProm writes every scenario an hour apart into one TSDB, with its
// snapshots beside it, and starts Prometheus over it (once per test binary).
// Tests that run in parallel may call it: the first starts it, the others
// wait for it.
func backfilledProm(t *testing.T) *promFixture {
	t.Helper()
	promtest.Need(t)
	sharedPromMu.Lock()
	defer sharedPromMu.Unlock() // also when t.Fatal ends the test below
	if sharedProm != nil {
		return sharedProm
	}
	if sharedPromFailed {
		t.Fatal("the shared Prometheus could not be started (see the first test that asked for it)")
	}
	sharedPromFailed = true // until it has started
	dir, err := os.MkdirTemp("", "llmdoctor-prom")
	if err != nil {
		t.Fatal(err)
	}
	fx := &promFixture{dir: dir, ends: map[string]time.Time{}, points: map[string][]string{}}
	tsdb := filepath.Join(dir, "tsdb")
	for i, name := range promScenarios {
		sc, err := sim.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		epoch := sim.Epoch.Add(time.Duration(i) * time.Hour)
		files := map[string]*os.File{}
		for _, f := range []string{"om", "start.prom", "end.prom"} {
			files[f], _ = os.Create(filepath.Join(dir, name+"."+f))
		}
		pointsDir := filepath.Join(dir, name+".points")
		if err := os.Mkdir(pointsDir, 0o755); err != nil {
			t.Fatal(err)
		}
		save := func(at time.Time, text []byte) error {
			p := filepath.Join(pointsDir, fmt.Sprintf("%03d.prom", len(fx.points[name])))
			fx.points[name] = append(fx.points[name], p)
			return os.WriteFile(p, text, 0o644)
		}
		err = sim.Offline{OpenMetrics: files["om"], Start: files["start.prom"], End: files["end.prom"], Points: save,
			Step: fixtureStep, Epoch: epoch}.Run(sc)
		for _, f := range files {
			if cerr := f.Close(); cerr != nil {
				t.Fatal(cerr)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		promtest.Backfill(t, filepath.Join(dir, name+".om"), tsdb)
		fx.ends[name] = epoch.Add(sc.Warmup + sc.Duration)
	}
	// The same scenarios served with SGLang's names, later in the same TSDB.
	for i, name := range sglangPromScenarios {
		sc, err := sim.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		sc.Exposes = "sglang"
		epoch := sim.Epoch.Add(time.Duration(len(promScenarios)+i) * time.Hour)
		om := filepath.Join(dir, "sglang-"+name+".om")
		f, _ := os.Create(om)
		err = sim.Offline{OpenMetrics: f, Step: fixtureStep, Epoch: epoch}.Run(sc)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		promtest.Backfill(t, om, tsdb)
		fx.ends["sglang/"+name] = epoch.Add(sc.Warmup + sc.Duration)
	}
	bin, _ := promtest.Need(t)
	srv, err := promtest.Launch(bin, tsdb, "")
	if err != nil {
		t.Fatal(err)
	}
	fx.server, fx.url = srv, srv.URL
	sharedProm, sharedPromFailed = fx, false
	return fx
}

// stopSharedProm stops the Prometheus backfilledProm started, if any, and
// removes its files (TestMain calls it when every test has run).
func stopSharedProm() {
	sharedPromMu.Lock()
	defer sharedPromMu.Unlock()
	if sharedProm != nil {
		sharedProm.server.Stop()
		if err := os.RemoveAll(sharedProm.dir); err != nil {
			fmt.Fprintf(os.Stderr, "removing the shared Prometheus: %v\n", err)
		}
		sharedProm = nil
	}
}

type evidenceJSON struct {
	Sources []struct {
		Kind    string
		Queries int
	} `json:"sources"`
	Targets []struct {
		Target struct {
			Labels map[string]string `json:"labels"`
		} `json:"target"`
		Primary  struct{ Bottleneck, Rule string } `json:"primary"`
		Evidence map[string]any                    `json:"evidence"`
	} `json:"targets"`
}

func runJSON(t *testing.T, args ...string) evidenceJSON {
	t.Helper()
	return diagnoseInto[evidenceJSON](t, args...)
}

func num(m map[string]any, path ...string) float64 {
	return evidence.TreeNumber(m, strings.Join(path, "."))
}

// A Prometheus holding SGLang series is diagnosed as one holding vLLM's:
// the same verdict from the same simulated window, the target named as
// SGLang's, and no more queries than for vLLM.
func TestPromReadsSGLang(t *testing.T) {
	t.Parallel()
	fx := backfilledProm(t)
	type target struct {
		Target struct {
			ServedBy string `json:"served_by"`
		} `json:"target"`
		Primary struct{ Bottleneck, Rule string } `json:"primary"`
	}
	type out struct {
		Sources []struct{ Queries int } `json:"sources"`
		Targets []target                `json:"targets"`
	}
	for _, name := range sglangPromScenarios {
		t.Run(name, func(t *testing.T) {
			// A split deployment is two targets, the decode side first.
			n := 1
			if sc, _ := sim.Load(name); sc.Engine.Disaggregated != nil {
				n = 2
			}
			sg := diagnoseTargets[out](t, n, "--prom", fx.url, "--window", "15m", "--end", strconv.FormatInt(fx.ends["sglang/"+name].Unix(), 10))
			vl := diagnoseTargets[out](t, n, "--prom", fx.url, "--window", "15m", "--end", strconv.FormatInt(fx.ends[name].Unix(), 10))
			if sg.Targets[0].Target.ServedBy != "sglang" {
				t.Fatalf("targets %+v", sg.Targets)
			}
			if a, b := vl.Targets[0].Primary, sg.Targets[0].Primary; a != b {
				t.Errorf("SGLang series give %+v, vLLM series %+v", b, a)
			}
			// Name discovery answers from whole TSDB blocks, and which
			// blocks hold what shifts as Prometheus compacts: a window may
			// list the other engine's families too (queried, found empty).
			// At most both engines' worth, never more.
			if sg.Sources[0].Queries > 2*vl.Sources[0].Queries {
				t.Errorf("%d queries for SGLang, %d for vLLM", sg.Sources[0].Queries, vl.Sources[0].Queries)
			}
		})
	}
}

// --prom and --snapshot agree on the same data: same verdict, same counts,
// quantiles within interpolation tolerance.
func TestPromMatchesSnapshots(t *testing.T) {
	t.Parallel()
	fx := backfilledProm(t)
	for _, name := range promScenarios {
		t.Run(name, func(t *testing.T) {
			end := strconv.FormatInt(fx.ends[name].Unix(), 10)
			sc, _ := sim.Load(name)
			// A split deployment is diagnosed one side at a time: decode,
			// then prefill.
			n := 1
			if sc.Engine.Disaggregated != nil {
				n = 2
			}
			p := diagnoseTargets[evidenceJSON](t, n, "--prom", fx.url, "--window", "15m", "--end", end)
			s := diagnoseTargets[evidenceJSON](t, n, "--snapshot", filepath.Join(fx.dir, name+".start.prom"),
				"--snapshot", filepath.Join(fx.dir, name+".end.prom"), "--snapshot-interval", "15m")
			for i := range n {
				// Prometheus read the sides apart by instance too.
				if a, b := p.Targets[i].Target.Labels, s.Targets[i].Target.Labels; a["role"] != b["role"] || a["model_name"] != b["model_name"] {
					t.Errorf("target %d: --prom %v, --snapshot %v", i, a, b)
				}
			}
			pt, st := p.Targets[0], s.Targets[0]
			if n := num(pt.Evidence, "service", "finished"); !(n > 100) || math.IsNaN(num(pt.Evidence, "stage", "ttft", "p99")) {
				t.Fatalf("--prom read too little: finished %v", n)
			}
			// Behaviour over time: one p99 per 15 s step of the 15-minute window,
			// where a step holds at least 10 first tokens.
			if n := num(pt.Evidence, "stage", "ttft_p99_steps", "samples"); sc.Workload.Rate >= 2 && (!(n >= 55) || math.IsNaN(num(pt.Evidence, "stage", "ttft_p99_trend"))) {
				t.Errorf("--prom gave %v per-step p99 values at %v req/s", n, sc.Workload.Rate)
			}
			if pt.Primary.Bottleneck != st.Primary.Bottleneck {
				t.Errorf("--prom says %s (%s), --snapshot says %s (%s)", pt.Primary.Bottleneck, pt.Primary.Rule,
					st.Primary.Bottleneck, st.Primary.Rule)
			}
			if want := sc.Expect; pt.Primary.Bottleneck != want && !contains(sc.Also, pt.Primary.Bottleneck) {
				t.Errorf("--prom verdict %s, scenario expects %s", pt.Primary.Bottleneck, want)
			}
			for _, path := range [][]string{{"service", "finished"}, {"service", "preemptions"}, {"stage", "ttft", "count"},
				{"stage", "queue", "mean"}, {"stage", "ttft", "p50"}, {"stage", "ttft", "p99"}, {"stage", "itl", "p99"},
				{"cond", "prompt_tokens", "p90"}, {"resource", "prefix_hit_rate"}, {"cond", "kv_capacity_tokens"},
				{"service", "running", "last"}, {"resource", "kv_usage", "last"}} {
				a, b := num(pt.Evidence, path...), num(st.Evidence, path...)
				if math.IsNaN(a) != math.IsNaN(b) || math.Abs(a-b) > 1e-6*math.Max(1, math.Abs(b)) {
					t.Errorf("%v: --prom %v, --snapshot %v", path, a, b)
				}
			}
			if p.Sources[0].Kind != "prometheus" || p.Sources[0].Queries == 0 {
				t.Errorf("sources %+v", p.Sources)
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestPromFailuresExit2WithOneLine(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	down := closed.URL
	closed.Close()
	fail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer fail.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // no answer until the client gives up
	}))
	defer slow.Close()
	for name, url := range map[string]string{"down": down, "500": fail.URL, "timeout": slow.URL} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "diagnose", "--prom", url, "--prom-timeout", "200ms")
			if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.HasPrefix(errOut, "llmdoctor: ") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}

// Without DCGM series the GPU rules are named as skipped, with how to add
// DCGM, and the verdict stands.
func TestMissingDCGMIsNamedNotAVerdict(t *testing.T) {
	t.Parallel()
	fx := backfilledProm(t)
	end := strconv.FormatInt(fx.ends["moe-bandwidth"].Unix(), 10)
	// DCGM series carry no engine label, and share no instance, pod, node
	// or host with the backfill's engine series to be joined through, so
	// this selector leaves them out (and the source says so).
	code, out, errOut := runCLI(t, "diagnose", "--format", "json", "--prom", fx.url, "--end", end, "--selector", `engine="0"`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d struct {
		Targets []struct {
			Primary struct{ Bottleneck string }
			Skipped []struct {
				Source string
				Rules  []string
				How    string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	var scoped struct {
		Sources []struct {
			Scopes []struct{ Families, Note string }
		}
	}
	if err := json.Unmarshal([]byte(out), &scoped); err != nil {
		t.Fatal(err)
	}
	said := false
	for _, s := range scoped.Sources[0].Scopes {
		said = said || s.Families == "dcgm" && strings.Contains(s.Note, "share no instance, pod, node or host")
	}
	if !said {
		t.Errorf("the source does not say why DCGM was left out: %+v", scoped.Sources)
	}
	tg := d.Targets[0]
	named := false
	for _, s := range tg.Skipped {
		if s.Source == "dcgm" && contains(s.Rules, "gpu/bandwidth-bound") && strings.Contains(s.How, "dcgm-exporter") {
			named = true
		}
	}
	if !named || tg.Primary.Bottleneck == "memory-bandwidth" {
		t.Fatalf("verdict %s, skipped %+v", tg.Primary.Bottleneck, tg.Skipped)
	}
	// With DCGM the same window is bandwidth-bound.
	with := runJSON(t, "--prom", fx.url, "--end", end)
	if with.Targets[0].Primary.Bottleneck != "memory-bandwidth" {
		t.Fatalf("with DCGM: %s", with.Targets[0].Primary.Bottleneck)
	}
}

// The number of queries does not grow with the number of instances, and a
// fleet of identical replicas is diagnosed like one of them: the same
// verdict, the same latencies and shares, the counts times the replicas.
func TestQueryCountIndependentOfInstances(t *testing.T) {
	t.Parallel()
	promtest.Need(t)
	dir := t.TempDir()
	const fleet = 20
	queries := map[int]int{}
	got := map[int]evidenceJSON{}
	for _, n := range []int{1, fleet} {
		tsdb, end := simtest.Fleet(t, dir, n)
		url := promtest.Start(t, tsdb, "").URL
		d := runJSON(t, "--prom", url, "--end", strconv.FormatInt(end.Unix(), 10), "--step", "1m")
		queries[n] = d.Sources[0].Queries
		got[n] = d
	}
	if queries[1] != queries[fleet] || queries[1] > 30 || queries[1] < 5 {
		t.Fatalf("queries: %v", queries)
	}
	one, many := got[1].Targets[0], got[fleet].Targets[0]
	if one.Primary.Bottleneck != "queueing" || many.Primary.Bottleneck != "queueing" {
		t.Fatalf("verdicts %s, %s", one.Primary.Bottleneck, many.Primary.Bottleneck)
	}
	same := func(path string, times float64) {
		a, b := num(one.Evidence, path), num(many.Evidence, path)
		if math.IsNaN(a) || math.Abs(a*times-b) > 1e-9*math.Max(1, math.Abs(b)) {
			t.Errorf("%s: %v at one instance, %v at %d", path, a, b, fleet)
		}
	}
	for _, p := range []string{"stage.ttft.p99", "stage.ttft.p50", "stage.queue.mean", "stage.itl.p50", "service.e2e.p99",
		"resource.kv_usage.mean", "stage.share.queue", "cond.prompt_tokens.p90", "resource.prefix_hit_rate", "stage.ttft_p99_steps.mean"} {
		same(p, 1)
	}
	for _, p := range []string{"service.finished", "service.running.mean", "service.waiting.mean", "stage.ttft.count"} {
		same(p, fleet)
	}
	if n := num(many.Evidence, "service.instances"); n != fleet {
		t.Errorf("service.instances %v, want %d", n, fleet)
	}
}

// BenchmarkPromFleet diagnoses a real Prometheus holding 1, 100 and 1000
// identical vLLM instances (15-minute window, 1-minute samples), reached
// through a counting proxy. Reported per diagnosis: the queries the proxy saw
// (queries/op), the slowest of them when sent again alone, one at a time
// (slowest-query-ms, the best of three), the wall time over that slowest
// query (wall/slowest), and the process's peak RSS while diagnosing
// (peak-RSS-MiB, Linux; Prometheus runs in a process of its own), and the
// CPU Prometheus and this process spent per diagnosis with the wall time
// over the floor that CPU sets on this many cores (wall/CPU-floor).
func BenchmarkPromFleet(b *testing.B) {
	promtest.Need(b)
	dir := b.TempDir()
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			tsdb, endTime := simtest.Fleet(b, dir, n)
			end := strconv.FormatInt(endTime.Unix(), 10)
			ps := promtest.Start(b, tsdb, "")
			cp := &countingProxy{target: ps.URL}
			proxy := httptest.NewServer(cp)
			defer proxy.Close()
			set, cfg, _ := loadRules("-", nil)
			runtime.GC()
			debug.FreeOSMemory()
			resetPeakRSS()
			b.ReportAllocs()
			b.ResetTimer()
			promCPU, selfCPU := ps.CPUTime(), promtest.SelfCPUTime()
			var queries int
			for i := 0; i < b.N; i++ {
				var pf promFlags
				pf.url, pf.end, pf.window, pf.step, pf.timeout, pf.parallel = proxy.URL, end, 15*time.Minute, time.Minute, 2*time.Minute, prom.DefaultParallel
				p, err := pf.source()
				if err != nil {
					b.Fatal(err)
				}
				d, err := diagnosis.Run(context.Background(), diagnosis.Sources{Prom: p, GroupBy: []string{"model_name"}}, set, cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				queries = d.Sources[0].Queries
				if len(d.Targets) != 1 || d.Targets[0].Primary.Bottleneck != "queueing" {
					b.Fatalf("verdict %+v", d.Targets)
				}
			}
			b.StopTimer()
			promCPU, selfCPU = ps.CPUTime()-promCPU, promtest.SelfCPUTime()-selfCPU
			wall := float64(b.Elapsed()) / float64(b.N)
			peak := peakRSS()
			seen := cp.take()
			if len(seen)%b.N != 0 || len(seen)/b.N != queries {
				b.Fatalf("the proxy saw %d requests in %d diagnoses; the collector counted %d per diagnosis", len(seen), b.N, queries)
			}
			slowest := cp.slowestAlone(b, seen[:len(seen)/b.N])
			b.ReportMetric(float64(queries), "queries/op")
			b.ReportMetric(float64(slowest)/1e6, "slowest-query-ms")
			b.ReportMetric(wall/float64(slowest), "wall/slowest")
			if peak > 0 {
				b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
			}
			// The floor no scheduling of the queries can beat: the CPU
			// Prometheus and this process spend, over the machine's cores.
			if promCPU > 0 {
				floor := float64(promCPU+selfCPU) / float64(b.N) / float64(runtime.NumCPU())
				b.ReportMetric(promCPU.Seconds()/float64(b.N), "prom-CPU-s/op")
				b.ReportMetric(selfCPU.Seconds()/float64(b.N), "client-CPU-s/op")
				b.ReportMetric(wall/floor, "wall/CPU-floor")
			}
		})
	}
}

// countingProxy passes requests to Prometheus and keeps each one, so that the
// queries of a diagnosis can be counted and sent again one at a time.
type countingProxy struct {
	target string
	mu     sync.Mutex
	seen   []proxiedRequest
}

type proxiedRequest struct {
	method, uri, contentType string
	body                     []byte
}

func (c *countingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req := proxiedRequest{r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), body}
	c.mu.Lock()
	c.seen = append(c.seen, req)
	c.mu.Unlock()
	resp, err := req.send(r.Context(), c.target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer func() { _ = resp.Body.Close() }() // read only
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

func (p proxiedRequest) send(ctx context.Context, target string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, p.method, target+p.uri, bytes.NewReader(p.body))
	if err != nil {
		return nil, err
	}
	if p.contentType != "" {
		req.Header.Set("Content-Type", p.contentType)
	}
	return http.DefaultTransport.RoundTrip(req)
}

func (c *countingProxy) take() []proxiedRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.seen
	c.seen = nil
	return s
}

// slowestAlone sends each request again, alone, three times, and returns the
// longest of their best times: the least a diagnosis needing it can take.
func (c *countingProxy) slowestAlone(b *testing.B, reqs []proxiedRequest) time.Duration {
	var slowest time.Duration
	for _, r := range reqs {
		best := time.Duration(math.MaxInt64)
		for k := 0; k < 3; k++ {
			t0 := time.Now()
			resp, err := r.send(context.Background(), c.target)
			if err != nil {
				b.Fatal(err)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close() // read only
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("%s %s: %d %v", r.method, r.uri, resp.StatusCode, err)
			}
			best = min(best, time.Since(t0))
		}
		slowest = max(slowest, best)
	}
	return slowest
}

// resetPeakRSS resets the kernel's high-water mark of this process's
// resident set (Linux; elsewhere peakRSS reports 0).
func resetPeakRSS() {
	// Linux only; elsewhere the peak stays the process's, an upper bound.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is this process's resident-set high-water mark (VmHWM) in bytes.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// --print-queries prints every request the diagnosis made, each as it was
// sent: asked again with the printed PromQL, start, end and step, the server
// answers with the printed number of series.
func TestPrintQueriesPrintsWhatWasAsked(t *testing.T) {
	t.Parallel()
	fx := backfilledProm(t)
	end := fx.ends["queue-bound"]
	code, out, errOut := runCLI(t, "diagnose", "--format", "json", "--prom", fx.url, "--end", strconv.FormatInt(end.Unix(), 10), "--print-queries")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d evidenceJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("stdout is not the report alone: %v", err)
	}
	// Each query: a heading, its times, then its PromQL, indented.
	var queries [][]string
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if strings.HasPrefix(l, "query ") {
			queries = append(queries, nil)
		} else if len(queries) == 0 || !strings.HasPrefix(l, "  ") {
			t.Fatalf("line %q is not part of a query:\n%s", l, errOut)
		}
		queries[len(queries)-1] = append(queries[len(queries)-1], l)
	}
	if len(queries) != d.Sources[0].Queries {
		t.Fatalf("%d queries printed, %d made:\n%s", len(queries), d.Sources[0].Queries, errOut)
	}
	ranged := 0
	for i, q := range queries {
		n := i + 1
		if len(q) < 3 {
			t.Fatalf("query %d: %q", n, q)
		}
		head, when := q[0], strings.Fields(q[1])
		var expr []string
		for _, l := range q[2:] {
			expr = append(expr, strings.TrimPrefix(l, "  "))
		}
		parts := strings.Split(head, " · ")
		var series int
		if len(parts) < 4 || parts[0] != fmt.Sprintf("query %d", n) {
			t.Fatalf("heading %q", head)
		}
		if _, err := fmt.Sscanf(parts[3], "%d series", &series); err != nil {
			t.Fatalf("heading %q has no series count", head)
		}
		endpoint := parts[1]
		if endpoint != "/api/v1/query_range" {
			continue
		}
		ranged++
		if len(when) != 6 || when[0] != "start" || when[2] != "end" || when[4] != "step" {
			t.Fatalf("second line %q", q[1])
		}
		start, _ := time.Parse(time.RFC3339, when[1])
		stop, _ := time.Parse(time.RFC3339, when[3])
		step, _ := time.ParseDuration(when[5])
		if !stop.Equal(end) || !start.Equal(end.Add(-15*time.Minute)) || step != fixtureStep {
			t.Errorf("query %d: window %v to %v step %v, want the 15 minutes to %v", n, start, stop, step, end)
		}
		got := rangeSeries(t, fx.url, strings.Join(expr, "\n"), start, stop, step)
		if got != series || series == 0 {
			t.Errorf("query %d: printed %d series, asked again %d", n, series, got)
		}
	}
	if ranged == 0 {
		t.Fatal("no range query printed")
	}
}

// --at T looks at the window centred on T: the same evidence as --end T+window/2.
func TestAtCentresTheWindow(t *testing.T) {
	t.Parallel()
	fx := backfilledProm(t)
	end := fx.ends["queue-bound"]
	at := end.Add(-7*time.Minute - 30*time.Second).UTC().Format(time.RFC3339)
	a := runJSON(t, "--prom", fx.url, "--at", at, "--window", "15m")
	e := runJSON(t, "--prom", fx.url, "--end", strconv.FormatInt(end.Unix(), 10), "--window", "15m")
	for _, path := range [][]string{{"service", "finished"}, {"stage", "ttft", "p99"}, {"stage", "queue", "mean"}} {
		if x, y := num(a.Targets[0].Evidence, path...), num(e.Targets[0].Evidence, path...); x != y || math.IsNaN(x) {
			t.Errorf("%v: --at %v, --end %v", path, x, y)
		}
	}
}

// rangeSeries asks Prometheus a range query and counts the series it answers.
func rangeSeries(t *testing.T, url, expr string, start, end time.Time, step time.Duration) int {
	t.Helper()
	form := neturl.Values{"query": {expr}, "start": {strconv.FormatInt(start.Unix(), 10)},
		"end": {strconv.FormatInt(end.Unix(), 10)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	resp, err := http.PostForm(url+"/api/v1/query_range", form)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // read only
	var body struct {
		Status string
		Data   struct{ Result []json.RawMessage }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("%s: status %q, %v", expr, body.Status, err)
	}
	return len(body.Data.Result)
}

// With --prom on the line, --group-by completes to the labels the engines'
// series have there, not a fixed list; an unreachable server falls back to
// the common names.
func TestGroupByCompletesFromTheSource(t *testing.T) {
	t.Parallel()
	fx := backfilledProm(t)
	end := strconv.FormatInt(fx.ends["queue-bound"].Unix(), 10)
	code, out, errOut := runCLI(t, "__complete", "diagnose", "--prom", fx.url, "--end", end, "--group-by", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got := strings.Fields(out)
	// The backfill's series have model_name and engine (and the GPU
	// exporter's, its own labels; the cache config, its settings).
	for _, want := range []string{"model_name", "engine"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q not offered: %q", want, got)
		}
	}
	for _, absent := range []string{"pod", "namespace", "__name__", "le", "block_size", "Hostname", "finished_reason"} {
		if slices.Contains(got, absent) {
			t.Errorf("%q offered, though no series has it: %q", absent, got)
		}
	}
	_, out, _ = runCLI(t, "__complete", "diagnose", "--prom", "http://127.0.0.1:1", "--group-by", "")
	if !strings.Contains(out, "namespace\n") {
		t.Errorf("unreachable server: %q", out)
	}
}

// compare --prom with two --at diagnoses both windows first: the two halves
// of a steady scenario's window are no change; one --at is bad usage.
func TestCompareLiveWindows(t *testing.T) {
	t.Parallel()
	fx := backfilledProm(t)
	end := fx.ends["healthy"]
	at := func(d time.Duration) string { return end.Add(-d).UTC().Format(time.RFC3339) }
	code, out, errOut := runCLI(t, "compare", "--format", "json", "--prom", fx.url, "--window", "7m", "--at", at(11*time.Minute), "--at", at(4*time.Minute))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c struct {
		Before  struct{ Name string }
		Targets []struct{ Verdict, Why string }
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil || len(c.Targets) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	if c.Targets[0].Verdict != "no-change" || c.Before.Name != "--at "+at(11*time.Minute) {
		t.Errorf("halves of healthy: %+v", c)
	}
	if code, _, errOut := runCLI(t, "compare", "--prom", fx.url, "--at", at(4*time.Minute)); code != 2 || !strings.Contains(errOut, "two --at") {
		t.Errorf("one --at: exit %d: %s", code, errOut)
	}
}
