package watch

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/serve/core"
	"github.com/llmdoctor/llmdoctor/serve/watch/watchtest"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// The watch through the server (its runs kept for the report pages, its
// messages linking to them, its loop stopped by the server's shutdown) is
// tested in serve; these tests run it on a fake server.

// testHost is a server of one diagnosis slot that answers every diagnosis
// with diag, renders messages without links, and posts to dest.
type testHost struct {
	core.Host
	dest slackkit.Destination
	diag func(ctx context.Context, src diagnosis.Sources) (*advisor.Diagnosis, error)
	sem  chan struct{}
}

func (h *testHost) Acquire() (func(), bool) {
	select {
	case h.sem <- struct{}{}:
		return func() { <-h.sem }, true
	default:
		return nil, false
	}
}

func (h *testHost) DiagnoseHeld(ctx context.Context, req core.Request) (*advisor.Diagnosis, []core.RunRef, error) {
	if h.diag == nil {
		return nil, nil, errors.New("no pipeline")
	}
	d, err := h.diag(ctx, diagnosis.Sources{Prom: &diagnosis.PromSource{Options: prom.Options{Selector: req.Selector}}})
	return d, nil, err
}

func (h *testHost) SlackMessages(d *advisor.Diagnosis, _ []core.RunRef, o report.SlackOptions) []slackkit.Message {
	var out []slackkit.Message
	for i := range d.Targets {
		one := *d
		one.Targets = d.Targets[i : i+1 : i+1]
		out = append(out, report.SlackDiagnosis(&one, o)...)
	}
	return out
}

func (h *testHost) Post(ctx context.Context, msgs []slackkit.Message) ([]slackkit.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, core.PostDeadline)
	defer cancel()
	return (&slackkit.Poster{Dest: h.dest}).Post(ctx, msgs)
}

func (h *testHost) Slack() slackkit.Destination { return h.dest }
func (h *testHost) Now() time.Time              { return time.Now() }
func (h *testHost) Log() *slog.Logger           { return slog.New(slog.DiscardHandler) }
func (h *testHost) ExternalURL() string         { return "" }

func newHost(dest slackkit.Destination) *testHost {
	return &testHost{dest: dest, sem: make(chan struct{}, 1)}
}

// newWatchServer is a watch on a fake server with a fake pipeline and no
// pacing between posts.
func newWatchServer(t *testing.T, dest slackkit.Destination, wc Config) (*Watcher, *watchtest.FakeDiag) {
	t.Helper()
	h := newHost(dest)
	w, err := Register(h, &wc)
	if err != nil {
		t.Fatal(err)
	}
	w.SetPace(0)
	fd := &watchtest.FakeDiag{}
	h.diag = fd.Diagnose
	return w, fd
}

