package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// watchTV is a target's verdict in a fake diagnosis: sev is critical or
// warning (a bottleneck found), healthy or inconclusive.
type watchTV struct{ model, bottleneck, sev string }

var (
	watchQueueCrit = watchTV{"m1", "queueing", "critical"}
	watchQueueWarn = watchTV{"m1", "queueing", "warning"}
	watchKvCrit    = watchTV{"m1", "kv-capacity", "critical"}
	watchM1Healthy = watchTV{"m1", "", "healthy"}
	watchM2Healthy = watchTV{"m2", "", "healthy"}
	watchM2Crit    = watchTV{"m2", "decode", "critical"}
)

func watchDiagOf(ts ...watchTV) *advisor.Diagnosis {
	d := &advisor.Diagnosis{Schema: "llmdoctor.diagnosis/v1"}
	for _, x := range ts {
		r := advisor.TargetReport{Target: evidence.Target{Model: x.model, ServedBy: "vllm"}}
		switch x.sev {
		case "healthy":
			r.Primary = advisor.Primary{Bottleneck: "none", Status: "healthy", Summary: "No bottleneck above info"}
		case "inconclusive":
			r.Primary = advisor.Primary{Bottleneck: "unknown", Status: "inconclusive", Summary: "deciding checks could not run"}
		default:
			rule := x.bottleneck + "/rule"
			r.Primary = advisor.Primary{Bottleneck: x.bottleneck, Rule: rule, Status: "found", Summary: x.bottleneck + " holds TTFT"}
			r.Findings = []advisor.Finding{{Rule: rule, Severity: x.sev, Bottleneck: x.bottleneck, Title: x.bottleneck + " holds TTFT", Message: "numbers"}}
		}
		d.Targets = append(d.Targets, r)
	}
	return d
}

// fakeWatchDiag stands in for the pipeline: it answers the diagnosis set last.
type fakeWatchDiag struct {
	mu        sync.Mutex
	d         *advisor.Diagnosis
	err       error
	calls     int
	selectors []string
	// hook runs inside each diagnosis (a test blocks or signals there).
	hook func(ctx context.Context) error
}

func (f *fakeWatchDiag) set(ts ...watchTV) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.d, f.err = watchDiagOf(ts...), nil
	if len(ts) == 0 {
		f.d, f.err = nil, &diagnosis.NoTargetError{Why: diagnosis.NoEngineMetrics}
	}
}

func (f *fakeWatchDiag) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.d, f.err = nil, err
}

func (f *fakeWatchDiag) diagnose(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error) {
	f.mu.Lock()
	f.calls++
	f.selectors = append(f.selectors, src.Prom.Options.Selector)
	d, err, hook := f.d, f.err, f.hook
	f.mu.Unlock()
	if hook != nil {
		if err := hook(ctx); err != nil {
			return nil, err
		}
	}
	return d, err
}

func (f *fakeWatchDiag) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func watchBotDest(fs *fakeslack.Server) slackkit.Destination {
	return slackkit.Destination{Token: fakeslack.Token, Channel: fakeslack.Channel, APIURL: fs.APIURL()}
}

// newWatchServer is a server with the watch on, a fake pipeline and no
// pacing between posts.
func newWatchServer(t *testing.T, dest slackkit.Destination, wc WatchConfig) (*Server, *fakeWatchDiag) {
	t.Helper()
	s, err := New(Config{Slack: dest, Watch: &wc})
	if err != nil {
		t.Fatal(err)
	}
	s.watching().pace = 0
	fd := &fakeWatchDiag{}
	s.diag = fd.diagnose
	return s, fd
}

// watchRuns sets each diagnosis in turn and runs the watch once on it.
func watchRuns(t *testing.T, s *Server, fd *fakeWatchDiag, diags ...[]watchTV) {
	t.Helper()
	for _, ts := range diags {
		fd.set(ts...)
		if err := s.watchOnce(context.Background()); err != nil {
			t.Fatalf("run: %v", err)
		}
	}
}

