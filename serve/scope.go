package serve

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/evidence"
)

// A run's scope: what the diagnosis that made it covered. The watch, an
// alert and a slash command each add a selector of their own to the
// server's; a matcher of it that the target's identity does not already
// imply (instance="x" for a target grouped by model_name) narrows the run
// to part of the target. Such a run is not the target's: the history keeps
// it as a target of its own, named and slugged after the narrowing
// ("model m · instance=\"x\"", /report/m--instance-x), so that the page of
// a target, and the index, never show a part as the whole. Every kept run
// says its scope in a note at the top of its page.

// runScope is what the history needs of a request to say what a run
// covered.
type runScope struct {
	trigger, reason string
	// selector is the request's own selector, applied the server's
	// selector and the request's together.
	selector, applied string
	window            time.Duration
	end               time.Time
}

// fixedLabels are the label values a target's identity fixes: its
// group-by labels (a target without them, as tests build, is its model's).
func fixedLabels(t evidence.Target) map[string]string {
	if len(t.Labels) > 0 {
		return t.Labels
	}
	if t.Model != "" {
		return map[string]string{"model_name": t.Model}
	}
	return nil
}

// narrowing is the part of sel that narrows target t: its matchers, in
// canonical form and sel's order, but for those on a label t's identity
// fixes to a value they accept ("" when sel narrows nothing). A selector
// that cannot be read narrows by all of it.
func narrowing(sel string, t evidence.Target) (text string, parts []string) {
	ms, ok := prom.ParseSelector(sel)
	if !ok {
		s := strings.Join(strings.Fields(sel), " ")
		return s, []string{s}
	}
	fixed := fixedLabels(t)
	var texts []string
	for _, m := range ms {
		if v, ok := fixed[m.Label]; ok && m.Matches(v) {
			continue
		}
		texts = append(texts, m.Text)
		parts = append(parts, m.Label, m.Value)
	}
	return strings.Join(texts, ","), parts
}

// scopeNote is the note a kept run's page opens with: what the run
// covered (the whole target, or the part of it narrow selects), what
// asked for it, the selector applied and the window.
func scopeNote(sc runScope, name, narrow string, windowSeconds float64) string {
	var b strings.Builder
	if narrow != "" {
		fmt.Fprintf(&b, "narrowed run: it covers only the series of %s matching %s, not the whole target", name, narrow)
	} else {
		fmt.Fprintf(&b, "this run covers every series of %s", name)
	}
	b.WriteString(" · asked by " + triggerWords(sc.trigger))
	if sc.reason != "" {
		b.WriteString(" (" + sc.reason + ")")
	}
	if sc.applied != "" {
		b.WriteString(" · selector " + sc.applied)
	} else {
		b.WriteString(" · no selector")
	}
	w := sc.window
	if w <= 0 && windowSeconds > 0 {
		w = time.Duration(windowSeconds * float64(time.Second))
	}
	if w > 0 {
		b.WriteString(" · window " + model.Duration(w.Round(time.Second)).String())
		if !sc.end.IsZero() {
			b.WriteString(" ending " + sc.end.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
	}
	return b.String()
}

// triggerWords names what asked for a run in a sentence.
func triggerWords(trigger string) string {
	switch trigger {
	case TriggerWatch:
		return "the watch"
	case TriggerAlertmanager:
		return "Alertmanager"
	case TriggerSlash:
		return "a slash command"
	case "":
		return "the server"
	}
	return trigger
}