// watchRuns sets each diagnosis in turn and runs the watch once on it.
func watchRuns(t *testing.T, w *Watcher, fd *watchtest.FakeDiag, diags ...[]watchtest.TV) {
	t.Helper()
	for _, ts := range diags {
		fd.Set(ts...)
		if err := w.Once(context.Background()); err != nil {
			t.Fatalf("run: %v", err)
		}
	}
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
	s, fd := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true, StateFile: state, Selector: `namespace="prod"`})

	watchRuns(t, s, fd, watchtest.Seq(watchtest.M1Healthy, watchtest.M2Healthy)) // cold start, all healthy: nothing to say
	if n := len(fs.Requests()); n != 0 {
		t.Fatalf("a healthy cold start posted %d messages:\n%s", n, fs.Summary())
	}
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy)) // seen once: pending
	if n := len(fs.Requests()); n != 0 {
		t.Fatalf("a change seen once was posted (hold 2):\n%s", fs.Summary())
	}
	if st := readWatchState(t, state); st.Targets[watchKey(t, "m1")].Pending == nil || st.Targets[watchKey(t, "m1")].Count != 1 {
		t.Fatalf("the pending change is not in the state file: %+v", st.Targets[watchKey(t, "m1")])
	}
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy), watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy), watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy))
	m := watchtest.Mains(fs)
	if len(m) != 1 {
		t.Fatalf("want the change posted once, got:\n%s", fs.Summary())
	}
	if m[0].ThreadTS != "" || !strings.Contains(watchtest.Text(m[0]), "Changed from ✓ HEALTHY, for 2 runs") || !strings.Contains(watchtest.Text(m[0]), "CRITICAL: queueing") {
		t.Fatalf("first post: thread %q text %q", m[0].ThreadTS, watchtest.Text(m[0]))
	}
	root := m[0].TS
	st := readWatchState(t, state)
	if tg := st.Targets[watchKey(t, "m1")]; tg.TS != root || tg.Verdict != (core.Verdict{Bottleneck: "queueing", Status: "found", Severity: "critical"}) || tg.Pending != nil {
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
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueWarn, watchtest.M2Healthy), watchtest.Seq(watchtest.QueueWarn, watchtest.M2Healthy), watchtest.Seq(watchtest.KvCrit, watchtest.M2Healthy), watchtest.Seq(watchtest.KvCrit, watchtest.M2Healthy))
	m = watchtest.Mains(fs)
	if len(m) != 3 {
		t.Fatalf("want 3 posts, got:\n%s", fs.Summary())
	}
	for i, want := range []string{"Changed from ✗ CRITICAL: queueing, for 2 runs", "Changed from ! WARNING: queueing, for 2 runs"} {
		r := m[i+1]
		if r.ThreadTS != root || !strings.Contains(watchtest.Text(r), want) {
			t.Errorf("post %d: thread %q (want %q) text %q (want %q)", i+2, r.ThreadTS, root, watchtest.Text(r), want)
		}
	}
	// Recovered: a reply in the thread; the thread closes, so the next
	// problem starts a new message.
	watchRuns(t, s, fd, watchtest.Seq(watchtest.M1Healthy, watchtest.M2Healthy), watchtest.Seq(watchtest.M1Healthy, watchtest.M2Healthy), watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy), watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy))
	m = watchtest.Mains(fs)
	if len(m) != 5 {
		t.Fatalf("want 5 posts, got:\n%s", fs.Summary())
	}
	if m[3].ThreadTS != root || !strings.Contains(watchtest.Text(m[3]), "Recovered from ✗ CRITICAL: kv-capacity") {
		t.Errorf("recovery: thread %q text %q", m[3].ThreadTS, watchtest.Text(m[3]))
	}
	if m[4].ThreadTS != "" || m[4].TS == root {
		t.Errorf("the problem after a recovery should start a new thread: %+v", m[4])
	}
	for _, sel := range fd.Selectors() {
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
	s, fd := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true})
	watchRuns(t, s, fd, watchtest.Seq(watchtest.M1Healthy), watchtest.Seq(watchtest.QueueCrit), watchtest.Seq(watchtest.M1Healthy), watchtest.Seq(watchtest.QueueCrit), watchtest.Seq(watchtest.KvCrit), watchtest.Seq(watchtest.QueueWarn), watchtest.Seq(watchtest.M1Healthy))
	if n := len(fs.Requests()); n != 0 {
		t.Fatalf("flapping was posted:\n%s", fs.Summary())
	}
	if tg := s.st.Targets[watchKey(t, "m1")]; tg.Pending != nil {
		t.Errorf("a flap back left a pending change: %+v", tg)
	}

	fs2 := fakeslack.Start()
	defer fs2.Close()
	s, fd = newWatchServer(t, watchtest.BotDest(fs2), Config{Enabled: true, Hold: 1})
	watchRuns(t, s, fd, watchtest.Seq(watchtest.M1Healthy), watchtest.Seq(watchtest.QueueCrit), watchtest.Seq(watchtest.M1Healthy), watchtest.Seq(watchtest.QueueCrit))
	if n := len(watchtest.Mains(fs2)); n != 3 {
		t.Fatalf("hold 1: want 3 posts, got:\n%s", fs2.Summary())
	}
}