func watchSeq(ts ...watchTV) []watchTV { return ts }

// watchMains are the accepted messages that are not details: top-level ones,
// and thread replies sent to the channel too.
func watchMains(fs *fakeslack.Server) []fakeslack.Request {
	var out []fakeslack.Request
	for _, r := range fs.Accepted() {
		if r.ThreadTS == "" || r.Payload["reply_broadcast"] == "true" {
			out = append(out, r)
		}
	}
	return out
}

func watchText(r fakeslack.Request) string {
	s, _ := r.Payload["text"].(string)
	return s
}

func readWatchState(t *testing.T, path string) *watchState {
	t.Helper()
	st, err := loadWatchState(path)
	if err != nil || st == nil {
		t.Fatalf("state %s: %v %v", path, st, err)
	}
	return st
}

// A change is posted once, after it held for Hold runs; the same verdict
// again posts nothing; later changes go in the first message's thread,
// and the recovery closes it.
func TestWatchChangePostedOnce(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	state := filepath.Join(t.TempDir(), "state.json")
	s, fd := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true, StateFile: state, Selector: `namespace="prod"`})

	watchRuns(t, s, fd, watchSeq(watchM1Healthy, watchM2Healthy)) // cold start, all healthy: nothing to say
	if n := len(fs.Requests()); n != 0 {
		t.Fatalf("a healthy cold start posted %d messages:\n%s", n, fs.Summary())
	}
	watchRuns(t, s, fd, watchSeq(watchQueueCrit, watchM2Healthy)) // seen once: pending
	if n := len(fs.Requests()); n != 0 {
		t.Fatalf("a change seen once was posted (hold 2):\n%s", fs.Summary())
	}
	if st := readWatchState(t, state); st.Targets[watchKey(t, "m1")].Pending == nil || st.Targets[watchKey(t, "m1")].Count != 1 {
		t.Fatalf("the pending change is not in the state file: %+v", st.Targets[watchKey(t, "m1")])
	}
	watchRuns(t, s, fd, watchSeq(watchQueueCrit, watchM2Healthy), watchSeq(watchQueueCrit, watchM2Healthy), watchSeq(watchQueueCrit, watchM2Healthy))
	m := watchMains(fs)
	if len(m) != 1 {
		t.Fatalf("want the change posted once, got:\n%s", fs.Summary())
	}
	if m[0].ThreadTS != "" || !strings.Contains(watchText(m[0]), "Changed from ✓ HEALTHY, for 2 runs") || !strings.Contains(watchText(m[0]), "CRITICAL: queueing") {
		t.Fatalf("first post: thread %q text %q", m[0].ThreadTS, watchText(m[0]))
	}
	root := m[0].TS
	st := readWatchState(t, state)
	if tg := st.Targets[watchKey(t, "m1")]; tg.TS != root || tg.Verdict != (watchVerdict{"queueing", "found", "critical"}) || tg.Pending != nil {
		t.Fatalf("state after the post: %+v", tg)
	}
	raw, _ := os.ReadFile(state)
	for _, want := range []string{`"version": 1`, `"verdict": {`, `"bottleneck": "queueing"`, `"ts": "` + root + `"`, `"channel": "C0LLMDOC"`, `"name": "model m1"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the state file has no %s:\n%s", want, raw)
		}
	}

	// Worse severity, then another bottleneck: replies in the thread,
	// shown in the channel too.
	watchRuns(t, s, fd, watchSeq(watchQueueWarn, watchM2Healthy), watchSeq(watchQueueWarn, watchM2Healthy), watchSeq(watchKvCrit, watchM2Healthy), watchSeq(watchKvCrit, watchM2Healthy))
	m = watchMains(fs)
	if len(m) != 3 {
		t.Fatalf("want 3 posts, got:\n%s", fs.Summary())
	}
	for i, want := range []string{"Changed from ✗ CRITICAL: queueing, for 2 runs", "Changed from ! WARNING: queueing, for 2 runs"} {
		r := m[i+1]
		if r.ThreadTS != root || !strings.Contains(watchText(r), want) {
			t.Errorf("post %d: thread %q (want %q) text %q (want %q)", i+2, r.ThreadTS, root, watchText(r), want)
		}
	}
	// Recovered: a reply in the thread; the thread closes, so the next
	// problem starts a new message.
	watchRuns(t, s, fd, watchSeq(watchM1Healthy, watchM2Healthy), watchSeq(watchM1Healthy, watchM2Healthy), watchSeq(watchQueueCrit, watchM2Healthy), watchSeq(watchQueueCrit, watchM2Healthy))
	m = watchMains(fs)
	if len(m) != 5 {
		t.Fatalf("want 5 posts, got:\n%s", fs.Summary())
	}
	if m[3].ThreadTS != root || !strings.Contains(watchText(m[3]), "Recovered from ✗ CRITICAL: kv-capacity") {
		t.Errorf("recovery: thread %q text %q", m[3].ThreadTS, watchText(m[3]))
	}
	if m[4].ThreadTS != "" || m[4].TS == root {
		t.Errorf("the problem after a recovery should start a new thread: %+v", m[4])
	}
	for _, sel := range fd.selectors {
		if sel != `namespace="prod"` {
			t.Errorf("the watch diagnosed with selector %q", sel)
		}
	}
}

// watchKey is the state's key of a fake target.
func watchKey(t *testing.T, model string) string {
	t.Helper()
	b, err := json.Marshal(evidence.Target{Model: model, ServedBy: "vllm"})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A flap (A, B, A) is not posted with Hold 2, nor a change that changes
// again before it held (B, C); with Hold 1 every change is.
func TestWatchFlapDamped(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true})
	watchRuns(t, s, fd, watchSeq(watchM1Healthy), watchSeq(watchQueueCrit), watchSeq(watchM1Healthy), watchSeq(watchQueueCrit), watchSeq(watchKvCrit), watchSeq(watchQueueWarn), watchSeq(watchM1Healthy))
	if n := len(fs.Requests()); n != 0 {
		t.Fatalf("flapping was posted:\n%s", fs.Summary())
	}
	if tg := s.watching().st.Targets[watchKey(t, "m1")]; tg.Pending != nil {
		t.Errorf("a flap back left a pending change: %+v", tg)
	}

	fs2 := fakeslack.Start()
	defer fs2.Close()
	s, fd = newWatchServer(t, watchBotDest(fs2), WatchConfig{Enabled: true, Hold: 1})
	watchRuns(t, s, fd, watchSeq(watchM1Healthy), watchSeq(watchQueueCrit), watchSeq(watchM1Healthy), watchSeq(watchQueueCrit))
	if n := len(watchMains(fs2)); n != 3 {
		t.Fatalf("hold 1: want 3 posts, got:\n%s", fs2.Summary())
	}
}

// The first run after a cold start posts every target that is not
// healthy, at once; a healthy one is taken silently.
func TestWatchColdStartPostsUnhealthy(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true, StateFile: filepath.Join(t.TempDir(), "state.json")})
	watchRuns(t, s, fd, watchSeq(watchQueueCrit, watchM2Healthy, watchTV{"m3", "", "inconclusive"}))
	m := watchMains(fs)
	if len(m) != 2 {
		t.Fatalf("want m1 and m3 posted, got:\n%s", fs.Summary())
	}
	if !strings.Contains(watchText(m[0]), "Watch started, not healthy now") || !strings.Contains(watchText(m[0]), "model m1") || !strings.Contains(watchText(m[1]), "INCONCLUSIVE") {
		t.Errorf("cold start texts: %q, %q", watchText(m[0]), watchText(m[1]))
	}
	// Later, a new target that is not healthy waits for Hold like any
	// change.
	watchRuns(t, s, fd, watchSeq(watchQueueCrit, watchM2Healthy, watchTV{"m3", "", "inconclusive"}, watchTV{"m4", "decode", "warning"}))
	if n := len(watchMains(fs)); n != 2 {
		t.Fatalf("a new target was posted before it held:\n%s", fs.Summary())
	}
	watchRuns(t, s, fd, watchSeq(watchQueueCrit, watchM2Healthy, watchTV{"m3", "", "inconclusive"}, watchTV{"m4", "decode", "warning"}))
	if m := watchMains(fs); len(m) != 3 || !strings.Contains(watchText(m[2]), "New target, not healthy, for 2 runs") {
		t.Fatalf("the new target:\n%s", fs.Summary())
	}
}

// A restart from the state file posts nothing already posted, and a
// pending change keeps its count; without a state file it is a cold
// start again.
func TestWatchRestartDoesNotRepost(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	state := filepath.Join(t.TempDir(), "state.json")
	s, fd := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true, StateFile: state})
	watchRuns(t, s, fd, watchSeq(watchQueueCrit, watchM2Healthy), watchSeq(watchQueueCrit, watchM2Crit)) // m1 posted cold; m2 pending once
	if n := len(watchMains(fs)); n != 1 {
		t.Fatalf("before the restart:\n%s", fs.Summary())
	}
	fi, err := os.Stat(state)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, mode %v (want 0600)", err, fi.Mode().Perm())
	}

	s2, fd2 := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true, StateFile: state})
	if s2.watching().cold {
		t.Fatal("a start with a state file is a cold start")
	}
	watchRuns(t, s2, fd2, watchSeq(watchQueueCrit, watchM2Crit))
	m := watchMains(fs)
	if len(m) != 2 || !strings.Contains(watchText(m[1]), "model m2") {
		t.Fatalf("after the restart want m2's change only (held across the restart), got:\n%s", fs.Summary())
	}
	watchRuns(t, s2, fd2, watchSeq(watchQueueCrit, watchM2Crit), watchSeq(watchQueueCrit, watchM2Crit))
	if n := len(watchMains(fs)); n != 2 {
		t.Fatalf("re-posted after a restart:\n%s", fs.Summary())
	}
	// A change after the restart replies in the thread the first process
	// started.
	watchRuns(t, s2, fd2, watchSeq(watchQueueWarn, watchM2Crit), watchSeq(watchQueueWarn, watchM2Crit))
	m = watchMains(fs)
	if len(m) != 3 || m[2].ThreadTS != m[0].TS {
		t.Fatalf("the change after a restart is not in the target's thread:\n%s", fs.Summary())
	}
	// No temporary files left beside the state.
	if es, _ := os.ReadDir(filepath.Dir(state)); len(es) != 1 {
		t.Errorf("the state directory holds %d files", len(es))
	}
}

// A state file that cannot be read or is not a state is refused at
// startup, in one line naming it; a missing one is a cold start; an
// unwritable directory is refused too.
func TestWatchStateFileRefused(t *testing.T) {
	dir := t.TempDir()
	dest := slackkit.Destination{WebhookURL: "https://hooks.slack.com/services/T0/B0/x"}
	for name, tc := range map[string]struct {
		body string
		want string
	}{
		"garbage":    {"not json at all", "is corrupt (invalid character"},
		"truncated":  {`{"version":1,"targets":{"a":{"name":"m`, "is corrupt (unexpected end of JSON input at byte 38)"},
		"wrong type": {`{"version":1,"targets":[]}`, "is corrupt (targets holds a array"},
		"version":    {`{"version":7,"targets":{}}`, "has version 7, this llmdoctor reads version 1"},
		"no version": {`{}`, "has version 0"},
		"count":      {`{"version":1,"targets":{"a":{"name":"m","verdict":{"status":"healthy"},"pending":{"status":"found"}}}}`, "pending change without a count"},
		"directory":  {"", "cannot be read: is a directory"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name+".json")
			if name == "directory" {
				os.Mkdir(p, 0o700)
			} else {
				os.WriteFile(p, []byte(tc.body), 0o600)
			}
			_, err := New(Config{Slack: dest, Watch: &WatchConfig{Enabled: true, StateFile: p}})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line naming %s with %q", err, p, tc.want)
			}
			if name != "directory" {
				if b, _ := os.ReadFile(p); string(b) != tc.body {
					t.Errorf("the refused file was changed")
				}
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		s, err := New(Config{Slack: dest, Watch: &WatchConfig{Enabled: true, StateFile: filepath.Join(dir, "new.json")}})
		if err != nil || !s.watching().cold {
			t.Fatalf("a missing state file: %v", err)
		}
	})
	t.Run("no directory", func(t *testing.T) {
		p := filepath.Join(dir, "nowhere", "state.json")
		_, err := New(Config{Slack: dest, Watch: &WatchConfig{Enabled: true, StateFile: p}})
		if err == nil || !strings.Contains(err.Error(), "cannot be written") {
			t.Fatalf("got %v", err)
		}
	})
	if os.Geteuid() != 0 { // root writes anywhere
		t.Run("unreadable", func(t *testing.T) {
			p := filepath.Join(dir, "unreadable.json")
			os.WriteFile(p, []byte(`{"version":1}`), 0o000)
			_, err := New(Config{Slack: dest, Watch: &WatchConfig{Enabled: true, StateFile: p}})
			if err == nil || !strings.Contains(err.Error(), "cannot be read: permission denied") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// Settings the watch cannot work with are refused when the server is
// built.
func TestWatchConfigRefused(t *testing.T) {
	hook := slackkit.Destination{WebhookURL: "https://hooks.slack.com/services/T0/B0/x"}
	for _, tc := range []struct {
		dest slackkit.Destination
		wc   WatchConfig
		want string
	}{
		{slackkit.Destination{}, WatchConfig{Enabled: true}, "watch posts to Slack: no Slack destination"},
		{hook, WatchConfig{Enabled: true, Every: time.Second}, "watch every 1s: give 10s or more"},
		{hook, WatchConfig{Enabled: true, Every: -time.Minute}, "watch every -1m0s: give 10s or more"},
		{hook, WatchConfig{Enabled: true, Hold: -1}, "watch hold -1"},
		{hook, WatchConfig{Enabled: true, Selector: "prod"}, "watch selector"},
	} {
		_, err := New(Config{Slack: tc.dest, Watch: &tc.wc})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.wc, err, tc.want)
		}
	}
	// Off: no watch, and no Slack needed; its settings without it are
	// refused, since they would do nothing.
	s, err := New(Config{Watch: &WatchConfig{}})
	if err != nil || s.cfg.Watch != nil || s.watching() != nil {
		t.Fatalf("watch off: %v %+v", err, s.cfg.Watch)
	}
	_, err = New(Config{Slack: hook, Watch: &WatchConfig{Every: time.Minute, StateFile: "s.json"}})
	if err == nil || err.Error() != "the watch is off, but watch settings are given (every, state file): turn the watch on or leave them out" {
		t.Errorf("settings without the watch: %v", err)
	}
	wc := WatchConfig{Enabled: true}
	s, err = New(Config{Slack: hook, Watch: &wc})
	if err != nil {
		t.Fatal(err)
	}
	if c := s.cfg.Watch; c.Every != 5*time.Minute || c.Hold != 2 {
		t.Errorf("defaults: every %s hold %d", c.Every, c.Hold)
	}
	if wc.w != nil || wc.Every != 0 {
		t.Error("New changed the caller's WatchConfig")
	}
}

// A target that disappears is reported once, after Hold runs; one that
// comes back within Hold is not; a source with no target at all counts
// every target absent; a failed diagnosis counts nothing.
func TestWatchGone(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true})
	watchRuns(t, s, fd, watchSeq(watchQueueCrit, watchM2Healthy)) // m1 posted (cold)
	watchRuns(t, s, fd, watchSeq(watchQueueCrit), watchSeq(watchQueueCrit, watchM2Healthy))
	if n := len(watchMains(fs)); n != 1 {
		t.Fatalf("m2 missing once was reported:\n%s", fs.Summary())
	}
	fd.fail(errors.New("prometheus: connection refused"))
	if err := s.watchOnce(context.Background()); err == nil {
		t.Fatal("a failed diagnosis is not an error")
	}
	watchRuns(t, s, fd, watchSeq(watchM2Healthy))
	fd.fail(errors.New("prometheus: connection refused"))
	s.watchOnce(context.Background())
	if n := len(watchMains(fs)); n != 1 {
		t.Fatalf("a failed diagnosis counted as an absence:\n%s", fs.Summary())
	}
	watchRuns(t, s, fd, watchSeq()) // no target at all: m1 absent twice, m2 once
	m := watchMains(fs)
	if len(m) != 2 || !strings.Contains(watchText(m[1]), "model m1 is gone: not in the last 2 diagnoses (5m apart)") || !strings.Contains(watchText(m[1]), "it was ✗ CRITICAL: queueing") {
		t.Fatalf("want m1 reported gone:\n%s", fs.Summary())
	}
	if m[1].ThreadTS != m[0].TS {
		t.Errorf("gone is not in the target's thread")
	}
	watchRuns(t, s, fd, watchSeq(), watchSeq(), watchSeq())
	m = watchMains(fs)
	if len(m) != 3 || !strings.Contains(watchText(m[2]), "model m2 is gone") || m[2].ThreadTS != "" {
		t.Fatalf("want m2 (healthy, never posted) reported gone once, at top level:\n%s", fs.Summary())
	}
	if n := len(s.watching().st.Targets); n != 0 {
		t.Errorf("gone targets are still in the state: %d", n)
	}
}

// A post Slack refuses is tried again next run; its state stays pending.
func TestWatchFailedPostRetried(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true})
	fs.Queue(fakeslack.WebAPIError("invalid_auth"))
	fd.set(watchQueueCrit)
	if err := s.watchOnce(context.Background()); err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Fatalf("a refused post: %v", err)
	}
	if len(fs.Accepted()) != 0 {
		t.Fatal("accepted")
	}
	watchRuns(t, s, fd, watchSeq(watchQueueCrit))
	if m := watchMains(fs); len(m) != 1 || !strings.Contains(watchText(m[0]), "CRITICAL: queueing") {
		t.Fatalf("the refused post was not tried again:\n%s", fs.Summary())
	}
	watchRuns(t, s, fd, watchSeq(watchQueueCrit))
	if n := len(watchMains(fs)); n != 1 {
		t.Fatalf("posted twice:\n%s", fs.Summary())
	}
}

