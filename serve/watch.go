package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// WatchConfig configures watch-and-post: every Every, one diagnosis of
// every target of the source; a target's verdict (bottleneck, status and
// severity) is posted to Slack when it changed and the change held for
// Hold consecutive runs.
type WatchConfig struct {
	// Enabled turns the watch on; the server runs no watch without it, and
	// refuses the other settings then, which would do nothing.
	Enabled bool
	// Every is how often the source is diagnosed (default 5m, at least
	// 10s).
	Every time.Duration
	// Hold is how many consecutive runs a change must be seen in before it
	// is posted (default 2); 1 posts a change at once.
	Hold int
	// StateFile keeps what was posted across restarts, so that a restart
	// never posts it again. "" keeps it in memory only: every start is a
	// cold start.
	StateFile string
	// Selector is added to the server's selector for the watch's
	// diagnoses only (`namespace="prod"`).
	Selector string

	// w is the running watch, on the server's own copy of the config.
	w *watcher
}

// Defaults and bounds of the watch.
const (
	DefaultWatchEvery = 5 * time.Minute
	DefaultWatchHold  = 2
	minWatchEvery     = 10 * time.Second
	// watchPace is the gap between two targets' posts: Slack takes about
	// one message a second per channel.
	watchPace = time.Second
	// watchGrace is how long the posts of a run may go on once shutdown
	// began; the server waits 30s for background work in all.
	watchGrace = 20 * time.Second
)

// watcher is the watch's running state.
type watcher struct {
	cfg  WatchConfig
	dest slackkit.Destination

	mu sync.Mutex
	st *watchState
	// cold: no state was loaded and no run has compared yet; the first
	// run posts every target that is not healthy at once.
	cold bool

	// newTicker, pace and grace are replaced by tests.
	newTicker func(time.Duration) (<-chan time.Time, func())
	pace      time.Duration
	grace     time.Duration
	lastPost  time.Time
}

// registerWatch checks the watch's configuration and loads its state: a
// state file that cannot be read, is corrupt, or whose directory takes no
// new file is an error here, at startup.
func (s *Server) registerWatch() error {
	if s.cfg.Watch == nil {
		return nil
	}
	c := *s.cfg.Watch
	c.w = nil
	if !c.Enabled {
		s.cfg.Watch = nil
		var given []string
		for _, x := range []struct {
			name string
			set  bool
		}{{"every", c.Every != 0}, {"hold", c.Hold != 0}, {"state file", c.StateFile != ""}, {"selector", c.Selector != ""}} {
			if x.set {
				given = append(given, x.name)
			}
		}
		if len(given) > 0 {
			return fmt.Errorf("the watch is off, but watch settings are given (%s): turn the watch on or leave them out", strings.Join(given, ", "))
		}
		return nil
	}
	switch {
	case c.Every == 0:
		c.Every = DefaultWatchEvery
	case c.Every < minWatchEvery:
		return fmt.Errorf("watch every %s: give %s or more", c.Every, minWatchEvery)
	}
	switch {
	case c.Hold == 0:
		c.Hold = DefaultWatchHold
	case c.Hold < 0:
		return fmt.Errorf("watch hold %d: a change must hold for 1 run or more", c.Hold)
	}
	if _, err := prom.ParseMatchers(c.Selector); err != nil {
		return fmt.Errorf("watch selector %w", err)
	}
	if err := s.cfg.Slack.Validate(); err != nil {
		return fmt.Errorf("watch posts to Slack: %v", err)
	}
	w := &watcher{
		cfg:       c,
		dest:      s.cfg.Slack,
		newTicker: watchTicker,
		pace:      watchPace,
		grace:     watchGrace,
	}
	if c.StateFile != "" {
		st, err := loadWatchState(c.StateFile)
		if err != nil {
			return err
		}
		if err := probeWatchStateDir(c.StateFile); err != nil {
			return err
		}
		w.st = st
	}
	if w.st == nil {
		w.st, w.cold = newWatchState(), true
	}
	c.w = w
	s.cfg.Watch = &c
	return nil
}

func watchTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// watching is the running watch, nil when it is off.
func (s *Server) watching() *watcher {
	if s.cfg.Watch == nil {
		return nil
	}
	return s.cfg.Watch.w
}