// The first run after a cold start posts every target that is not
// healthy, at once; a healthy one is taken silently.
func TestWatchColdStartPostsUnhealthy(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true, StateFile: filepath.Join(t.TempDir(), "state.json")})
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy, watchtest.TV{Model: "m3", Bottleneck: "", Sev: "inconclusive"}))
	m := watchtest.Mains(fs)
	if len(m) != 2 {
		t.Fatalf("want m1 and m3 posted, got:\n%s", fs.Summary())
	}
	if !strings.Contains(watchtest.Text(m[0]), "Watch started, not healthy now") || !strings.Contains(watchtest.Text(m[0]), "model m1") || !strings.Contains(watchtest.Text(m[1]), "INCONCLUSIVE") {
		t.Errorf("cold start texts: %q, %q", watchtest.Text(m[0]), watchtest.Text(m[1]))
	}
	// Later, a new target that is not healthy waits for Hold like any
	// change.
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy, watchtest.TV{Model: "m3", Bottleneck: "", Sev: "inconclusive"}, watchtest.TV{Model: "m4", Bottleneck: "decode", Sev: "warning"}))
	if n := len(watchtest.Mains(fs)); n != 2 {
		t.Fatalf("a new target was posted before it held:\n%s", fs.Summary())
	}
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy, watchtest.TV{Model: "m3", Bottleneck: "", Sev: "inconclusive"}, watchtest.TV{Model: "m4", Bottleneck: "decode", Sev: "warning"}))
	if m := watchtest.Mains(fs); len(m) != 3 || !strings.Contains(watchtest.Text(m[2]), "New target, not healthy, for 2 runs") {
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
	s, fd := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true, StateFile: state})
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy), watchtest.Seq(watchtest.QueueCrit, watchtest.M2Crit)) // m1 posted cold; m2 pending once
	if n := len(watchtest.Mains(fs)); n != 1 {
		t.Fatalf("before the restart:\n%s", fs.Summary())
	}
	fi, err := os.Stat(state)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, mode %v (want 0600)", err, fi.Mode().Perm())
	}

	s2, fd2 := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true, StateFile: state})
	if s2.cold {
		t.Fatal("a start with a state file is a cold start")
	}
	watchRuns(t, s2, fd2, watchtest.Seq(watchtest.QueueCrit, watchtest.M2Crit))
	m := watchtest.Mains(fs)
	if len(m) != 2 || !strings.Contains(watchtest.Text(m[1]), "model m2") {
		t.Fatalf("after the restart want m2's change only (held across the restart), got:\n%s", fs.Summary())
	}
	watchRuns(t, s2, fd2, watchtest.Seq(watchtest.QueueCrit, watchtest.M2Crit), watchtest.Seq(watchtest.QueueCrit, watchtest.M2Crit))
	if n := len(watchtest.Mains(fs)); n != 2 {
		t.Fatalf("re-posted after a restart:\n%s", fs.Summary())
	}
	// A change after the restart replies in the thread the first process
	// started.
	watchRuns(t, s2, fd2, watchtest.Seq(watchtest.QueueWarn, watchtest.M2Crit), watchtest.Seq(watchtest.QueueWarn, watchtest.M2Crit))
	m = watchtest.Mains(fs)
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
			var err error
			if name == "directory" {
				err = os.Mkdir(p, 0o700)
			} else {
				err = os.WriteFile(p, []byte(tc.body), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = Register(newHost(dest), &Config{Enabled: true, StateFile: p})
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
		s, err := Register(newHost(dest), &Config{Enabled: true, StateFile: filepath.Join(dir, "new.json")})
		if err != nil || !s.cold {
			t.Fatalf("a missing state file: %v", err)
		}
	})
	t.Run("no directory", func(t *testing.T) {
		p := filepath.Join(dir, "nowhere", "state.json")
		_, err := Register(newHost(dest), &Config{Enabled: true, StateFile: p})
		if err == nil || !strings.Contains(err.Error(), "cannot be written") {
			t.Fatalf("got %v", err)
		}
	})
	if os.Geteuid() != 0 { // root writes anywhere
		t.Run("unreadable", func(t *testing.T) {
			p := filepath.Join(dir, "unreadable.json")
			if err := os.WriteFile(p, []byte(`{"version":1}`), 0o000); err != nil {
				t.Fatal(err)
			}
			_, err := Register(newHost(dest), &Config{Enabled: true, StateFile: p})
			if err == nil || !strings.Contains(err.Error(), "cannot be read: permission denied") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// Settings the watch cannot work with are refused when the server is
// built.
func TestConfigRefused(t *testing.T) {
	hook := slackkit.Destination{WebhookURL: "https://hooks.slack.com/services/T0/B0/x"}
	for _, tc := range []struct {
		dest slackkit.Destination
		wc   Config
		want string
	}{
		{slackkit.Destination{}, Config{Enabled: true}, "watch posts to Slack: no Slack destination"},
		{hook, Config{Enabled: true, Every: time.Second}, "watch every 1s: give 10s or more"},
		{hook, Config{Enabled: true, Every: -time.Minute}, "watch every -1m0s: give 10s or more"},
		{hook, Config{Enabled: true, Hold: -1}, "watch hold -1"},
		{hook, Config{Enabled: true, Selector: "prod"}, "watch selector"},
	} {
		_, err := Register(newHost(tc.dest), &tc.wc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.wc, err, tc.want)
		}
	}
	// Off: no watch, and no Slack needed; its settings without it are
	// refused, since they would do nothing.
	s, err := Register(newHost(slackkit.Destination{}), &Config{})
	if err != nil || s != nil {
		t.Fatalf("watch off: %v %+v", err, s)
	}
	_, err = Register(newHost(hook), &Config{Every: time.Minute, StateFile: "s.json"})
	if err == nil || err.Error() != "the watch is off, but watch settings are given (every, state file): turn the watch on or leave them out" {
		t.Errorf("settings without the watch: %v", err)
	}
	wc := Config{Enabled: true}
	s, err = Register(newHost(hook), &wc)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.cfg; c.Every != 5*time.Minute || c.Hold != 2 {
		t.Errorf("defaults: every %s hold %d", c.Every, c.Hold)
	}
	if wc.Every != 0 {
		t.Error("Register changed the caller's Config")
	}
}

// A target that disappears is reported once, after Hold runs; one that
// comes back within Hold is not; a source with no target at all counts
// every target absent; a failed diagnosis counts nothing.
func TestWatchGone(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true})
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy)) // m1 posted (cold)
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit), watchtest.Seq(watchtest.QueueCrit, watchtest.M2Healthy))
	if n := len(watchtest.Mains(fs)); n != 1 {
		t.Fatalf("m2 missing once was reported:\n%s", fs.Summary())
	}
	fd.Fail(errors.New("prometheus: connection refused"))
	if err := s.Once(context.Background()); err == nil {
		t.Fatal("a failed diagnosis is not an error")
	}
	watchRuns(t, s, fd, watchtest.Seq(watchtest.M2Healthy))
	fd.Fail(errors.New("prometheus: connection refused"))
	if err := s.Once(context.Background()); err == nil {
		t.Fatal("a failed diagnosis is not an error")
	}
	if n := len(watchtest.Mains(fs)); n != 1 {
		t.Fatalf("a failed diagnosis counted as an absence:\n%s", fs.Summary())
	}
	watchRuns(t, s, fd, watchtest.Seq()) // no target at all: m1 absent twice, m2 once
	m := watchtest.Mains(fs)
	if len(m) != 2 || !strings.Contains(watchtest.Text(m[1]), "model m1 is gone: not in the last 2 diagnoses (5m apart)") || !strings.Contains(watchtest.Text(m[1]), "it was ✗ CRITICAL: queueing") {
		t.Fatalf("want m1 reported gone:\n%s", fs.Summary())
	}
	if m[1].ThreadTS != m[0].TS {
		t.Errorf("gone is not in the target's thread")
	}
	watchRuns(t, s, fd, watchtest.Seq(), watchtest.Seq(), watchtest.Seq())
	m = watchtest.Mains(fs)
	if len(m) != 3 || !strings.Contains(watchtest.Text(m[2]), "model m2 is gone") || m[2].ThreadTS != "" {
		t.Fatalf("want m2 (healthy, never posted) reported gone once, at top level:\n%s", fs.Summary())
	}
	if n := len(s.st.Targets); n != 0 {
		t.Errorf("gone targets are still in the state: %d", n)
	}
}