// With a webhook there is no thread: every post is a message of its own,
// without details.
func TestWatchWebhook(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, slackkit.Destination{WebhookURL: fs.WebhookURL()}, WatchConfig{Enabled: true, Hold: 1})
	watchRuns(t, s, fd, watchSeq(watchQueueCrit), watchSeq(watchKvCrit), watchSeq(watchM1Healthy))
	if got := fs.Summary(); strings.Count(got, "webhook") != 3 || strings.Contains(got, "reply") || strings.Contains(got, "→ 4") {
		t.Fatalf("webhook posts:\n%s", got)
	}
	if tg := s.watching().st.Targets[watchKey(t, "m1")]; tg.TS != "" {
		t.Errorf("a webhook left a thread: %+v", tg)
	}
}

// A thread whose first message was deleted: the update starts a new one.
func TestWatchThreadGone(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true, Hold: 1})
	watchRuns(t, s, fd, watchSeq(watchQueueCrit))
	s.watching().st.Targets[watchKey(t, "m1")].TS = "1767225600.999999" // not a message the fake knows
	watchRuns(t, s, fd, watchSeq(watchKvCrit))
	m := watchMains(fs)
	if len(m) != 2 || m[1].ThreadTS != "" {
		t.Fatalf("want the update as a new message:\n%s", fs.Summary())
	}
	if tg := s.watching().st.Targets[watchKey(t, "m1")]; tg.TS != m[1].TS {
		t.Errorf("the new thread is not remembered: %+v", tg)
	}
}

