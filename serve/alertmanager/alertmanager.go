// Package alertmanager is llmdoctor serve's Alertmanager receiver, POST
// /alertmanager: it diagnoses each firing alert group and posts the result
// to the server's Slack destination, once per group. It asks the server
// through core.Host.
package alertmanager

import (
	"container/list"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/slack-go/slack"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/serve/core"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// Config configures the Alertmanager receiver, POST
// /alertmanager: a webhook receiver (payload version 4) that diagnoses each
// firing alert group and posts the result to the server's Slack
// destination, once per group.
type Config struct {
	// Token is the credential Alertmanager's http_config.authorization
	// sends ("Authorization: Bearer <token>"); User and Password those of
	// its basic_auth. When any is set, a request without a matching
	// Authorization header is refused (401). When none is, every request
	// is taken.
	Token          string
	User, Password string
	// Labels maps an alert label to the metric label its value selects
	// (model_name → model_name). Nil: DefaultLabels.
	Labels map[string]string
	// LeadIn is how long before the group's earliest alert began the
	// window starts (default 10m); the window is never shorter than the
	// server's default window.
	LeadIn time.Duration
	// MaxBody bounds a notification's body (default 4 MiB).
	MaxBody int64
	// MaxGroups bounds the alert groups remembered to deduplicate
	// (default 10000; the least recently seen is forgotten first).
	MaxGroups int
}

// DefaultLabels are the alert labels taken into the selector when
// Config.Labels is nil: each selects the metric label of its
// own name.
var DefaultLabels = map[string]string{"model_name": "model_name", "namespace": "namespace"}

// DefaultLeadIn is the time before an alert's start the window begins at.
const DefaultLeadIn = 10 * time.Minute

// maxSelectorValues bounds the values one label contributes to a selector:
// a group of more alerts than that is diagnosed without that label.
const maxSelectorValues = 50

// maxExtraTargets bounds the other targets of a group posted in the thread
// of its message.
const maxExtraTargets = 5

var labelNameRe = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// amMessage is the part of Alertmanager's webhook payload (version 4)
// the receiver reads; other fields are ignored.
type amMessage struct {
	Version      string            `json:"version"`
	GroupKey     string            `json:"groupKey"`
	Receiver     string            `json:"receiver"`
	Status       string            `json:"status"`
	Alerts       []amAlert         `json:"alerts"`
	GroupLabels  map[string]string `json:"groupLabels"`
	CommonLabels map[string]string `json:"commonLabels"`
	ExternalURL  string            `json:"externalURL"`
}

type amAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// amGroup is one alert group the receiver posted about (or is posting
// about): where its message is, so that a resolution replies to it.
type amGroup struct {
	key string
	// done is closed when the firing post has finished, ok or not.
	done chan struct{}
	// Set before done is closed: where the message went (ts only with a
	// bot token) and whether it was posted at all.
	ts, channel string
	posted      bool
	// resolved: the resolution was taken; a firing notification starts a
	// new message. Guarded by Receiver.mu.
	resolved bool
	since    time.Time
	elem     *list.Element
}

// Receiver is the receiver's state: its memory of groups, bounded by
// MaxGroups.
type Receiver struct {
	s             core.Host
	cfg           Config
	notifications *prometheus.CounterVec

	mu     sync.Mutex
	groups map[string]*amGroup
	order  *list.List // of *amGroup, most recently seen first
}

// Outcomes of a notification, as llmdoctor_alertmanager_notifications_total
// counts them.
const (
	amDiagnosing   = "diagnosing"
	amDuplicate    = "duplicate"
	amResolved     = "resolved"
	amIgnored      = "ignored"
	amBusy         = "busy"
	amUnauthorized = "unauthorized"
	amInvalid      = "invalid"
)

// Register adds POST /alertmanager to the server when cfg is given (nil:
// no receiver). Its metric is the receiver's Collector, which the server
// registers.
func Register(s core.Host, cfg *Config) (*Receiver, error) {
	if cfg == nil {
		return nil, nil
	}
	c := *cfg
	if err := s.Slack().Validate(); err != nil {
		return nil, fmt.Errorf("the Alertmanager receiver posts to Slack: %w", err)
	}
	if c.Labels == nil {
		c.Labels = DefaultLabels
	}
	for alert, metric := range c.Labels {
		if !labelNameRe.MatchString(alert) || !labelNameRe.MatchString(metric) {
			return nil, fmt.Errorf("alert label %q → metric label %q: label names are letters, digits and _, not starting with a digit", alert, metric)
		}
	}
	if c.User == "" && c.Password != "" {
		return nil, errors.New("the Alertmanager receiver has a basic-auth password but no user")
	}
	if c.LeadIn <= 0 {
		c.LeadIn = DefaultLeadIn
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 4 << 20
	}
	if c.MaxGroups <= 0 {
		c.MaxGroups = 10000
	}
	am := &Receiver{s: s, cfg: c, groups: map[string]*amGroup{}, order: list.New(),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmdoctor_alertmanager_notifications_total",
			Help: "Alertmanager notifications received, by what became of them."}, []string{"outcome"})}
	for _, o := range []string{amDiagnosing, amDuplicate, amResolved, amIgnored, amBusy, amUnauthorized, amInvalid} {
		am.notifications.WithLabelValues(o)
	}
	s.Handle("POST /alertmanager", am.alertmanager)
	return am, nil
}