// A post Slack refuses is tried again next run; its state stays pending.
func TestWatchFailedPostRetried(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true})
	fs.Queue(fakeslack.WebAPIError("invalid_auth"))
	fd.Set(watchtest.QueueCrit)
	if err := s.Once(context.Background()); err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Fatalf("a refused post: %v", err)
	}
	if len(fs.Accepted()) != 0 {
		t.Fatal("accepted")
	}
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit))
	if m := watchtest.Mains(fs); len(m) != 1 || !strings.Contains(watchtest.Text(m[0]), "CRITICAL: queueing") {
		t.Fatalf("the refused post was not tried again:\n%s", fs.Summary())
	}
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit))
	if n := len(watchtest.Mains(fs)); n != 1 {
		t.Fatalf("posted twice:\n%s", fs.Summary())
	}
}

// With a webhook there is no thread: every post is a message of its own,
// without details.
func TestWatchWebhook(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, slackkit.Destination{WebhookURL: fs.WebhookURL()}, Config{Enabled: true, Hold: 1})
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit), watchtest.Seq(watchtest.KvCrit), watchtest.Seq(watchtest.M1Healthy))
	if got := fs.Summary(); strings.Count(got, "webhook") != 3 || strings.Contains(got, "reply") || strings.Contains(got, "→ 4") {
		t.Fatalf("webhook posts:\n%s", got)
	}
	if tg := s.st.Targets[watchKey(t, "m1")]; tg.TS != "" {
		t.Errorf("a webhook left a thread: %+v", tg)
	}
}

