package view

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
)

// Item outcomes as the gate counts them.
const (
	// ItemFails: a blocking item failed, or could not be checked under
	// strict; it fails the gate.
	ItemFails = "fails"
	// ItemAdvisory: an advisory item failed; the gate still passes.
	ItemAdvisory = "advisory"
	// ItemUnchecked: an item could not be checked and does not fail the
	// gate (it leaves it unverified when it is blocking).
	ItemUnchecked = "unchecked"
	ItemPasses    = "passes"
)

// Checklist is a checklist as people read it: the gate decided once.
type Checklist struct {
	// Status is the advisor's: pass, fail or unverified.
	Status string
	// Severity is healthy, critical or inconclusive; Verdict the headline
	// ("✓ READY", "✗ NOT READY", "? NOT VERIFIED").
	Severity, Verdict string
	// Unverified says, under an unverified headline, how much could not be
	// checked; "" otherwise.
	Unverified string
	// Empty is the "nothing was checked" text when there is no target.
	Empty   string
	Strict  bool
	Targets []ChecklistTarget
}

// ChecklistTarget is one target's checklist.
type ChecklistTarget struct {
	Name string
	// Severity is the target's gate: critical (not ready), inconclusive
	// (not verified), warning (ready, an advisory item failed) or healthy;
	// Verdict its headline.
	Severity, Verdict string
	// Items in the order to read them: failures (blocking first), then
	// what could not be checked, then passes.
	Items []Item
	// Counts is "2 passed · 1 failed · 0 could not be checked", with what
	// strict makes of the unchecked.
	Counts string
	Report *advisor.ChecklistTarget
}

// Item is one checklist item with its outcome at the gate.
type Item struct {
	advisor.Item
	// Outcome is ItemFails, ItemAdvisory, ItemUnchecked or ItemPasses.
	Outcome string
	// Mark is "✓ PASS", "✗ FAIL" or "? CANNOT CHECK".
	Mark string
}

// ChecklistOf decides a checklist's gate and its targets'.
func ChecklistOf(c *advisor.Checklist) Checklist {
	v := Checklist{Status: c.Status, Strict: c.Strict}
	switch c.Status {
	case advisor.Pass:
		v.Severity, v.Verdict = Healthy, "✓ READY"
	case advisor.Unverified:
		v.Severity, v.Verdict = Inconclusive, "? NOT VERIFIED"
		n := c.BlockingUnchecked
		v.Unverified = fmt.Sprintf("Nothing failed, but %d blocking item%s could not be checked (%d of %d items in all): the launch is not verified. --strict counts them as failed.",
			n, Plural(n), c.CannotCheck, c.Passed+c.Failed+c.CannotCheck)
	default:
		v.Severity, v.Verdict = Critical, "✗ NOT READY"
	}
	if len(c.Targets) == 0 {
		v.Empty = NoTargetsChecklist
	}
	for i := range c.Targets {
		v.Targets = append(v.Targets, checklistTarget(c, &c.Targets[i]))
	}
	return v
}

func checklistTarget(c *advisor.Checklist, t *advisor.ChecklistTarget) ChecklistTarget {
	v := ChecklistTarget{Name: Name(t.Target), Report: t}
	var fails, advisory, unchecked bool
	for _, it := range t.Items {
		vi := Item{Item: it, Outcome: ItemOutcome(it, c.Strict), Mark: ItemMark(it.Status)}
		switch vi.Outcome {
		case ItemFails:
			fails = true
		case ItemAdvisory:
			advisory = true
		case ItemUnchecked:
			// Only an item that decides the gate leaves it unverified.
			unchecked = unchecked || it.Blocking
		}
		v.Items = append(v.Items, vi)
	}
	rank := func(it Item) int {
		switch {
		case it.Status == advisor.Fail && it.Blocking:
			return 0
		case it.Status == advisor.Fail:
			return 1
		case it.Status == advisor.CannotCheck:
			return 2
		}
		return 3
	}
	slices.SortStableFunc(v.Items, func(a, b Item) int { return rank(a) - rank(b) })
	switch {
	case fails:
		v.Severity, v.Verdict = Critical, "✗ NOT READY"
	case unchecked:
		v.Severity, v.Verdict = Inconclusive, "? NOT VERIFIED"
	case advisory:
		v.Severity, v.Verdict = Warning, "✓ READY"
	default:
		v.Severity, v.Verdict = Healthy, "✓ READY"
	}
	v.Counts = fmt.Sprintf("%d passed · %d failed · %d could not be checked", t.Passed, t.Failed, t.CannotCheck)
	if c.Strict && t.CannotCheck > 0 {
		v.Counts += " (strict: counts as failed)"
	}
	return v
}

// ItemOutcome is what an item does to the gate: a blocking failure fails
// it, and so does a blocking item that could not be checked under strict.
func ItemOutcome(it advisor.Item, strict bool) string {
	switch {
	case it.Status == advisor.Fail && it.Blocking, it.Status == advisor.CannotCheck && it.Blocking && strict:
		return ItemFails
	case it.Status == advisor.Fail:
		return ItemAdvisory
	case it.Status == advisor.CannotCheck:
		return ItemUnchecked
	}
	return ItemPasses
}

// ItemMark is an item's status in a symbol and words.
func ItemMark(status string) string {
	switch status {
	case advisor.Pass:
		return "✓ PASS"
	case advisor.Fail:
		return "✗ FAIL"
	}
	return "? CANNOT CHECK"
}

// FirstScreen is what the checklist's first screen shows of a target:
// every failure, every SLO gate with its number, every other item that
// could not be checked; items that wait only on the engine's metrics when
// no source gives them (every piece absent, not merely too thin), and the
// other passes, by id in a line each.
func (t ChecklistTarget) FirstScreen() (shown []Item, engine, passed []string) {
	for _, it := range t.Items {
		switch {
		case it.Status == advisor.Pass && !strings.HasPrefix(it.ID, "slo/"):
			passed = append(passed, it.ID)
		case it.Status == advisor.CannotCheck && t.Report.Target.ServedBy == "" && it.Absent && AllEngine(it.Missing):
			engine = append(engine, it.ID)
		default:
			shown = append(shown, it)
		}
	}
	return shown, engine, passed
}
