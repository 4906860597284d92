// Package watch is llmdoctor serve's watch-and-post: every Every, one
// diagnosis of every target of the server's source; a target's verdict
// (bottleneck, status and severity) is posted to Slack when it changed
// and the change held for Hold consecutive runs. It asks the server for
// everything through core.Host; package serve starts Run and waits for it
// on shutdown.
package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/serve/core"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// Config configures the watch: every Every, one diagnosis of every target
// of the source; a target's verdict (bottleneck, status and severity) is
// posted to Slack when it changed and the change held for Hold
// consecutive runs.
type Config struct {
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
}

// Defaults and bounds of the watch.
const (
	DefaultEvery = 5 * time.Minute
	DefaultHold  = 2
	minEvery     = 10 * time.Second
	// defaultPace is the gap between two targets' posts: Slack takes
	// about one message a second per channel.
	defaultPace = time.Second
	// defaultGrace is how long the posts of a run may go on once shutdown
	// began; the server waits 30s for background work in all.
	defaultGrace = 20 * time.Second
)

// Watcher is the watch's running state.
type Watcher struct {
	h    core.Host
	cfg  Config
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

// Register checks the watch's configuration and loads its state: a state
// file that cannot be read, is corrupt, or whose directory takes no new
// file is an error here, at startup. A nil or disabled c is no watch
// (nil, nil); settings given to a disabled watch are an error.
func Register(h core.Host, cfg *Config) (*Watcher, error) {
	if cfg == nil {
		return nil, nil
	}
	c := *cfg
	if !c.Enabled {
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
			return nil, fmt.Errorf("the watch is off, but watch settings are given (%s): turn the watch on or leave them out", strings.Join(given, ", "))
		}
		return nil, nil
	}
	switch {
	case c.Every == 0:
		c.Every = DefaultEvery
	case c.Every < minEvery:
		return nil, fmt.Errorf("watch every %s: give %s or more", c.Every, minEvery)
	}
	switch {
	case c.Hold == 0:
		c.Hold = DefaultHold
	case c.Hold < 0:
		return nil, fmt.Errorf("watch hold %d: a change must hold for 1 run or more", c.Hold)
	}
	if _, err := prom.ParseMatchers(c.Selector); err != nil {
		return nil, fmt.Errorf("watch selector %w", err)
	}
	dest := h.Slack()
	if err := dest.Validate(); err != nil {
		return nil, fmt.Errorf("watch posts to Slack: %w", err)
	}
	w := &Watcher{
		h:         h,
		cfg:       c,
		dest:      dest,
		newTicker: ticker,
		pace:      defaultPace,
		grace:     defaultGrace,
	}
	if c.StateFile != "" {
		st, err := loadWatchState(c.StateFile)
		if err != nil {
			return nil, err
		}
		if err := probeWatchStateDir(c.StateFile); err != nil {
			return nil, err
		}
		w.st = st
	}
	if w.st == nil {
		w.st, w.cold = newWatchState(), true
	}
	return w, nil
}

func ticker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// SetPace sets the least gap between two posts (default 1s: Slack takes
// about one message a second per channel); 0 posts without waiting.
func (w *Watcher) SetPace(d time.Duration) { w.pace = d }

// Every is how often the watch runs.
func (w *Watcher) Every() time.Duration { return w.cfg.Every }