// A thread whose first message was deleted: the update starts a new one.
func TestWatchThreadGone(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true, Hold: 1})
	watchRuns(t, s, fd, watchtest.Seq(watchtest.QueueCrit))
	s.st.Targets[watchKey(t, "m1")].TS = "1767225600.999999" // not a message the fake knows
	watchRuns(t, s, fd, watchtest.Seq(watchtest.KvCrit))
	m := watchtest.Mains(fs)
	if len(m) != 2 || m[1].ThreadTS != "" {
		t.Fatalf("want the update as a new message:\n%s", fs.Summary())
	}
	if tg := s.st.Targets[watchKey(t, "m1")]; tg.TS != m[1].TS {
		t.Errorf("the new thread is not remembered: %+v", tg)
	}
}

// The loop runs once at start, then once per tick of a ticker of Every,
// and stops with the server.
func TestWatchLoopEvery(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	s, fd := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true, Every: 7 * time.Minute})
	fd.Set(watchtest.M1Healthy)
	ticks := make(chan time.Time)
	var asked time.Duration
	stopped := make(chan struct{})
	s.newTicker = func(d time.Duration) (<-chan time.Time, func()) {
		asked = d
		return ticks, func() { close(stopped) }
	}
	ran := make(chan struct{}, 10)
	fd.Hook = func(context.Context) error { ran <- struct{}{}; return nil }
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
	if asked != 7*time.Minute || fd.Count() != 4 {
		t.Fatalf("ticker of %s, %d runs; want 7m0s and 4", asked, fd.Count())
	}
}