// The loop runs once at start, then once per tick of a ticker of Every,
// and stops with the server.
func TestWatchLoopEvery(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true, Every: 7 * time.Minute})
	fd.set(watchM1Healthy)
	ticks := make(chan time.Time)
	var asked time.Duration
	stopped := make(chan struct{})
	s.watching().newTicker = func(d time.Duration) (<-chan time.Time, func()) {
		asked = d
		return ticks, func() { close(stopped) }
	}
	ran := make(chan struct{}, 10)
	fd.hook = func(context.Context) error { ran <- struct{}{}; return nil }
	ctx, cancel := context.WithCancel(context.Background())
	done := watchServe(t, s, ctx)
	<-ran
	for i := 0; i < 3; i++ {
		ticks <- time.Now()
		<-ran
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-stopped
	if asked != 7*time.Minute || fd.count() != 4 {
		t.Fatalf("ticker of %s, %d runs; want 7m0s and 4", asked, fd.count())
	}
}

func watchServe(t *testing.T, s *Server, ctx context.Context) chan error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	return done
}

// watchHoldTransport holds every request until released, saying when one
// started.
type watchHoldTransport struct {
	started chan struct{}
	release chan struct{}
}

func (h *watchHoldTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.started <- struct{}{}
	<-h.release
	return http.DefaultTransport.RoundTrip(r)
}

