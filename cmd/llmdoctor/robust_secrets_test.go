package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
	"github.com/llmdoctor/llmdoctor/internal/testkit/promtest"
	"github.com/llmdoctor/llmdoctor/sim"
)

// Every credential a user can hand over, each a distinct string so that a
// leak names its path.
const (
	secretUserinfo = "pw-in-userinfo-5d1c"
	secretQuery    = "qs-token-8e2f"
	secretQueryKey = "qs-apikey-4b7a"
	secretHeader   = "hdr-value-c93e"
	secretBearer   = "bearer-token-1f6d"
	secretEnvPass  = "pw-from-env-a27b"
	secretFile     = "file-token-70c4"
)

func allSecrets() []string {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return []string{secretUserinfo, secretQuery, secretQueryKey, secretHeader, secretBearer, secretEnvPass, secretFile,
		b64("ops:" + secretUserinfo), b64("ops:" + secretEnvPass)}
}

// credStyle is one way of passing credentials: how it is given on the
// command line, and how a server that requires it recognises it.
type credStyle struct {
	name string
	// kinds it applies to; nil: all of prom, vllm, dcgm.
	kinds []string
	// url puts the credential into a URL; args and env add the rest.
	url  func(base, path string) string
	args func(t *testing.T, kind string) []string
	env  map[string]string
	ok   func(r *http.Request) bool
}

var credStyles = []credStyle{
	{name: "userinfo",
		url: func(base, path string) string {
			return strings.Replace(base, "://", "://ops:"+secretUserinfo+"@", 1) + path
		},
		ok: func(r *http.Request) bool {
			u, p, ok := r.BasicAuth()
			return ok && u == "ops" && p == secretUserinfo
		}},
	{name: "query",
		url: func(base, path string) string {
			return base + path + "?token=" + secretQuery + "&api_key=" + secretQueryKey
		},
		ok: func(r *http.Request) bool {
			q := r.URL.Query()
			return q.Get("token") == secretQuery && q.Get("api_key") == secretQueryKey
		}},
	{name: "header",
		args: func(t *testing.T, kind string) []string {
			if kind == "prom" {
				return []string{"--prom-header", "X-Api-Key: " + secretHeader}
			}
			return []string{"--vllm-header", "X-Api-Key: " + secretHeader, "--vllm-header", "Authorization: Bearer " + secretBearer}
		},
		env: map[string]string{"LLMDOCTOR_PROM_TOKEN": secretBearer},
		ok: func(r *http.Request) bool {
			return r.Header.Get("X-Api-Key") == secretHeader && r.Header.Get("Authorization") == "Bearer "+secretBearer
		}},
	{name: "password-env", kinds: []string{"prom"},
		args: func(t *testing.T, kind string) []string { return []string{"--prom-user", "ops"} },
		env:  map[string]string{"LLMDOCTOR_PROM_PASSWORD": secretEnvPass},
		ok: func(r *http.Request) bool {
			u, p, ok := r.BasicAuth()
			return ok && u == "ops" && p == secretEnvPass
		}},
	{name: "token-file", kinds: []string{"prom"},
		args: func(t *testing.T, kind string) []string {
			f := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(f, []byte(secretFile+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"--prom-token-file", f}
		},
		ok: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+secretFile }},
}

// echo is what a careless server sends back: the credentials it was given.
func echo(r *http.Request) string {
	var got []string
	if _, p, ok := r.BasicAuth(); ok {
		got = append(got, p, r.Header.Get("Authorization"))
	}
	for _, v := range []string{r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"), r.URL.Query().Get("token"), r.URL.Query().Get("api_key")} {
		if v != "" {
			got = append(got, v)
		}
	}
	return strings.Join(got, " ")
}

