package prom

import (
	"context"
	"errors"
	"fmt"
	_ "github.com/llmdoctor/llmdoctor/collectors/sglang"
	_ "github.com/llmdoctor/llmdoctor/collectors/vllm"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAPI answers like Prometheus's HTTP API; only the failure modes that a
// real server cannot be made to produce on demand are faked here.
func fakeAPI(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(h))
	t.Cleanup(s.Close)
	return s.URL
}

const namesOK = `{"status":"success","data":["vllm:num_requests_running"]}`

func collect(t *testing.T, conn Connection) error {
	t.Helper()
	conn.Timeout = 300 * time.Millisecond
	c, err := New(conn, Options{Window: 15 * time.Minute, End: time.Unix(1767226000, 0)})
	if err != nil {
		return err
	}
	_, err = c.Collect(context.Background())
	return err
}

func TestFailuresAreOneClearLine(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	cases := map[string]struct {
		url  string
		want string
	}{
		"down": {closedURL, "connection refused"},
		"500": {fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "upstream exploded", http.StatusInternalServerError)
		}), "server or a proxy in front of it is in trouble"},
		"timeout": {fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // no answer until the client gives up
		}), "timed out"},
		"401": {fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}), "refused the credentials (401)"},
		"403": {fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusForbidden)
		}), "forbids this query (403)"},
		"too expensive": {fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/values") {
				fmt.Fprint(w, namesOK)
				return
			}
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`)
		}), "too expensive"},
		"empty": {fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"status":"success","data":[]}`)
		}), "has no SGLang or vLLM metrics"},
		"not prometheus": {fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "<html>login</html>")
		}), "http://127.0.0.1"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := collect(t, Connection{URL: c.url})
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line containing %q", err, c.want)
			}
		})
	}
}

func TestWarningsBecomeNotes(t *testing.T) {
	url := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/values"):
			fmt.Fprint(w, namesOK)
		default:
			fmt.Fprint(w, `{"status":"success","warnings":["partial response: store-gateway 2 down"],"data":{"resultType":"matrix","result":[]}}`)
		}
	})
	c, _ := New(Connection{URL: url}, Options{End: time.Unix(1767226000, 0)})
	w, err := c.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Notes) != 1 || !strings.Contains(w.Notes[0], "store-gateway 2 down") {
		t.Fatalf("notes %v", w.Notes)
	}
}

// Secrets reach the server and never an error message; every request
// says it is llmdoctor's.
func TestSecretsStayOutOfErrors(t *testing.T) {
	const token, password = "s3cr3t-t0ken-value", "hunter2-password"
	var sawBearer, sawBasic, sawTenant, sawAgent atomic.Bool
	url := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.UserAgent(), "llmdoctor/") {
			sawAgent.Store(true)
		}
		if r.Header.Get("Authorization") == "Bearer "+token {
			sawBearer.Store(true)
		}
		if u, p, ok := r.BasicAuth(); ok && u == "ops" && p == password {
			sawBasic.Store(true)
		}
		if r.Header.Get("X-Scope-OrgID") == "team-a" {
			sawTenant.Store(true)
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, "bad token "+r.Header.Get("Authorization"))
	})
	for _, conn := range []Connection{
		{URL: url, BearerToken: token, Headers: map[string]string{"X-Scope-OrgID": "team-a"}},
		{URL: strings.Replace(url, "http://", "http://ops:"+password+"@", 1)},
		{URL: url + "/?x=" + token},
	} {
		err := collect(t, conn)
		if err == nil {
			t.Fatal("want an error")
		}
		for _, secret := range []string{token, password} {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error leaks a secret: %v", err)
			}
		}
	}
	if !sawAgent.Load() {
		t.Error("no llmdoctor/VERSION User-Agent reached Prometheus")
	}
	if !sawBearer.Load() || !sawBasic.Load() || !sawTenant.Load() {
		t.Fatalf("credentials not sent: bearer %v basic %v tenant %v", sawBearer.Load(), sawBasic.Load(), sawTenant.Load())
	}
}

func TestBadURLAndTLSFiles(t *testing.T) {
	for _, c := range []struct {
		conn Connection
		kind Kind
		want string
	}{
		{Connection{URL: "prometheus:9090"}, BadURL, `"prometheus:9090" is not a URL`},
		{Connection{URL: "127.0.0.1:9090"}, BadURL, `"127.0.0.1:9090" is not a URL`},
		{Connection{URL: "ftp://p:9090"}, BadURL, "not a URL"},
		{Connection{URL: "https://p:9090", CAFile: "/nonexistent.pem"}, BadCA, "/nonexistent.pem"},
		{Connection{URL: "https://p:9090", CertFile: "/nonexistent.pem"}, BadClientCert, "client certificate"},
	} {
		_, err := New(c.conn, Options{})
		var e *Error
		if !errors.As(err, &e) || e.Kind != c.kind || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want kind %d containing %q", c.conn, err, c.kind, c.want)
		}
	}
}

