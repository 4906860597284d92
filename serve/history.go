package serve

import (
	"bytes"
	"compress/gzip"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/serve/core"
)

// What asked for a diagnosis (Request.Trigger), as the report pages name
// it.
const (
	TriggerWatch        = core.TriggerWatch
	TriggerAlertmanager = core.TriggerAlertmanager
	TriggerSlash        = core.TriggerSlash
	TriggerAPI          = core.TriggerAPI
)

// History bounds: DefaultReportHistory runs are kept per target unless
// Config.ReportHistory says otherwise; at most historyMaxTargets targets
// are kept, the one updated longest ago forgotten first.
const (
	DefaultReportHistory = 20
	historyMaxTargets    = 1000
	// slugMax bounds the readable part of a target's path segment.
	slugMax = 80
)

// history is the report pages' memory: the last runs of each target, in
// this process only. A run is one diagnosis of the latest window narrowed
// to one target, kept as gzipped JSON (a few KB), which also makes it a
// snapshot nothing else can change.
type history struct {
	size       int // runs kept per target
	maxTargets int

	mu     sync.Mutex
	byKey  map[string]*histTarget
	bySlug map[string]*histTarget
	order  *list.List // of *histTarget, most recently updated first
}

// histTarget is one target's runs, oldest first. A target narrowed by
// a run's selector (scope.go) is a target of its own: narrow is its
// narrowing matchers, wholeKey the key of the target it is part of; both
// are "" for a whole target.
type histTarget struct {
	key, slug, name  string
	narrow, wholeKey string
	runs             []*histRun
	elem             *list.Element
}

// histRun is one kept run. It never changes once recorded.
type histRun struct {
	id      string
	at      time.Time
	trigger string
	verdict core.Verdict
	summary string
	gz      []byte
}

// runRef names a recorded run of a target; the zero value is none.
type runRef = core.RunRef

func runPath(r runRef) string { return "/report/" + r.Slug + "/" + r.ID }

func newHistory(size, maxTargets int) *history {
	return &history{size: size, maxTargets: maxTargets, byKey: map[string]*histTarget{}, bySlug: map[string]*histTarget{}, order: list.New()}
}

// record keeps each target of d as a run of its own, and returns each
// target's run in d's order (a zero runRef for one that could not be
// kept). A run whose selector narrows its target (scope.go) is kept
// under the narrowed target, never the whole one; every run's page says
// its scope in a note.
func (h *history) record(d *advisor.Diagnosis, sc runScope, now time.Time) ([]runRef, error) {
	refs := make([]runRef, len(d.Targets))
	type prepared struct {
		key, wholeKey, narrow string
		parts                 []string
		run                   *histRun
	}
	// Encoding is the costly part: done before the lock.
	preps := make([]prepared, len(d.Targets))
	var errs []error
	for i, t := range d.Targets {
		p := prepared{key: targetKeyOf(t.Target)}
		p.narrow, p.parts = narrowing(sc.selector, t.Target)
		name := targetName(t.Target)
		if p.narrow != "" {
			p.wholeKey = p.key
			p.key += "\n" + p.narrow
			name += " · " + p.narrow
		}
		gz, err := encodeRun(d, i, scopeNote(sc, targetName(t.Target), p.narrow, d.Window.Seconds))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		p.run = &histRun{at: now, trigger: sc.trigger, verdict: core.VerdictOf(t), summary: t.Primary.Summary, gz: gz}
		preps[i] = p
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, p := range preps {
		if p.run == nil {
			continue
		}
		ht := h.byKey[p.key]
		if ht == nil {
			ht = h.add(p.key, d.Targets[i].Target, p.wholeKey, p.narrow, p.parts)
		} else {
			h.order.MoveToFront(ht.elem)
		}
		p.run.id = ht.nextID(now)
		ht.runs = append(ht.runs, p.run)
		if n := len(ht.runs) - h.size; n > 0 {
			clear(ht.runs[:n])
			ht.runs = ht.runs[n:]
		}
		refs[i] = runRef{Slug: ht.slug, ID: p.run.id}
	}
	if len(errs) > 0 {
		return refs, fmt.Errorf("not kept for the report pages: %w", errors.Join(errs...))
	}
	return refs, nil
}

// add starts a target (t narrowed by narrow, made of parts, when it is
// not ""), forgetting the one updated longest ago beyond maxTargets;
// under mu.
func (h *history) add(key string, t evidence.Target, wholeKey, narrow string, parts []string) *histTarget {
	for h.order.Len() >= h.maxTargets {
		old := h.order.Back().Value.(*histTarget)
		h.order.Remove(old.elem)
		delete(h.byKey, old.key)
		delete(h.bySlug, old.slug)
	}
	ht := &histTarget{key: key, name: targetName(t), slug: slugOf(t), narrow: narrow, wholeKey: wholeKey}
	if narrow != "" {
		// A whole target's segment never holds "--": a narrowed one's
		// never takes it.
		ht.name += " · " + narrow
		ht.slug += "--" + slugify(parts, "narrowed")
	}
	ht.slug = h.uniqueSlug(key, ht.slug)
	ht.elem = h.order.PushFront(ht)
	h.byKey[key] = ht
	h.bySlug[ht.slug] = ht
	return ht
}

// uniqueSlug is slug, or, when another target holds it, slug with a short
// hash of the target's identity (longer until it is free); under mu.
func (h *history) uniqueSlug(key, slug string) string {
	if _, taken := h.bySlug[slug]; !taken {
		return slug
	}
	sum := sha256.Sum256([]byte(key))
	hx := hex.EncodeToString(sum[:])
	for n := 6; ; n += 2 {
		s := slug + "-" + hx[:n]
		if _, taken := h.bySlug[s]; !taken || n >= len(hx) {
			return s
		}
	}
}

// nextID is a new run's id: when it ran, in UTC to the second
// (20261201-002000), with -2, -3… for more runs in the same second. Ids
// from the time stay unique across restarts, so that a link posted
// before one never shows another run.
func (ht *histTarget) nextID(now time.Time) string {
	base := now.UTC().Format(runIDLayout)
	id := base
	for n := 2; ht.has(id); n++ {
		id = base + "-" + strconv.Itoa(n)
	}
	return id
}

const runIDLayout = "20060102-150405"

func (ht *histTarget) has(id string) bool {
	for _, r := range ht.runs {
		if r.id == id {
			return true
		}
	}
	return false
}

// parseRunID reads a run id into its time and its count within the
// second (1 for none); ok is false for anything else.
func parseRunID(id string) (t time.Time, n int, ok bool) {
	if len(id) < len(runIDLayout) {
		return t, 0, false
	}
	t, err := time.Parse(runIDLayout, id[:len(runIDLayout)])
	if err != nil {
		return t, 0, false
	}
	rest := id[len(runIDLayout):]
	if rest == "" {
		return t, 1, true
	}
	num, found := strings.CutPrefix(rest, "-")
	n, err = strconv.Atoi(num)
	if !found || err != nil || n < 2 || strconv.Itoa(n) != num {
		return t, 0, false
	}
	return t, n, true
}

// runBefore says whether run id a was made before run id b.
func runBefore(a, b string) bool {
	ta, na, oka := parseRunID(a)
	tb, nb, okb := parseRunID(b)
	if !oka || !okb {
		return false
	}
	return ta.Before(tb) || ta.Equal(tb) && na < nb
}

// targetView is what a page needs of a target, copied under the lock.
type targetView struct {
	slug, name string
	runs       []*histRun // newest first
	// whole is, for a narrowed target, the whole target's when it is
	// kept (else nil).
	whole *targetView
}

// target is a copy of the target of a slug; ok is false when none is kept.
func (h *history) target(slug string) (targetView, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ht := h.bySlug[slug]
	if ht == nil {
		return targetView{}, false
	}
	return h.view(ht), true
}

// view copies a target for a page; under mu.
func (h *history) view(ht *histTarget) targetView {
	v := ht.view()
	if w := h.byKey[ht.wholeKey]; ht.narrow != "" && w != nil {
		wv := w.view()
		v.whole = &wv
	}
	return v
}

func (ht *histTarget) view() targetView {
	v := targetView{slug: ht.slug, name: ht.name, runs: make([]*histRun, len(ht.runs))}
	for i, r := range ht.runs {
		v.runs[len(ht.runs)-1-i] = r
	}
	return v
}

// all is every kept target.
func (h *history) all() []targetView {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]targetView, 0, h.order.Len())
	for e := h.order.Front(); e != nil; e = e.Next() {
		out = append(out, h.view(e.Value.(*histTarget)))
	}
	return out
}