// A shutdown while a run is posting lets the post finish and the state be
// saved, so that the next start does not post it again; a shutdown while
// diagnosing posts nothing.
func TestWatchShutdownFinishesPost(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	state := filepath.Join(t.TempDir(), "state.json")
	ht := &watchHoldTransport{started: make(chan struct{}, 10), release: make(chan struct{})}
	dest := watchBotDest(fs)
	dest.Client = &http.Client{Transport: ht}
	s, fd := newWatchServer(t, dest, WatchConfig{Enabled: true, StateFile: state})
	fd.set(watchQueueCrit)
	ctx, cancel := context.WithCancel(context.Background())
	done := watchServe(t, s, ctx)
	<-ht.started // the cold start's post is on its way
	cancel()
	time.Sleep(50 * time.Millisecond) // shutdown has begun
	close(ht.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := watchMains(fs); len(m) != 1 {
		t.Fatalf("the post in flight at shutdown did not finish:\n%s", fs.Summary())
	}
	if tg := readWatchState(t, state).Targets[watchKey(t, "m1")]; tg.PostedAt.IsZero() || tg.TS == "" {
		t.Fatalf("the post is not in the state: %+v", tg)
	}

	// Shutdown during the diagnosis: nothing posted, nothing counted.
	s2, fd2 := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true, StateFile: state})
	fd2.set(watchKvCrit)
	inDiag := make(chan struct{})
	fd2.hook = func(ctx context.Context) error { close(inDiag); <-ctx.Done(); return ctx.Err() }
	ctx, cancel = context.WithCancel(context.Background())
	done = watchServe(t, s2, ctx)
	<-inDiag
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(watchMains(fs)); n != 1 {
		t.Fatalf("posted after a shutdown during the diagnosis:\n%s", fs.Summary())
	}
	if tg := readWatchState(t, state).Targets[watchKey(t, "m1")]; tg.Pending != nil {
		t.Errorf("an abandoned run counted: %+v", tg)
	}
}