// Collector is the receiver's metric: notifications by outcome.
func (am *Receiver) Collector() prometheus.Collector { return am.notifications }

// Groups is how many alert groups the receiver remembers.
func (am *Receiver) Groups() int {
	am.mu.Lock()
	defer am.mu.Unlock()
	return len(am.groups)
}

// alertmanager takes one notification: it answers at once and diagnoses
// and posts in the background. 401 without the configured credential,
// 413 for a body over MaxBody, 400 for one that is not a version 4
// payload (Alertmanager sends it again each group_interval, and counts it
// in alertmanager_notifications_failed_total), 429 when every diagnosis
// slot is taken (Alertmanager sends it again at the next group_interval).
func (am *Receiver) alertmanager(w http.ResponseWriter, r *http.Request) {
	if !am.authorized(r.Header.Get("Authorization")) {
		am.count(amUnauthorized)
		if am.cfg.Token != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="llmdoctor"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Basic realm="llmdoctor"`)
		}
		core.Plain(w, http.StatusUnauthorized, "unauthorized: send the credential configured for the Alertmanager receiver (http_config authorization or basic_auth)")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, am.cfg.MaxBody))
	if err != nil {
		am.count(amInvalid)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			core.Plain(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the notification is over %d bytes: lower max_alerts in the webhook config", am.cfg.MaxBody))
			return
		}
		core.Plain(w, http.StatusBadRequest, "reading the notification: "+err.Error())
		return
	}
	var m amMessage
	if err := json.Unmarshal(body, &m); err != nil {
		am.count(amInvalid)
		core.Plain(w, http.StatusBadRequest, "not an Alertmanager webhook notification (JSON, version 4): "+err.Error())
		return
	}
	switch {
	case m.Version != "4":
		am.count(amInvalid)
		core.Plain(w, http.StatusBadRequest, fmt.Sprintf("webhook payload version %q: want \"4\"", m.Version))
		return
	case m.GroupKey == "":
		am.count(amInvalid)
		core.Plain(w, http.StatusBadRequest, "the notification has no groupKey")
		return
	case m.Status != "firing" && m.Status != "resolved":
		am.count(amInvalid)
		core.Plain(w, http.StatusBadRequest, fmt.Sprintf("status %q: want firing or resolved", m.Status))
		return
	}
	// Two routes with the same matchers give the same group key: the
	// receiver's name keeps them apart. Kept as a hash, so a huge key from
	// whoever reaches the endpoint costs 32 bytes, not its length.
	sum := sha256.Sum256([]byte(m.Receiver + "\x00" + m.GroupKey))
	key := string(sum[:])
	if m.Status == "resolved" {
		am.amResolve(w, &m, key)
		return
	}
	am.amFire(w, &m, key)
}

// amFire starts the diagnosis of a firing group, unless its message was
// posted already (Alertmanager repeats a notification every
// repeat_interval, and whenever the group changes).
func (am *Receiver) amFire(w http.ResponseWriter, m *amMessage, key string) {
	s := am.s
	am.mu.Lock()
	// A repeat of the posted group is not posted again; a group whose
	// firing alerts all started after it was posted is a new incident
	// (Alertmanager sends no resolution with send_resolved: false, or when
	// alerts resolve and fire again between two flushes).
	if g := am.get(key); g != nil && !g.resolved && !newIncident(m.Alerts, g.since) {
		am.mu.Unlock()
		am.count(amDuplicate)
		core.Plain(w, http.StatusOK, "already posted for this group")
		return
	}
	release, ok := s.Acquire()
	if !ok {
		am.mu.Unlock()
		am.count(amBusy)
		w.Header().Set("Retry-After", "10")
		core.Plain(w, http.StatusTooManyRequests, core.ErrBusy.Error())
		return
	}
	g := am.add(key, s.Now())
	am.mu.Unlock()
	firing := firingAlerts(m.Alerts)
	req := am.amRequest(firing)
	req.Reason = "alert " + alertName(m, firing)
	am.count(amDiagnosing)
	s.Log().Info("alertmanager: diagnosing", "receiver", m.Receiver, "group", m.GroupKey, "alerts", len(firing),
		"selector", req.Selector, "window", model.Duration(req.Window).String())
	s.Background(func() {
		defer close(g.done)
		d, runs, err := s.DiagnoseHeld(context.Background(), req)
		release()
		var msgs []report.SlackMessage
		if err != nil {
			s.Log().Warn("alertmanager: diagnosis failed", "group", m.GroupKey, "selector", req.Selector, "err", err)
			msgs = []report.SlackMessage{am.amFailure(m, firing, req, err)}
		} else {
			msgs = am.amMessages(d, runs, m, firing, req)
		}
		res, err := s.Post(context.Background(), msgs)
		if len(res) == 0 {
			// Nothing reached Slack: forget the group, so that
			// Alertmanager's next notification of it tries again.
			s.Log().Warn("alertmanager: posting failed", "group", m.GroupKey, "err", err)
			am.forget(g)
			return
		}
		if err != nil {
			s.Log().Warn("alertmanager: posting the thread failed", "group", m.GroupKey, "err", err)
		}
		g.ts, g.channel, g.posted = res[0].TS, res[0].Channel, true
		s.Log().Info("alertmanager: posted", "group", m.GroupKey, "target", res[0].Target)
	})
	core.Plain(w, http.StatusOK, "diagnosing")
}

// amResolve posts a short "resolved" reply in the thread of the group's
// message (bot token) or a short message (webhook). A group the receiver
// has not posted about, or whose resolution it took already, gets
// nothing.
func (am *Receiver) amResolve(w http.ResponseWriter, m *amMessage, key string) {
	s := am.s
	am.mu.Lock()
	g := am.get(key)
	if g == nil || g.resolved {
		am.mu.Unlock()
		am.count(amIgnored)
		core.Plain(w, http.StatusOK, "nothing posted for this group: nothing to resolve")
		return
	}
	g.resolved = true
	am.mu.Unlock()
	am.count(amResolved)
	text := "✓ resolved: " + alertName(m, m.Alerts)
	if sel := am.amRequest(m.Alerts).Selector; sel != "" {
		text += " (" + sel + ")"
	}
	if !g.since.IsZero() {
		text += fmt.Sprintf(" · llmdoctor posted its diagnosis %s ago", roundDuration(s.Now().Sub(g.since)))
	}
	s.Background(func() {
		// The firing message may still be on its way.
		select {
		case <-g.done:
		case <-time.After(s.RequestTimeout() + core.PostDeadline):
			return
		}
		if !g.posted {
			return
		}
		msg := report.SlackMessage{Target: "resolved", Severity: report.SlackHealthy,
			Main: slack.WebhookMessage{Text: slackText(text), ThreadTimestamp: g.ts}}
		if s.Slack().Via() == slackkit.WebAPI && g.ts == "" {
			return
		}
		if _, err := s.Post(context.Background(), []report.SlackMessage{msg}); err != nil {
			s.Log().Warn("alertmanager: posting the resolution failed", "group", m.GroupKey, "err", err)
		}
	})
	core.Plain(w, http.StatusOK, "resolved")
}

// authorized checks the Authorization header against the configured
// credential in constant time.
func (am *Receiver) authorized(h string) bool {
	c := am.cfg
	if c.Token == "" && c.User == "" {
		return true
	}
	scheme, cred, _ := strings.Cut(strings.TrimSpace(h), " ")
	cred = strings.TrimSpace(cred)
	switch strings.ToLower(scheme) {
	case "bearer":
		return c.Token != "" && equal(cred, c.Token)
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil || c.User == "" {
			return false
		}
		user, pass, _ := strings.Cut(string(raw), ":")
		u, p := equal(user, c.User), equal(pass, c.Password)
		return u && p
	}
	return false
}

// equal compares in constant time, whatever the lengths.
func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

func (am *Receiver) count(outcome string) { am.notifications.WithLabelValues(outcome).Inc() }

// get finds a group and marks it recently seen; under mu.
func (am *Receiver) get(key string) *amGroup {
	g, ok := am.groups[key]
	if !ok {
		return nil
	}
	am.order.MoveToFront(g.elem)
	return g
}

// add remembers a new group, forgetting the least recently seen beyond
// MaxGroups; under mu.
func (am *Receiver) add(key string, now time.Time) *amGroup {
	if old, ok := am.groups[key]; ok {
		am.order.Remove(old.elem)
	}
	g := &amGroup{key: key, done: make(chan struct{}), since: now}
	g.elem = am.order.PushFront(g)
	am.groups[key] = g
	for am.order.Len() > am.cfg.MaxGroups {
		last := am.order.Back()
		delete(am.groups, last.Value.(*amGroup).key)
		am.order.Remove(last)
	}
	return g
}

// forget drops g, unless a newer group took its key.
func (am *Receiver) forget(g *amGroup) {
	am.mu.Lock()
	defer am.mu.Unlock()
	if am.groups[g.key] == g {
		delete(am.groups, g.key)
		am.order.Remove(g.elem)
	}
}

// firingAlerts are the alerts still firing; all of them when none is
// marked so.
func firingAlerts(alerts []amAlert) []amAlert {
	var out []amAlert
	for _, a := range alerts {
		if a.Status != "resolved" {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return alerts
	}
	return out
}

// amRequest is what to diagnose for alerts: their labels as a selector,
// by the configured mapping, and a window from LeadIn before the earliest
// start until now, at least the server's default window.
func (am *Receiver) amRequest(alerts []amAlert) core.Request {
	s := am.s
	labels := am.cfg.Labels
	type pair struct{ alert, metric string }
	var pairs []pair
	for a, mt := range labels {
		pairs = append(pairs, pair{a, mt})
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].metric != pairs[j].metric {
			return pairs[i].metric < pairs[j].metric
		}
		return pairs[i].alert < pairs[j].alert
	})
	var matchers []string
	for _, p := range pairs {
		vals := map[string]bool{}
		all := len(alerts) > 0
		for _, a := range alerts {
			v, ok := a.Labels[p.alert]
			if !ok || v == "" {
				all = false
				break
			}
			vals[v] = true
		}
		if !all || len(vals) > maxSelectorValues {
			continue
		}
		matchers = append(matchers, matcher(p.metric, vals))
	}
	now := s.Now()
	def := s.DefaultWindow()
	w := def
	var start time.Time
	for _, a := range alerts {
		if !a.StartsAt.IsZero() && (start.IsZero() || a.StartsAt.Before(start)) {
			start = a.StartsAt
		}
	}
	if !start.IsZero() && start.Before(now) {
		w = max(def, now.Sub(start)+am.cfg.LeadIn)
	}
	w = min((w+time.Minute-1)/time.Minute*time.Minute, prom.MaxWindow)
	return core.Request{Selector: strings.Join(matchers, ","), Window: w, End: now, Latest: true, Trigger: core.TriggerAlertmanager}
}

// matcher selects a label's values: label="v", or label=~"v1|v2" with
// each value quoted as a regular expression. Values are escaped as PromQL
// strings.
func matcher(label string, vals map[string]bool) string {
	vs := make([]string, 0, len(vals))
	for v := range vals {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	if len(vs) == 1 {
		return label + "=" + strconv.Quote(vs[0])
	}
	for i, v := range vs {
		vs[i] = regexp.QuoteMeta(v)
	}
	return label + "=~" + strconv.Quote(strings.Join(vs, "|"))
}

// reportURL links to the API's diagnosis of the same selector and window:
// the link of a failure ("try again"), and of a target whose run was not
// kept for the report pages.
func (am *Receiver) reportURL(req core.Request) string {
	if am.s.ExternalURL() == "" {
		return ""
	}
	q := url.Values{"window": {model.Duration(req.Window).String()}}
	if req.Selector != "" {
		q.Set("selector", req.Selector)
	}
	if !req.End.IsZero() {
		q.Set("end", req.End.UTC().Format(time.RFC3339))
	}
	return strings.TrimRight(am.s.ExternalURL(), "/") + core.DiagnosisPath + "?" + q.Encode()
}

// amMessages is the group's message: the most severe target's, with the
// alert it answers named, and the other targets' main messages in its
// thread after its details (a webhook posts the first alone). Each
// target's message links to its run's report page.
func (am *Receiver) amMessages(d *advisor.Diagnosis, runs []core.RunRef, m *amMessage, firing []amAlert, req core.Request) []report.SlackMessage {
	s := am.s
	opts := report.SlackOptions{ReportURL: am.reportURL(req)}
	for _, a := range firing {
		if u, err := url.Parse(a.GeneratorURL); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			opts.GraphURL = a.GeneratorURL
			break
		}
	}
	msgs := s.SlackMessages(d, runs, opts)
	if len(msgs) == 0 {
		return nil
	}
	rank := map[string]int{report.SlackCritical: 0, report.SlackWarning: 1, report.SlackInconclusive: 2, report.SlackHealthy: 3}
	sort.SliceStable(msgs, func(i, j int) bool { return rank[msgs[i].Severity] < rank[msgs[j].Severity] })
	first := msgs[0]
	name := alertName(m, firing)
	// The renderer's text is escaped already.
	first.Main.Text = slackkit.Escape(name) + " firing · " + first.Main.Text
	line := fmt.Sprintf("Alertmanager: *%s* firing", slackkit.Escape(name))
	if n := len(firing); n > 1 {
		line += fmt.Sprintf(" (%d alerts)", n)
	}
	if req.Selector != "" {
		line += " · diagnosed `" + slackkit.Escape(strings.ReplaceAll(req.Selector, "`", "'")) + "`"
	}
	line += " over " + model.Duration(req.Window).String()
	if len(msgs) > 1 {
		line += fmt.Sprintf(" · %d targets, the most severe first", len(msgs))
	}
	withContext(&first.Main, line)
	first.Details = append([]slack.WebhookMessage(nil), first.Details...)
	for i, o := range msgs[1:] {
		if i == maxExtraTargets {
			more := fmt.Sprintf("+%d more targets: see the full report", len(msgs)-1-maxExtraTargets)
			if s.ExternalURL() != "" {
				more = fmt.Sprintf("+%d more targets: each has its report on %s/", len(msgs)-1-maxExtraTargets, strings.TrimRight(s.ExternalURL(), "/"))
			}
			first.Details = append(first.Details, slack.WebhookMessage{Text: slackText(more)})
			break
		}
		first.Details = append(first.Details, o.Main)
	}
	return []report.SlackMessage{first}
}