// encodeRun is d narrowed to its i-th target (sources, window and notes
// kept), note first among its notes, as gzipped JSON.
func encodeRun(d *advisor.Diagnosis, i int, note string) ([]byte, error) {
	one := *d
	one.Targets = d.Targets[i : i+1 : i+1]
	if note != "" {
		one.Notes = append([]string{note}, d.Notes...)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if err := json.NewEncoder(zw).Encode(&one); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(b.Bytes()), nil
}

// diagnosis decodes the run's diagnosis.
func (r *histRun) diagnosis() (*advisor.Diagnosis, error) {
	zr, err := gzip.NewReader(bytes.NewReader(r.gz))
	if err != nil {
		return nil, err
	}
	var d advisor.Diagnosis
	if err := json.NewDecoder(zr).Decode(&d); err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, zr)
	return &d, err
}

// targetKeyOf is a target's identity: all of evidence.Target as JSON, as
// the watch keys its state.
func targetKeyOf(t evidence.Target) string {
	b, _ := json.Marshal(t)
	return string(b)
}

// targetName names a target as the reports do: "model m, instance i,
// namespace=prod".
func targetName(t evidence.Target) string {
	var parts []string
	for _, p := range []struct{ k, v string }{{"model ", t.Model}, {"instance ", t.Instance}, {"engine ", t.Engine}} {
		if p.v != "" {
			parts = append(parts, p.k+p.v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(t.Labels)) {
		if v := t.Labels[k]; v != t.Model && v != t.Instance && v != t.Engine {
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return "all series"
	}
	return strings.Join(strings.Fields(strings.Join(parts, ", ")), " ")
}

// slugOf is the readable path segment of a target: its model, instance,
// engine and other group-by label values, lowercased, anything but
// [a-z0-9.-] turned into '-', runs of '-' folded, at most slugMax
// characters, never starting or ending with '.' or '-' (so never "." or
// "..").
func slugOf(t evidence.Target) string {
	parts := []string{t.Model, t.Instance, t.Engine}
	for _, k := range slices.Sorted(maps.Keys(t.Labels)) {
		if v := t.Labels[k]; v != t.Model && v != t.Instance && v != t.Engine {
			parts = append(parts, v)
		}
	}
	return slugify(parts, "all-series")
}

// slugify is parts made a path segment as slugOf says; none is what an
// empty one is.
func slugify(parts []string, none string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.Join(parts, "-")) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.':
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	s := b.String()
	if len(s) > slugMax {
		s = s[:slugMax]
	}
	s = strings.Trim(s, ".-")
	if s == "" {
		return none
	}
	return s
}