// failing are the endpoints that do not answer with metrics, for any kind:
// the same handler serves /metrics and the Prometheus API.
var failing = map[string]http.HandlerFunc{
	"401": func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unauthorized: "+echo(r), http.StatusUnauthorized)
	},
	"500": func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom: "+echo(r), http.StatusInternalServerError)
	},
	// Echoed where llmdoctor shows what the server said: a Prometheus API
	// error message, an exposition parse error.
	"echo": func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/api/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			msg, _ := json.Marshal("bad request with " + echo(r))
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%s}`, msg)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "denied %s\n", strings.ReplaceAll(echo(r), " ", "_"))
	},
	"timeout": func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
}

// secretEnv is a loopback vLLM (with DCGM) in step mode, and, where
// Prometheus is installed, the backfilled Prometheus behind a proxy that
// checks credentials.
type secretEnv struct {
	plainSim string       // no credentials needed: the --vllm beside a --dcgm under test
	sim      http.Handler // /metrics and /dcgm/metrics
	once     sync.Once
	prom     *promFixture
	promEnd  string
}

func newSecretEnv(t *testing.T) *secretEnv {
	sc, err := sim.Load("moe-bandwidth")
	if err != nil {
		t.Fatal(err)
	}
	env := &secretEnv{sim: simHandler(t, sc, fixtureStep, 0)}
	plain := httptest.NewServer(env.sim)
	t.Cleanup(plain.Close)
	env.plainSim = plain.URL
	return env
}

func serve(t *testing.T, h http.Handler) string {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

func guard(style credStyle, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !style.ok(r) {
			http.Error(w, "credentials missing", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// endpoint is the base URL for kind at the named endpoint.
func (env *secretEnv) endpoint(t *testing.T, kind, name string, style credStyle) string {
	switch name {
	case "ok":
		if kind != "prom" {
			return serve(t, guard(style, env.sim))
		}
		promtest.Need(t)
		env.once.Do(func() {
			env.prom = backfilledProm(t)
			env.promEnd = strconv.FormatInt(env.prom.ends["moe-bandwidth"].Unix(), 10)
		})
		if env.prom == nil {
			t.Fatal("the shared Prometheus did not start (see the first case that asked for it)")
		}
		target, _ := url.Parse(env.prom.url)
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.ErrorLog = log.New(io.Discard, "", 0) // cancelled queries after a failure
		return serve(t, guard(style, proxy))
	case "refused":
		s := httptest.NewServer(http.NotFoundHandler())
		s.Close()
		return s.URL
	}
	return serve(t, failing[name])
}

var secretEndpoints = []string{"ok", "refused", "401", "500", "echo", "timeout"}

// runSecretCase runs one source kind at one endpoint with one credential
// style in one format, and fails if any output holds a secret.
func runSecretCase(t *testing.T, env *secretEnv, kind, endpoint string, style credStyle, format, command string) {
	base := env.endpoint(t, kind, endpoint, style)
	args := []string{command, "--format", format}
	// Short only where the server never answers, so that a loaded machine
	// does not time out a working one.
	timeout := "10s"
	if endpoint == "timeout" {
		timeout = "300ms"
	}
	u := func(path string) string {
		if style.url != nil {
			return style.url(base, path)
		}
		return base + path
	}
	switch kind {
	case "prom":
		args = append(args, "--prom", u("/"), "--prom-timeout", timeout)
		if env.promEnd != "" {
			args = append(args, "--end", env.promEnd)
		}
	case "vllm":
		args = append(args, "--vllm", u("/metrics"), "--scrapes", "2", "--interval", "1ms", "--timeout", timeout)
	case "dcgm":
		args = append(args, "--vllm", env.plainSim, "--dcgm", u("/dcgm/metrics"), "--scrapes", "2", "--interval", "1ms", "--timeout", timeout)
	}
	if style.args != nil {
		args = append(args, style.args(t, kind)...)
	}
	for k, v := range style.env {
		t.Setenv(k, v)
	}
	code, out, errOut := runCLI(t, args...)
	checkNoSecrets(t, args, out, errOut)
	switch {
	case endpoint == "ok" && (code != 0 && !(command == "checklist" && code == 1)):
		t.Fatalf("exit %d: %s", code, errOut)
	case endpoint == "ok" && command == "diagnose":
		// The source is still named, its credentials masked.
		if !strings.Contains(out, "127.0.0.1") || style.url != nil && !strings.Contains(out, "xxxxx") {
			t.Fatalf("the source is not named with its credentials masked:\n%.600s", out)
		}
	case endpoint == "ok":
	case kind == "dcgm":
		// A dead exporter beside a live vLLM is named, masked, and the
		// diagnosis goes on.
		if code != 0 || !strings.Contains(out, "127.0.0.1") || style.url != nil && !strings.Contains(out, "xxxxx") {
			t.Fatalf("exit %d, stderr %q, stdout %.600s", code, errOut, out)
		}
	case code != 2 || out != "" || !strings.HasPrefix(errOut, "llmdoctor: ") || strings.Count(strings.TrimSpace(errOut), "\n") != 0:
		t.Fatalf("want exit 2 with one line: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func checkNoSecrets(t *testing.T, args []string, out, errOut string) {
	t.Helper()
	for _, s := range allSecrets() {
		if strings.Contains(out, s) || strings.Contains(errOut, s) {
			t.Errorf("output leaks %q\nargs %q\nstderr %s\nstdout around it: %s", s, args, errOut, around(out, s))
		}
	}
}

func around(out, s string) string {
	i := strings.Index(out, s)
	if i < 0 {
		return "(none)"
	}
	return out[max(0, i-300):min(len(out), i+300)]
}

// secretMatrix runs the source kinds (nil: every kind a style applies to)
// against the endpoints with the given credential styles, in text and JSON
// (in the quick tier, in one of them by turns).
func secretMatrix(t *testing.T, env *secretEnv, styles []credStyle, only []string, endpoints []string) {
	turn := 0
	for _, style := range styles {
		kinds := style.kinds
		if kinds == nil {
			kinds = []string{"prom", "vllm", "dcgm"}
		}
		for _, kind := range kinds {
			if only != nil && !contains(only, kind) {
				continue
			}
			for _, ep := range endpoints {
				for _, format := range byTurns(&turn, "text", "json") {
					t.Run(strings.Join([]string{style.name, kind, ep, format}, "/"), func(t *testing.T) {
						runSecretCase(t, env, kind, ep, style, format, "diagnose")
					})
				}
			}
		}
	}
}

// byTurns is every one of formats in the heavy tier; in the quick tier one,
// the next each call, so that a matrix still meets each of them.
func byTurns(turn *int, formats ...string) []string {
	if testkit.Heavy() {
		return formats
	}
	*turn++
	return formats[*turn%len(formats) : *turn%len(formats)+1]
}

// TestSecretsNeverPrinted: credentials in URLs (userinfo, query), header
// values, the token and password from the environment or a file never
// appear in stdout or stderr, for every source kind, working or failing,
// in text and JSON, from diagnose and checklist.
func TestSecretsNeverPrinted(t *testing.T) {
	env := newSecretEnv(t)
	secretMatrix(t, env, credStyles, nil, secretEndpoints)
	turn := 0
	for _, style := range credStyles[:3] {
		for _, kind := range []string{"prom", "vllm", "dcgm"} {
			for _, format := range byTurns(&turn, "text", "json", "markdown", "junit") {
				t.Run("checklist/"+style.name+"/"+kind+"/"+format, func(t *testing.T) {
					runSecretCase(t, env, kind, "ok", style, format, "checklist")
				})
			}
		}
	}
	// Snapshots carry no URL; the environment's secrets stay out all the same.
	t.Run("snapshot", func(t *testing.T) {
		t.Setenv("LLMDOCTOR_PROM_TOKEN", secretBearer)
		t.Setenv("LLMDOCTOR_PROM_PASSWORD", secretEnvPass)
		for _, format := range []string{"text", "json"} {
			args := append([]string{"diagnose", "--format", format}, example("queueing")...)
			code, out, errOut := runCLI(t, args...)
			checkNoSecrets(t, args, out, errOut)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			args = []string{"diagnose", "--format", format, "--snapshot", filepath.Join(t.TempDir(), "missing.prom")}
			code, out, errOut = runCLI(t, args...)
			checkNoSecrets(t, args, out, errOut)
			if code != 2 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
		}
	})
}

func styles(names ...string) []credStyle {
	var out []credStyle
	for _, s := range credStyles {
		if contains(names, s.name) {
			out = append(out, s)
		}
	}
	return out
}

// oneLineMasked runs a command that must refuse with one line on stderr
// holding no secret.
func oneLineMasked(t *testing.T, args ...string) {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	checkNoSecrets(t, args, out, errOut)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "llmdoctor: ") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("want exit 2 with one line: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func init() {
	matrix := func(names, kinds, endpoints []string) func(t *testing.T) {
		return func(t *testing.T) { secretMatrix(t, newSecretEnv(t), styles(names...), kinds, endpoints) }
	}
	robustCases = append(robustCases,
		robustCase{Area: "secrets",
			Input: "--vllm http://user:password@host:8000 (server up, down, refusing with 401, failing with 500, timing out)",
			Want:  "the credentials go to the server as basic auth; the report, JSON and every error line show user:xxxxx@host",
			Test:  matrix([]string{"userinfo"}, []string{"vllm"}, []string{"ok", "refused", "401", "500", "timeout"})},
		robustCase{Area: "secrets",
			Input: "--dcgm or --vllm URL with ?token=… or any other query value",
			Want:  "sent as given; shown everywhere with every query value as xxxxx, since a name need not look secret to hold one",
			Test:  matrix([]string{"query"}, []string{"vllm", "dcgm"}, []string{"ok", "refused", "401", "timeout"})},
		robustCase{Area: "secrets",
			Input: `--vllm-header "Authorization: Bearer …" or another header value`,
			Want:  "sent on every --vllm and --dcgm scrape; never printed, even when the server repeats it in its answer",
			Test:  matrix([]string{"header"}, []string{"vllm", "dcgm"}, []string{"ok", "401", "echo"})},
		robustCase{Area: "secrets",
			Input: "--prom http://user:password@prometheus:9090/?token=… (server up, down, 401, 500, timing out)",
			Want:  "userinfo becomes basic auth, the query is sent as given; both are masked in every output and error",
			Test:  matrix([]string{"userinfo", "query"}, []string{"prom"}, []string{"ok", "refused", "401", "500", "timeout"})},
		robustCase{Area: "secrets",
			Input: "--prom with LLMDOCTOR_PROM_TOKEN, --prom-token-file, LLMDOCTOR_PROM_PASSWORD or --prom-header, against a server that repeats them in its error",
			Want:  "exit 2 with one line naming the server; the token, password, header value and basic-auth header are masked",
			Test:  matrix([]string{"header", "password-env", "token-file"}, []string{"prom"}, []string{"echo", "401"})},
		robustCase{Area: "secrets",
			Input: `--prom-header or --vllm-header with no colon ("Bearer …")`,
			Want:  `exit 2 with one line asking for "Name: value"; the value itself is masked`,
			Test: func(t *testing.T) {
				oneLineMasked(t, "diagnose", "--prom", "http://127.0.0.1:1", "--prom-header", "Bearer "+secretBearer)
				oneLineMasked(t, "diagnose", "--vllm", "127.0.0.1:1", "--vllm-header", secretHeader)
			}},
		robustCase{Area: "secrets",
			Input: "--vllm-header without --vllm",
			Want:  "exit 2 with one line: it applies to --vllm and --dcgm scrapes",
			Test: func(t *testing.T) {
				oneLineMasked(t, "diagnose", "--prom", "http://127.0.0.1:1", "--vllm-header", "X-Api-Key: "+secretHeader)
			}},
	)
}
