package prom

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/llmdoctor/llmdoctor/sim/simtest"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
	"github.com/llmdoctor/llmdoctor/sim"

	_ "github.com/llmdoctor/llmdoctor/collectors/dcgm"
	_ "github.com/llmdoctor/llmdoctor/collectors/sglang"
	_ "github.com/llmdoctor/llmdoctor/collectors/vllm"
)

// member is one engine process of the test fleet: a scenario's series
// under an instance and a rank, with edits that make it unlike the others.
type member struct {
	scenario, instance, rank string
	// drop leaves out lines containing every one of these strings.
	drop [][]string
}

// fleetOM writes the members' series as one OpenMetrics file: every
// family's samples under its one header, as the format requires.
func fleetOM(t *testing.T, dir, exposes string, epoch time.Time, members []member) (string, time.Time) {
	t.Helper()
	var order []string
	head := map[string][]string{}
	body := map[string][]string{}
	var end time.Time
	rankLabel := map[string]string{"vllm": "engine", "sglang": "dp_rank"}[exposes]
	for i, m := range members {
		sc, err := sim.Load(m.scenario)
		if err != nil {
			t.Fatal(err)
		}
		sc.Warmup, sc.Duration, sc.Exposes = time.Minute, 15*time.Minute, exposes
		var b strings.Builder
		if err := (sim.Offline{OpenMetrics: &b, Step: time.Minute, Epoch: epoch}).Run(sc); err != nil {
			t.Fatal(err)
		}
		end = epoch.Add(sc.Warmup + sc.Duration)
		family := ""
		for _, l := range strings.Split(b.String(), "\n") {
			switch {
			case l == "" || l == "# EOF":
			case strings.HasPrefix(l, "#"):
				family = strings.Fields(l)[2]
				if _, ok := head[family]; !ok {
					order = append(order, family)
				}
				if len(head[family]) < 2 {
					head[family] = append(head[family], l)
				}
			default:
				if strings.HasPrefix(l, "DCGM_") && i > 0 && members[i-1].instance == m.instance {
					continue // one GPU exporter per host
				}
				if dropped(l, m.drop) {
					continue
				}
				k := strings.IndexByte(l, '{')
				l = fmt.Sprintf("%s{instance=%q,%s", l[:k], m.instance, l[k+1:])
				if m.rank != "" && rankLabel != "" {
					l = strings.Replace(l, rankLabel+`="0"`, rankLabel+`="`+m.rank+`"`, 1)
				}
				body[family] = append(body[family], l)
			}
		}
	}
	path := filepath.Join(dir, exposes+".om")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, fam := range order {
		for _, h := range head[fam] {
			fmt.Fprintln(w, h)
		}
		for _, l := range body[fam] {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, end
}

func dropped(l string, drop [][]string) bool {
	for _, all := range drop {
		hit := true
		for _, s := range all {
			hit = hit && strings.Contains(l, s)
		}
		if hit {
			return true
		}
	}
	return false
}

// Summing a fleet to its targets on the server gives the evidence that
// reading every member's series and summing them in the builder gave: every
// target value, every withheld field, every member's, on fleets of unlike
// replicas, with a data-parallel rank, a replica bucketed differently (its
// TTFT lacks one bound) and a replica missing a sample of a summed gauge.
func TestAggregatedFleetMatchesPerMemberReading(t *testing.T) {
	promtest.Need(t)
	t.Parallel()
	dir := t.TempDir()
	tsdb := filepath.Join(dir, "tsdb")
	ends := map[string]time.Time{}
	for _, fleet := range []struct {
		exposes string
		members []member
	}{
		{"vllm", []member{
			{scenario: "queue-bound", instance: "10.0.0.1:8000", drop: [][]string{{"vllm:time_to_first_token_seconds_bucket", `le="20.0"`}}},
			// Two samples: a range selector of Prometheus 2 holds the sample
			// at its left edge.
			{scenario: "queue-bound", instance: "10.0.0.2:8000", drop: [][]string{{"vllm:num_requests_running{", " 1.7672259e+09"},
				{"vllm:num_requests_running{", " 1.76722596e+09"}}},
			{scenario: "healthy", instance: "10.0.0.3:8000"},
			{scenario: "kv-capacity", instance: "10.0.0.4:8000"},
			{scenario: "bursty", instance: "10.0.0.4:8000", rank: "1"},
			{scenario: "decode-bound", instance: "10.0.1.1:8000"},
		}},
		{"sglang", []member{
			{scenario: "queue-bound", instance: "10.0.2.1:30000", drop: [][]string{{"sglang:time_to_first_token_seconds_bucket", `le="20.0"`}}},
			{scenario: "healthy", instance: "10.0.2.2:30000"},
			{scenario: "kv-capacity", instance: "10.0.2.3:30000", rank: "1"},
		}},
	} {
		om, end := fleetOM(t, dir, fleet.exposes, sim.Epoch.Add(time.Duration(len(ends))*time.Hour), fleet.members)
		promtest.Backfill(t, om, tsdb)
		ends[fleet.exposes] = end
	}
	url := promtest.Start(t, tsdb, "").URL
	for exposes, end := range ends {
		t.Run(exposes, func(t *testing.T) {
			opt := Options{Window: 15 * time.Minute, Step: time.Minute, End: end}
			c, err := New(Connection{URL: url}, opt)
			if err != nil {
				t.Fatal(err)
			}
			w, err := c.Collect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			o, _ := New(Connection{URL: url}, opt)
			ow, err := oldCollect(o, context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if c.Queries() >= o.Queries() {
				t.Errorf("%d queries summing on the server, %d reading members", c.Queries(), o.Queries())
			}
			got, want := engine.Build(w, engine.Options{}), engine.Build(ow, engine.Options{})
			for _, e := range append(got, want...) {
				evidence.Check(e)
			}
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("%d targets, want %d", len(got), len(want))
			}
			members := 0
			for i := range got {
				sameEvidence(t, got[i].Target.Model, got[i], want[i], true)
				if len(got[i].Members) != len(want[i].Members) {
					t.Fatalf("%s: %d members, want %d", got[i].Target.Model, len(got[i].Members), len(want[i].Members))
				}
				for j := range got[i].Members {
					members++
					sameEvidence(t, fmt.Sprint(got[i].Members[j].Target.Labels), got[i].Members[j], want[i].Members[j], false)
				}
			}
			if members < 3 {
				t.Errorf("only %d members compared", members)
			}
		})
	}
}

// memberPaths are what a member's evidence is read for (the per-member
// table, the fleet comparison).
var memberPaths = []string{"stage.ttft.p99", "stage.ttft.mean", "stage.queue.mean", "service.waiting.mean", "service.running.mean",
	"resource.kv_usage.mean", "service.preemptions"}

func sameEvidence(t *testing.T, name string, got, want *evidence.Evidence, all bool) {
	t.Helper()
	paths := memberPaths
	if all {
		paths = nil
		for _, f := range evidence.Fields() {
			paths = append(paths, f.Path)
		}
	}
	compared := 0
	for _, p := range paths {
		f, ok := evidence.Lookup(p)
		if !ok {
			t.Fatalf("no field %s", p)
		}
		a, b := got.Values.Get(f), want.Values.Get(f)
		if evidence.Present(a) != evidence.Present(b) || evidence.Present(a) && math.Abs(a-b) > 1e-9*math.Max(1, math.Abs(b)) {
			t.Errorf("%s %s: %v summed on the server, %v from members", name, p, a, b)
		}
		if evidence.Present(b) {
			compared++
		}
		if got.Inconsistent(p) != want.Inconsistent(p) {
			t.Errorf("%s %s withheld: %q summed on the server, %q from members", name, p, got.Inconsistent(p), want.Inconsistent(p))
		}
	}
	if compared < 3 {
		t.Errorf("%s: only %d values present", name, compared)
	}
	if all {
		g, w := checks(got), checks(want)
		if strings.Join(g, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s inconsistencies:\n%s\nfrom members:\n%s", name, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
	}
}

func checks(e *evidence.Evidence) []string {
	var out []string
	for _, in := range e.Inconsistencies {
		out = append(out, in.Check+" "+strings.Join(in.Fields, ","))
	}
	sort.Strings(out)
	return out
}

// A merged query the server refuses as too large is split until each part
// fits: the same window in more queries, not an error. Prometheus's own
// limit (--query.max-samples) counts the samples of one selector at a
// time, so merging never trips it; Mimir's and Thanos's count a query's
// series or chunks in all, which a proxy in front of the real server
// stands in for here: it refuses, in Mimir's words, any query of more than
// four branches.
func TestTooLargeQueriesAreSplit(t *testing.T) {
	promtest.Need(t)
	t.Parallel()
	tsdb, end := simtest.Fleet(t, t.TempDir(), 20)
	server := promtest.Start(t, tsdb, "").URL
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		if q := form.Get("query") + r.URL.Query().Get("query"); strings.Count(q, "label_replace(") > 4 {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"status":"error","errorType":"execution","error":"expanding series: the query exceeded the maximum number of chunks fetched (limit: 2000000)"}`)
			return
		}
		u, _ := url.Parse(server)
		httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
	}))
	defer limited.Close()
	read := func(url string) (*window.Window, int) {
		c, err := New(Connection{URL: url}, Options{Window: 15 * time.Minute, Step: time.Minute, End: end})
		if err != nil {
			t.Fatal(err)
		}
		w, err := c.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return w, c.Queries()
	}
	want, n := read(server)
	got, m := read(limited.URL)
	if m <= n {
		t.Fatalf("%d queries through the limit, %d without: nothing was split", m, n)
	}
	a, b := engine.Build(got, engine.Options{}), engine.Build(want, engine.Options{})
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("%d and %d targets", len(a), len(b))
	}
	sameEvidence(t, "split", a[0], b[0], true)
}