// The pure comparison, run by run, for the record.
func TestWatchStepTable(t *testing.T) {
	crit := watchVerdict{"queueing", "found", "critical"}
	ok := watchVerdict{"none", "healthy", ""}
	kv := watchVerdict{"kv-capacity", "found", "critical"}
	for _, tc := range []struct {
		name string
		hold int
		seq  []watchVerdict
		want string // one letter per run: . nothing, P posted
	}{
		{"steady", 2, []watchVerdict{crit, crit, crit}, "P.."},
		{"change held", 2, []watchVerdict{ok, crit, crit, crit}, "..P."},
		{"flap", 2, []watchVerdict{ok, crit, ok, crit, ok}, "....."},
		{"hold 3", 3, []watchVerdict{ok, crit, crit, crit, crit}, "...P."},
		{"change of change", 2, []watchVerdict{crit, kv, ok, ok}, "P..P"},
		{"hold 1", 1, []watchVerdict{ok, crit, ok}, ".PP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newWatchState()
			now := time.Unix(1767225600, 0)
			var got strings.Builder
			for i, v := range tc.seq {
				acts := st.step([]watchObservation{{key: "k", v: v}}, tc.hold, i == 0, now)
				for _, a := range acts {
					st.posted(a, "", "", now)
				}
				got.WriteString(map[bool]string{true: "P", false: "."}[len(acts) > 0])
			}
			if got.String() != tc.want {
				t.Errorf("got %s, want %s", got.String(), tc.want)
			}
		})
	}
}