// Run runs the watch until ctx ends: a run at once, then one every Every.
// The server starts it and waits for it on shutdown: a run that is
// posting finishes its posts and saves its state.
func (w *Watcher) Run(ctx context.Context) {
	tick, stop := w.newTicker(w.cfg.Every)
	defer stop()
	start := "cold start: the first run posts every target that is not healthy"
	if !w.cold {
		start = fmt.Sprintf("%d target(s) remembered from the state file", len(w.st.Targets))
	}
	w.h.Log().Info("watch: started", "every", w.cfg.Every, "hold", w.cfg.Hold, "state_file", w.cfg.StateFile, "state", start)
	for ctx.Err() == nil {
		_ = w.Once(ctx) // Once logs each error where it happens; the next run tries again
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// Once is one run: diagnose every target, compare each with what was
// posted, post what changed and held, save the state. Once the diagnosis
// is in, the run finishes even if ctx ends (within a grace period), so
// that a post is never cut between Slack and the state file.
func (w *Watcher) Once(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	log := w.h.Log()
	now := w.h.Now()
	d, runs, err := w.diagnose(ctx)
	var none *diagnosis.NoTargetError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &none):
		// Reachable, but no target in it: every target known is absent.
		log.Warn("watch: no target in the source", "err", err)
		d = &advisor.Diagnosis{}
	default:
		log.Warn("watch: diagnosis failed; nothing compared this run", "err", err)
		return err
	}
	var msgs []report.SlackMessage
	if len(d.Targets) > 0 {
		msgs = w.h.SlackMessages(d, runs, w.links(now))
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
		if err := w.post(pctx, a, now); err != nil {
			errs = append(errs, err)
		}
	}
	w.st.Saved = w.h.Now()
	if err := w.save(); err != nil {
		log.Error("watch: state not saved: a restart may post again what this run posted", "err", err)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// diagnose is one diagnosis of the watch's scope, kept for the report
// pages, in a slot of the server's (core.ErrBusy when none is free).
func (w *Watcher) diagnose(ctx context.Context) (*advisor.Diagnosis, []core.RunRef, error) {
	release, ok := w.h.Acquire()
	if !ok {
		return nil, nil, core.ErrBusy
	}
	defer release()
	return w.h.DiagnoseHeld(ctx, core.Request{Selector: w.cfg.Selector, Latest: true, Trigger: core.TriggerWatch})
}

func (w *Watcher) save() error {
	if w.cfg.StateFile == "" {
		return nil
	}
	return saveWatchState(w.cfg.StateFile, w.st)
}

// postContext is the context of a run's posts: it does not end with ctx,
// but grace after it.
func (w *Watcher) postContext(ctx context.Context) (context.Context, context.CancelFunc) {
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

// links links each message to the run's diagnosis as JSON on this
// server's API, when the server knows its external URL: the link of a
// target whose run was not kept for the report pages (which the others
// link to).
func (w *Watcher) links(end time.Time) report.SlackOptions {
	ext := w.h.ExternalURL()
	if ext == "" {
		return report.SlackOptions{}
	}
	q := url.Values{"end": {strconv.FormatInt(end.Unix(), 10)}}
	if w.cfg.Selector != "" {
		q.Set("selector", w.cfg.Selector)
	}
	return report.SlackOptions{ReportURL: strings.TrimRight(ext, "/") + core.DiagnosisPath + "?" + q.Encode()}
}

// watchObservation is one target as this run saw it.
type watchObservation struct {
	key string
	v   core.Verdict
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
		o := watchObservation{key: string(key), v: core.VerdictOf(t)}
		if i < len(msgs) {
			o.msg = msgs[i]
		}
		out = append(out, o)
	}
	return out
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
	v    core.Verdict
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
		case !t.Verdict.Known() && o.v.Healthy():
			// First sight, healthy: the baseline, taken without a post.
			t.Verdict = o.v
			t.clearPending()
			continue
		}
		t.see(o.v, now)
		kind := watchChange
		switch {
		case cold && !t.Verdict.Known():
			kind, t.Count = watchFirst, max(t.Count, hold)
		case !t.Verdict.Known():
			kind = watchNew
		case o.v.Healthy():
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
		if !t.Verdict.Known() {
			// Seen, never posted nor established: nothing to report.
			delete(st.Targets, k)
			continue
		}
		gone := core.Verdict{Status: core.StatusGone}
		t.see(gone, now)
		if t.Count >= hold {
			acts = append(acts, watchAction{key: k, kind: watchGone, v: gone})
		}
	}
	return acts
}

// see counts v as pending: one more run when it is the change already
// pending, else a new pending change.
func (t *watchTarget) see(v core.Verdict, now time.Time) {
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
	case a.v.Healthy():
		t.Channel, t.TS = "", ""
	case ts != "":
		t.Channel, t.TS = channel, ts
	}
}

// post posts one action and records it. A target with an open
// thread (bot token) gets the update as a reply there, also sent to the
// channel; others get a new message, whose thread takes later updates.
func (w *Watcher) post(ctx context.Context, a watchAction, now time.Time) error {
	log := w.h.Log()
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
	channel, ts, posted, err := w.send(ctx, m, thread)
	var se *slackkit.Error
	if !posted && thread != "" && errors.As(err, &se) && se.Code == "thread_not_found" {
		// The thread's message was deleted: start a new one.
		log.Info("watch: the target's thread is gone, posting a new message", "target", t.Name)
		t.Channel, t.TS, thread = "", "", ""
		channel, ts, posted, err = w.send(ctx, m, "")
	}
	if posted {
		w.st.posted(a, channel, ts, now)
		log.Info("watch: posted", "target", t.Name, "verdict", a.v.Label(), "why", a.kind.String(), "in_thread", thread != "")
		if serr := w.save(); serr != nil {
			log.Error("watch: state not saved: a restart may post this again", "target", t.Name, "err", serr)
		}
	}
	if err != nil {
		log.Warn("watch: posting failed; tried again next run", "target", t.Name, "verdict", a.v.Label(), "err", err)
	}
	return err
}

// wait paces posts.
func (w *Watcher) wait(ctx context.Context) error {
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

// send sends m through the server's post: as a new message (its
// details in its thread), or in thread as a reply shown in the channel too
// (its details in the same thread). posted says the main message went,
// even when a detail failed.
func (w *Watcher) send(ctx context.Context, m report.SlackMessage, thread string) (channel, ts string, posted bool, err error) {
	if thread == "" {
		res, err := w.h.Post(ctx, []report.SlackMessage{m})
		if len(res) == 0 {
			return "", "", false, err
		}
		return res[0].Channel, res[0].TS, true, err
	}
	main := m.Main
	main.ThreadTimestamp, main.ReplyBroadcast = thread, true
	if _, err := w.h.Post(ctx, []report.SlackMessage{{Target: m.Target, Severity: m.Severity, Main: main}}); err != nil {
		return "", "", false, err
	}
	for _, d := range m.Details {
		d.ThreadTimestamp, d.ReplyBroadcast = thread, false
		if _, err := w.h.Post(ctx, []report.SlackMessage{{Target: m.Target, Severity: m.Severity, Main: d}}); err != nil {
			return w.dest.Channel, thread, true, err
		}
	}
	return w.dest.Channel, thread, true, nil
}

// message is what an action posts: the target's rendered message with a
// line before it saying what changed, or a short note for a gone target.
func (w *Watcher) message(a watchAction, t *watchTarget) report.SlackMessage {
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
			name, max(t.Count, 1), units.ShortDuration(w.cfg.Every), t.Verdict.Label())
		return report.SlackMessage{Target: t.Name, Severity: report.SlackInconclusive, Main: slack.WebhookMessage{Text: slackkit.Escape(text)}}
	case watchFirst:
		lead = "Watch started, not healthy now"
	case watchNew:
		lead = "New target, not healthy" + held
	case watchRecovered:
		lead = "Recovered from " + t.Verdict.Label() + held
	default:
		lead = "Changed from " + t.Verdict.Label() + held
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