// amFailure is the short message posted when a group could not be
// diagnosed. It names no server: the full error is in the log.
func (am *Receiver) amFailure(m *amMessage, firing []amAlert, req core.Request, err error) report.SlackMessage {
	var (
		ne *diagnosis.NoTargetError
		pe *prom.Error
	)
	why := "it failed (see llmdoctor's log)"
	switch {
	case errors.As(err, &ne), errors.As(err, &pe) && pe.Kind == prom.NoMetrics:
		why = "no serving-engine metrics match"
		if req.Selector != "" {
			why += " " + req.Selector
		}
		why += " in the window: check the alert's labels and the receiver's label mapping"
	case errors.As(err, &pe) && pe.Kind == prom.BadQuery:
		why = "Prometheus could not parse the selector " + req.Selector
	case errors.As(err, &pe):
		why = "Prometheus could not be queried (see llmdoctor's log)"
	case errors.Is(err, context.DeadlineExceeded):
		why = "it took longer than the request timeout"
	}
	text := slackText(fmt.Sprintf("? %s firing: llmdoctor could not diagnose it over %s: %s", alertName(m, firing), model.Duration(req.Window), why))
	if u := am.reportURL(req); u != "" {
		// After the line is cut to its length: a cut link fails.
		text += " · try again: " + slackkit.Escape(u)
	}
	return report.SlackMessage{Target: "alert", Severity: report.SlackInconclusive, Main: slack.WebhookMessage{Text: text}}
}