// On real diagnoses of the shipped examples (the same model queueing,
// then short of KV cache, then healthy; then another model, and the first
// gone), the watch posts the
// renderer's messages with its line before them, each within Slack's
// limits as the fake Slack checks them.
func TestWatchRealDiagnoses(t *testing.T) {
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	fs := fakeslack.Start()
	defer fs.Close()
	s, _ := newWatchServer(t, watchBotDest(fs), WatchConfig{Enabled: true, Hold: 1})
	example := ""
	s.diag = func(ctx context.Context, _ diagnosis.Sources) (*advisor.Diagnosis, error) {
		dir := filepath.Join("..", "examples", example)
		return diagnosis.Run(ctx, diagnosis.Sources{Snapshots: []string{filepath.Join(dir, "start.prom"), filepath.Join(dir, "end.prom")},
			SnapshotInterval: 15 * time.Minute}, set, nil, nil)
	}
	for _, example = range []string{"queueing", "kv-capacity", "kv-capacity", "healthy", "decode"} {
		if err := s.watchOnce(context.Background()); err != nil {
			t.Fatalf("%s: %v", example, err)
		}
	}
	for _, r := range fs.Requests() {
		if r.Code != "" || len(r.Problems) > 0 {
			t.Errorf("refused: %+v", r)
		}
	}
	var got []string
	for _, r := range watchMains(fs) {
		line, _, _ := strings.Cut(watchText(r), ": ")
		got = append(got, line)
	}
	want := []string{
		"Watch started, not healthy now · llmdoctor",
		"Changed from ✗ CRITICAL",
		"Recovered from ✗ CRITICAL",
		"New target, not healthy · llmdoctor",
		"llmdoctor watch",
	}
	if len(got) != len(want) {
		t.Fatalf("posts:\n%s\n%q", fs.Summary(), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("post %d starts %q, want %q", i+1, got[i], want[i])
		}
	}
	if !strings.Contains(watchText(watchMains(fs)[1]), "kv-capacity") || !strings.Contains(fs.Summary(), "reply to #1") {
		t.Errorf("the change is not kv-capacity in the first message's thread:\n%s", fs.Summary())
	}
}