// watchServe runs the watch until ctx ends, as the server does; the
// channel says it returned.
func watchServe(t *testing.T, w *Watcher, ctx context.Context) chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { w.Run(ctx); done <- nil }()
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
	dest := watchtest.BotDest(fs)
	dest.Client = &http.Client{Transport: ht}
	s, fd := newWatchServer(t, dest, Config{Enabled: true, StateFile: state})
	fd.Set(watchtest.QueueCrit)
	ctx, cancel := context.WithCancel(context.Background())
	done := watchServe(t, s, ctx)
	<-ht.started // the cold start's post is on its way
	cancel()
	time.Sleep(50 * time.Millisecond) // shutdown has begun
	close(ht.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := watchtest.Mains(fs); len(m) != 1 {
		t.Fatalf("the post in flight at shutdown did not finish:\n%s", fs.Summary())
	}
	if tg := readWatchState(t, state).Targets[watchKey(t, "m1")]; tg.PostedAt.IsZero() || tg.TS == "" {
		t.Fatalf("the post is not in the state: %+v", tg)
	}

	// Shutdown during the diagnosis: nothing posted, nothing counted.
	s2, fd2 := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true, StateFile: state})
	fd2.Set(watchtest.KvCrit)
	inDiag := make(chan struct{})
	fd2.Hook = func(ctx context.Context) error { close(inDiag); <-ctx.Done(); return ctx.Err() }
	ctx, cancel = context.WithCancel(context.Background())
	done = watchServe(t, s2, ctx)
	<-inDiag
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(watchtest.Mains(fs)); n != 1 {
		t.Fatalf("posted after a shutdown during the diagnosis:\n%s", fs.Summary())
	}
	if tg := readWatchState(t, state).Targets[watchKey(t, "m1")]; tg.Pending != nil {
		t.Errorf("an abandoned run counted: %+v", tg)
	}
}

// The pure comparison, run by run, for the record.
func TestWatchStepTable(t *testing.T) {
	crit := core.Verdict{Bottleneck: "queueing", Status: "found", Severity: "critical"}
	ok := core.Verdict{Bottleneck: "none", Status: "healthy", Severity: ""}
	kv := core.Verdict{Bottleneck: "kv-capacity", Status: "found", Severity: "critical"}
	for _, tc := range []struct {
		name string
		hold int
		seq  []core.Verdict
		want string // one letter per run: . nothing, P posted
	}{
		{"steady", 2, []core.Verdict{crit, crit, crit}, "P.."},
		{"change held", 2, []core.Verdict{ok, crit, crit, crit}, "..P."},
		{"flap", 2, []core.Verdict{ok, crit, ok, crit, ok}, "....."},
		{"hold 3", 3, []core.Verdict{ok, crit, crit, crit, crit}, "...P."},
		{"change of change", 2, []core.Verdict{crit, kv, ok, ok}, "P..P"},
		{"hold 1", 1, []core.Verdict{ok, crit, ok}, ".PP"},
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
	s, _ := newWatchServer(t, watchtest.BotDest(fs), Config{Enabled: true, Hold: 1})
	example := ""
	s.h.(*testHost).diag = func(ctx context.Context, _ diagnosis.Sources) (*advisor.Diagnosis, error) {
		dir := filepath.Join("..", "..", "examples", example)
		return diagnosis.Run(ctx, diagnosis.Sources{Snapshots: []string{filepath.Join(dir, "start.prom"), filepath.Join(dir, "end.prom")},
			SnapshotInterval: 15 * time.Minute}, set, nil, nil)
	}
	for _, example = range []string{"queueing", "kv-capacity", "kv-capacity", "healthy", "decode"} {
		if err := s.Once(context.Background()); err != nil {
			t.Fatalf("%s: %v", example, err)
		}
	}
	for _, r := range fs.Requests() {
		if r.Code != "" || len(r.Problems) > 0 {
			t.Errorf("refused: %+v", r)
		}
	}
	var got []string
	for _, r := range watchtest.Mains(fs) {
		line, _, _ := strings.Cut(watchtest.Text(r), ": ")
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
	if !strings.Contains(watchtest.Text(watchtest.Mains(fs)[1]), "kv-capacity") || !strings.Contains(fs.Summary(), "reply to #1") {
		t.Errorf("the change is not kv-capacity in the first message's thread:\n%s", fs.Summary())
	}
}