// alertName names a group by its alerts' names.
func alertName(m *amMessage, alerts []amAlert) string {
	if n := m.CommonLabels["alertname"]; n != "" {
		return n
	}
	if n := m.GroupLabels["alertname"]; n != "" {
		return n
	}
	seen := map[string]bool{}
	var names []string
	for _, a := range alerts {
		if n := a.Labels["alertname"]; n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	switch {
	case len(names) == 0:
		return "alert"
	case len(names) > 3:
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}

// newIncident reports whether every firing alert started after since.
func newIncident(alerts []amAlert, since time.Time) bool {
	n := 0
	for _, a := range alerts {
		if a.Status != "firing" {
			continue
		}
		n++
		if !a.StartsAt.After(since) {
			return false
		}
	}
	return n > 0
}

// withContext puts a context line under the message's header, when it
// fits within Slack's limits.
func withContext(msg *slack.WebhookMessage, line string) {
	if len(msg.Attachments) == 0 {
		return
	}
	blocks := &msg.Attachments[0].Blocks.BlockSet
	if len(*blocks) == 0 {
		return
	}
	// One text element holds at most 3000 characters: a group of many
	// alerts with long label values is cut, not refused by Slack.
	if r := []rune(line); len(r) > slackkit.TextMax-100 {
		line = string(r[:slackkit.TextMax-100]) + "…"
	}
	if !slackkit.Budget(*blocks, 1, utf8.RuneCountInString(line)) {
		return
	}
	ctx := slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, line, false, false))
	at := 0
	if (*blocks)[0].BlockType() == slack.MBTHeader {
		at = 1
	}
	out := append([]slack.Block{}, (*blocks)[:at]...)
	out = append(out, ctx)
	*blocks = append(out, (*blocks)[at:]...)
}

// slackText is a plain text line for a message's text: one line, escaped,
// at most 300 characters.
func slackText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 300 {
		s = string([]rune(s)[:299]) + "…"
	}
	return slackkit.Escape(s)
}

func roundDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return model.Duration(d.Round(time.Minute)).String()
	}
	return model.Duration(d.Round(10 * time.Minute)).String()
}