// watchLoop runs the watch until ctx ends: a run at once, then one every
// Every. Serve starts it and waits for it on shutdown: a run that is
// posting finishes its posts and saves its state.
func (s *Server) watchLoop(ctx context.Context) {
	defer s.wg.Done()
	w := s.watching()
	if w == nil {
		return
	}
	tick, stop := w.newTicker(w.cfg.Every)
	defer stop()
	start := "cold start: the first run posts every target that is not healthy"
	if !w.cold {
		start = fmt.Sprintf("%d target(s) remembered from the state file", len(w.st.Targets))
	}
	s.log.Info("watch: started", "every", w.cfg.Every, "hold", w.cfg.Hold, "state_file", w.cfg.StateFile, "state", start)
	for ctx.Err() == nil {
		s.watchOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// watchOnce is one run: diagnose every target, compare each with what was
// posted, post what changed and held, save the state. Once the diagnosis
// is in, the run finishes even if ctx ends (within a grace period), so
// that a post is never cut between Slack and the state file.
func (s *Server) watchOnce(ctx context.Context) error {
	w := s.watching()
	if w == nil {
		return errors.New("watch is off")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := s.now()
	d, runs, err := s.diagnose(ctx, Request{Selector: w.cfg.Selector, Latest: true, Trigger: TriggerWatch})
	var none *diagnosis.NoTargetError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &none):
		// Reachable, but no target in it: every target known is absent.
		s.log.Warn("watch: no target in the source", "err", err)
		d = &advisor.Diagnosis{}
	default:
		s.log.Warn("watch: diagnosis failed; nothing compared this run", "err", err)
		return err
	}
	var msgs []report.SlackMessage
	if len(d.Targets) > 0 {
		msgs = s.slackMessages(d, runs, s.watchLinks(w, now))
	}
	obs := watchObserve(d, msgs)
	acts := w.st.step(obs, w.cfg.Hold, w.cold, now)
	if len(obs) > 0 {
		// The start is cold until a run has seen a target.
		w.cold = false
	}
	pctx, cancel := w.postContext(ctx)
	defer cancel()
	var errs []error
	for _, a := range acts {
		if err := s.watchPost(pctx, w, a, now); err != nil {
			errs = append(errs, err)
		}
	}
	w.st.Saved = s.now()
	if err := w.save(); err != nil {
		s.log.Error("watch: state not saved: a restart may post again what this run posted", "err", err)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (w *watcher) save() error {
	if w.cfg.StateFile == "" {
		return nil
	}
	return saveWatchState(w.cfg.StateFile, w.st)
}

// postContext is the context of a run's posts: it does not end with ctx,
// but grace after it.
func (w *watcher) postContext(ctx context.Context) (context.Context, context.CancelFunc) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var mu sync.Mutex
	var t *time.Timer
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		t = time.AfterFunc(w.grace, cancel)
		mu.Unlock()
	})
	return pctx, func() {
		stop()
		mu.Lock()
		if t != nil {
			t.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// watchLinks links each message to the run's diagnosis as JSON on this
// server's API, when the server knows its external URL: the link of a
// target whose run was not kept for the report pages (which the others
// link to).
func (s *Server) watchLinks(w *watcher, end time.Time) report.SlackOptions {
	if s.cfg.ExternalURL == "" {
		return report.SlackOptions{}
	}
	q := url.Values{"end": {strconv.FormatInt(end.Unix(), 10)}}
	if w.cfg.Selector != "" {
		q.Set("selector", w.cfg.Selector)
	}
	return report.SlackOptions{ReportURL: strings.TrimRight(s.cfg.ExternalURL, "/") + DiagnosisPath + "?" + q.Encode()}
}

// watchObservation is one target as this run saw it.
type watchObservation struct {
	key string
	v   watchVerdict
	msg report.SlackMessage
}

// observe turns a diagnosis into observations, one per target, in its
// order, each with its rendered message (msgs, in the same order).
func watchObserve(d *advisor.Diagnosis, msgs []report.SlackMessage) []watchObservation {
	if len(d.Targets) == 0 {
		return nil
	}
	out := make([]watchObservation, 0, len(d.Targets))
	for i, t := range d.Targets {
		key, _ := json.Marshal(t.Target)
		o := watchObservation{key: string(key), v: watchVerdictOf(t)}
		if i < len(msgs) {
			o.msg = msgs[i]
		}
		out = append(out, o)
	}
	return out
}

// watchVerdictOf is what the watch compares: the verdict's bottleneck and
// status, and for a bottleneck found the worst severity among the
// findings that can decide a verdict (not explained by another, not
// capped for a small share).
func watchVerdictOf(t advisor.TargetReport) watchVerdict {
	v := watchVerdict{Bottleneck: t.Primary.Bottleneck, Status: t.Primary.Status}
	if !t.Primary.Found() {
		return v
	}
	rank := map[string]int{"warning": 1, "critical": 2}
	for _, f := range t.Findings {
		if f.ExplainedBy != "" || f.Capped != "" || f.Bottleneck == "none" {
			continue
		}
		if rank[f.Severity] > rank[v.Severity] {
			v.Severity = f.Severity
		}
	}
	if v.Severity == "" {
		v.Severity = "warning"
	}
	return v
}

// watchKind says why a post is made; it words the message.
type watchKind int

const (
	// watchFirst: the first run after a cold start, a target not healthy.
	watchFirst watchKind = iota + 1
	// watchNew: a target first seen, not healthy, that held.
	watchNew
	// watchChange: a verdict that changed and held.
	watchChange
	// watchRecovered: healthy again, and it held.
	watchRecovered
	// watchGone: absent from the diagnosis, and it held.
	watchGone
)

// watchAction is a post a run makes.
type watchAction struct {
	key  string
	kind watchKind
	v    watchVerdict
	msg  report.SlackMessage
}

// step compares a run's observations with the state: it counts pending
// changes (and absences) and returns the posts due, in the diagnosis's
// order, absent targets last. It changes nothing posted: posted does,
// after Slack took the message.
func (st *watchState) step(obs []watchObservation, hold int, cold bool, now time.Time) []watchAction {
	seen := map[string]bool{}
	var acts []watchAction
	for _, o := range obs {
		if seen[o.key] {
			continue
		}
		seen[o.key] = true
		t := st.Targets[o.key]
		if t == nil {
			t = &watchTarget{}
			st.Targets[o.key] = t
		}
		if o.msg.Target != "" {
			t.Name = o.msg.Target
		}
		switch {
		case o.v == t.Verdict:
			t.clearPending()
			continue
		case !t.Verdict.known() && o.v.healthy():
			// First sight, healthy: the baseline, taken without a post.
			t.Verdict = o.v
			t.clearPending()
			continue
		}
		t.see(o.v, now)
		kind := watchChange
		switch {
		case cold && !t.Verdict.known():
			kind, t.Count = watchFirst, max(t.Count, hold)
		case !t.Verdict.known():
			kind = watchNew
		case o.v.healthy():
			kind = watchRecovered
		}
		if t.Count >= hold {
			acts = append(acts, watchAction{key: o.key, kind: kind, v: o.v, msg: o.msg})
		}
	}
	for _, k := range st.sortedKeys() {
		if seen[k] {
			continue
		}
		t := st.Targets[k]
		if !t.Verdict.known() {
			// Seen, never posted nor established: nothing to report.
			delete(st.Targets, k)
			continue
		}
		gone := watchVerdict{Status: statusWatchGone}
		t.see(gone, now)
		if t.Count >= hold {
			acts = append(acts, watchAction{key: k, kind: watchGone, v: gone})
		}
	}
	return acts
}

// see counts v as pending: one more run when it is the change already
// pending, else a new pending change.
func (t *watchTarget) see(v watchVerdict, now time.Time) {
	if t.Pending != nil && *t.Pending == v {
		t.Count++
		return
	}
	t.Pending, t.Count, t.PendingSince = &v, 1, now
}

func (t *watchTarget) clearPending() {
	t.Pending, t.Count, t.PendingSince = nil, 0, time.Time{}
}

// posted records a post Slack took. A healthy verdict closes the target's
// thread; the next problem starts a new one. A gone target is forgotten.
func (st *watchState) posted(a watchAction, channel, ts string, now time.Time) {
	t := st.Targets[a.key]
	if t == nil {
		return
	}
	if a.kind == watchGone {
		delete(st.Targets, a.key)
		return
	}
	t.Verdict, t.PostedAt = a.v, now
	t.clearPending()
	switch {
	case a.v.healthy():
		t.Channel, t.TS = "", ""
	case ts != "":
		t.Channel, t.TS = channel, ts
	}
}

// watchPost posts one action and records it. A target with an open
// thread (bot token) gets the update as a reply there, also sent to the
// channel; others get a new message, whose thread takes later updates.
func (s *Server) watchPost(ctx context.Context, w *watcher, a watchAction, now time.Time) error {
	t := w.st.Targets[a.key]
	m := w.message(a, t)
	dest := w.dest
	thread := ""
	if dest.Via() == slackkit.WebAPI && t.TS != "" && t.Channel == dest.Channel {
		thread = t.TS
	}
	if err := w.wait(ctx); err != nil {
		return err
	}
	channel, ts, posted, err := s.watchSend(ctx, m, thread)
	var se *slackkit.Error
	if !posted && thread != "" && errors.As(err, &se) && se.Code == "thread_not_found" {
		// The thread's message was deleted: start a new one.
		s.log.Info("watch: the target's thread is gone, posting a new message", "target", t.Name)
		t.Channel, t.TS, thread = "", "", ""
		channel, ts, posted, err = s.watchSend(ctx, m, "")
	}
	if posted {
		w.st.posted(a, channel, ts, now)
		s.log.Info("watch: posted", "target", t.Name, "verdict", verdictLabel(a.v), "why", a.kind.String(), "in_thread", thread != "")
		if serr := w.save(); serr != nil {
			s.log.Error("watch: state not saved: a restart may post this again", "target", t.Name, "err", serr)
		}
	}
	if err != nil {
		s.log.Warn("watch: posting failed; tried again next run", "target", t.Name, "verdict", verdictLabel(a.v), "err", err)
	}
	return err
}

// wait paces posts.
func (w *watcher) wait(ctx context.Context) error {
	defer func() { w.lastPost = time.Now() }()
	if w.pace <= 0 || w.lastPost.IsZero() {
		return nil
	}
	d := time.Until(w.lastPost.Add(w.pace))
	if d <= 0 {
		return nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// watchSend sends m through the server's post: as a new message (its
// details in its thread), or in thread as a reply shown in the channel too
// (its details in the same thread). posted says the main message went,
// even when a detail failed.
func (s *Server) watchSend(ctx context.Context, m report.SlackMessage, thread string) (channel, ts string, posted bool, err error) {
	if thread == "" {
		res, err := s.post(ctx, []report.SlackMessage{m})
		if len(res) == 0 {
			return "", "", false, err
		}
		return res[0].Channel, res[0].TS, true, err
	}
	main := m.Main
	main.ThreadTimestamp, main.ReplyBroadcast = thread, true
	if _, err := s.post(ctx, []report.SlackMessage{{Target: m.Target, Severity: m.Severity, Main: main}}); err != nil {
		return "", "", false, err
	}
	for _, d := range m.Details {
		d.ThreadTimestamp, d.ReplyBroadcast = thread, false
		if _, err := s.post(ctx, []report.SlackMessage{{Target: m.Target, Severity: m.Severity, Main: d}}); err != nil {
			return s.cfg.Slack.Channel, thread, true, err
		}
	}
	return s.cfg.Slack.Channel, thread, true, nil
}

// message is what an action posts: the target's rendered message with a
// line before it saying what changed, or a short note for a gone target.
func (w *watcher) message(a watchAction, t *watchTarget) report.SlackMessage {
	name := t.Name
	if name == "" {
		name = "a target"
	}
	held := ""
	if w.cfg.Hold > 1 {
		held = fmt.Sprintf(", for %d runs", max(t.Count, w.cfg.Hold))
	}
	var lead string
	switch a.kind {
	case watchGone:
		text := fmt.Sprintf("llmdoctor watch: %s is gone: not in the last %d diagnoses (%s apart); it was %s",
			name, max(t.Count, 1), units.ShortDuration(w.cfg.Every), verdictLabel(t.Verdict))
		return report.SlackMessage{Target: t.Name, Severity: report.SlackInconclusive, Main: slack.WebhookMessage{Text: slackkit.Escape(text)}}
	case watchFirst:
		lead = "Watch started, not healthy now"
	case watchNew:
		lead = "New target, not healthy" + held
	case watchRecovered:
		lead = "Recovered from " + verdictLabel(t.Verdict) + held
	default:
		lead = "Changed from " + verdictLabel(t.Verdict) + held
	}
	m := a.msg
	m.Main.Text = slackkit.Escape(lead) + " · " + m.Main.Text
	return m
}

func (k watchKind) String() string {
	switch k {
	case watchFirst:
		return "first run after a cold start"
	case watchNew:
		return "new target"
	case watchChange:
		return "changed"
	case watchRecovered:
		return "recovered"
	case watchGone:
		return "gone"
	}
	return "?"
}

// verdictLabel is a verdict as the messages' headers say it.
func verdictLabel(v watchVerdict) string {
	switch v.Status {
	case "found":
		if v.Severity == "critical" {
			return "✗ CRITICAL: " + v.Bottleneck
		}
		return "! WARNING: " + v.Bottleneck
	case "tentative":
		if v.Bottleneck == "none" {
			return "✓ HEALTHY (tentative)"
		}
		if v.Severity == "critical" {
			return "✗ CRITICAL (tentative): " + v.Bottleneck
		}
		return "! WARNING (tentative): " + v.Bottleneck
	case "healthy":
		return "✓ HEALTHY"
	case "inconclusive":
		return "? INCONCLUSIVE"
	case "suppressed":
		return "~ SUPPRESSED: " + v.Bottleneck
	case statusWatchGone:
		return "gone"
	}
	return "nothing posted"
}