// Errors are typed and leave flag names to the front end.
func TestErrorsAreTypedWithoutFlagNames(t *testing.T) {
	slow := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	empty := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"status":"success","data":[]}`) })
	for url, kind := range map[string]Kind{slow: Timeout, empty: NoMetrics} {
		err := collect(t, Connection{URL: url})
		var e *Error
		if !errors.As(err, &e) || e.Kind != kind || strings.Contains(err.Error(), "--") {
			t.Errorf("got %v (%T), want kind %d and no flag name", err, err, kind)
		}
	}
}

// A server that repeats what it was sent, in an error or a warning, has the
// credentials masked.
func TestEchoedSecretsAreMasked(t *testing.T) {
	const token, tenant = "s3cr3t-t0ken-value", "tenant-value-9"
	url := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		said := r.Header.Get("Authorization") + " " + r.Header.Get("X-Scope-OrgID") + " " + r.URL.Query().Get("token")
		if strings.HasSuffix(r.URL.Path, "/values") {
			fmt.Fprintf(w, `{"status":"success","warnings":["seen %s"],"data":["vllm:num_requests_running"]}`, said)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":"rejected %s"}`, said)
	})
	conn := Connection{URL: url + "/?token=" + token + "-q", BearerToken: token, Headers: map[string]string{"X-Scope-OrgID": tenant},
		Timeout: time.Second}
	c, err := New(conn, Options{End: time.Unix(1767226000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Collect(context.Background())
	if err == nil || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), tenant) || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("error %v", err)
	}
	for _, n := range c.notes {
		if strings.Contains(n, token) || strings.Contains(n, tenant) {
			t.Fatalf("warning leaks: %s", n)
		}
	}
}

// A range query evaluates at start + i·step up to end: when the step does
// not divide the window the last point falls short of end, and is drawn
// where it was evaluated, not stretched to end.
func TestStepNotDividingTheWindow(t *testing.T) {
	url := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/values"):
			fmt.Fprint(w, namesOK)
		case strings.HasSuffix(r.URL.Path, "/query_range") && strings.Contains(r.Form.Get("query"), `"vllm:num_requests_running value"`):
			start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
			end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
			step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
			var vals []string
			for t := start; t <= end; t += step {
				vals = append(vals, fmt.Sprintf(`[%.3f,"%g"]`, t, t-start))
			}
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"model_name":"m","llmdoctor_branch":"vllm:num_requests_running value"},"values":[%s]}]}}`, strings.Join(vals, ","))
		case strings.HasSuffix(r.URL.Path, "/query_range"):
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		default:
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		}
	})
	c, _ := New(Connection{URL: url}, Options{Window: 100 * time.Second, Step: 15 * time.Second, End: time.Unix(1767226000, 0)})
	w, err := c.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := w.Gauges["vllm:num_requests_running"]
	if len(g) != 1 || w.Points != 7 {
		t.Fatalf("gauges %v, points %d", g, w.Points)
	}
	// Each point's value is its seconds into the window.
	got := w.Timeline(g[0].Points)
	if len(got) != 7 {
		t.Fatalf("timeline %v of %v", got, g[0].Points)
	}
	for _, p := range got {
		if p[0] != p[1] {
			t.Fatalf("the point evaluated at %v s drawn at %v s: %v", p[1], p[0], got)
		}
	}
	if len(w.Notes) != 0 {
		t.Errorf("notes %q", w.Notes)
	}
}

// A family the server lists but holds no series of in the window (another
// engine's, from a block that overlaps the window) is absent from the
// window, not present and empty: presence says which engines the window
// holds, and an engine wrongly present makes the GPUs join no target.
func TestListedFamilyWithoutSeriesIsAbsent(t *testing.T) {
	url := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/values"):
			fmt.Fprint(w, `{"status":"success","data":["vllm:num_requests_running","sglang:prompt_tokens_total","sglang:time_to_first_token_seconds_bucket","sglang:num_running_reqs"]}`)
		case strings.HasSuffix(r.URL.Path, "/query_range") && strings.Contains(r.FormValue("query"), `"vllm:num_requests_running value"`):
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"model_name":"m","llmdoctor_branch":"vllm:num_requests_running value"},"values":[[1767226000,"3"]]}]}}`)
		case strings.HasSuffix(r.URL.Path, "/query_range"):
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		default:
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		}
	})
	c, _ := New(Connection{URL: url}, Options{Window: 15 * time.Minute, End: time.Unix(1767226000, 0)})
	w, err := c.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []bool{w.Counters["sglang:prompt_tokens_total"] != nil, w.Histograms["sglang:time_to_first_token_seconds"] != nil,
		w.Gauges["sglang:num_running_reqs"] != nil} {
		if absent {
			t.Fatalf("an empty family is present: %v %v %v", w.Counters, w.Histograms, w.Gauges)
		}
	}
	for _, m := range []map[string]bool{keys(w.Counters), keys(w.Histograms), keys(w.Gauges)} {
		for n := range m {
			if strings.HasPrefix(n, "sglang:") {
				t.Errorf("%s is in the window without a series", n)
			}
		}
	}
	if len(w.Gauges["vllm:num_requests_running"]) != 1 {
		t.Errorf("gauges %v", w.Gauges)
	}
}

func keys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
