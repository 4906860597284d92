package advisor

import (
	"strings"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/rules"
)

// ChecklistSchema names the checklist's JSON contract.
const ChecklistSchema = "llmdoctor.checklist/v1"

// Item statuses.
const (
	Pass        = "pass"
	Fail        = "fail"
	CannotCheck = "cannot-check"
	// Unverified is the checklist's status when no blocking item failed
	// but some could not be checked: never READY on what was not measured.
	Unverified = "unverified"
)

// Checklist is the pre-launch verdict.
type Checklist struct {
	Schema  string            `json:"schema"`
	Sources []Source          `json:"sources"`
	Window  Window            `json:"window"`
	Notes   []string          `json:"notes,omitempty"`
	Targets []ChecklistTarget `json:"targets"`
	// Config is the configuration file the items ran with, when one was
	// read.
	Config string `json:"config,omitempty"`
	// Status is pass when every blocking item passed; fail when one failed
	// or, with Strict, could not be checked; unverified when none failed
	// but one could not be checked.
	Status string `json:"status"`
	Strict bool   `json:"strict"`
	// The items of every target: passed, failed, not checked, and the
	// blocking ones among those not checked (what keeps a gate from pass).
	Passed            int `json:"passed"`
	Failed            int `json:"failed"`
	CannotCheck       int `json:"cannot_check"`
	BlockingUnchecked int `json:"blocking_unchecked"`
}

// ChecklistTarget is one target's items.
type ChecklistTarget struct {
	Target      evidence.Target `json:"target"`
	Items       []Item          `json:"items"`
	Passed      int             `json:"passed"`
	Failed      int             `json:"failed"`
	CannotCheck int             `json:"cannot_check"`
}

// Item is one checklist item's outcome.
type Item struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Severity string `json:"severity"`
	Status   string `json:"status"`
	// Blocking items decide the gate; info items only advise.
	Blocking bool   `json:"blocking"`
	Message  string `json:"message"`
	// Evidence holds the values the item's condition and message cite, by
	// path (the fitted prompt-length slope a passing item quotes, …), so a
	// script need not parse them out of the message.
	Evidence map[string]float64 `json:"evidence,omitempty"`
	// Fix says what to do when the item fails; How, what evidence to add
	// when it cannot be checked.
	Fix []rules.Step `json:"fix,omitempty"`
	How string       `json:"how,omitempty"`
	// Missing names the evidence an item that cannot be checked lacks;
	// Absent, that every piece of it is absent altogether (not too thin,
	// not withheld as inconsistent).
	Missing []string `json:"missing,omitempty"`
	Absent  bool     `json:"absent,omitempty"`
	Docs    string   `json:"docs"`
}

// CheckTarget turns checklist rule results into items: fired fails, quiet
// passes, insufficient cannot be checked (never a pass).
func CheckTarget(e *evidence.Evidence, results []rules.Result) ChecklistTarget {
	t := ChecklistTarget{Target: e.Target, Items: []Item{}}
	for _, r := range results {
		title := r.Rule.Title
		if r.Rule.Item != "" {
			title = r.Rule.Item
		}
		it := Item{ID: r.Rule.ID, Title: title, Severity: r.Severity.String(), Blocking: r.Severity > rules.Info,
			Docs: r.Rule.DocsPath()}
		switch r.Outcome {
		case rules.Fired:
			it.Status, it.Message, it.Evidence, it.Fix = Fail, r.Message, r.Evidence, r.Rule.Steps(e)
			t.Failed++
		case rules.Quiet:
			it.Status, it.Message, it.Evidence = Pass, r.Rule.RenderOK(&e.Values), r.Evidence
			if r.Bound() != "" {
				// Passed by a bound: say what was missing and why it could not fail.
				it.Message = strings.TrimSpace(it.Message + " Not measured directly, but " + r.Bound() + ".")
			}
			t.Passed++
		default:
			g := gapOf(r)
			it.Status, it.How, it.Missing = CannotCheck, g.How, g.Missing
			it.Absent = len(g.Details) > 0
			for _, m := range g.Details {
				it.Absent = it.Absent && m.Why == "missing"
			}
			it.Message = "needs " + joinPaths(g.Missing)
			t.CannotCheck++
		}
		t.Items = append(t.Items, it)
	}
	return t
}

func joinPaths(p []string) string {
	out := ""
	for i, x := range p {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// Decide sets the overall status.
func (c *Checklist) Decide() {
	c.Passed, c.Failed, c.CannotCheck, c.BlockingUnchecked = 0, 0, 0, 0
	failed := false
	for _, t := range c.Targets {
		c.Passed += t.Passed
		c.Failed += t.Failed
		c.CannotCheck += t.CannotCheck
		for _, it := range t.Items {
			switch {
			case !it.Blocking:
			case it.Status == Fail:
				failed = true
			case it.Status == CannotCheck:
				c.BlockingUnchecked++
			}
		}
	}
	switch {
	case failed || c.Strict && c.BlockingUnchecked > 0:
		c.Status = Fail
	case c.BlockingUnchecked > 0:
		c.Status = Unverified
	default:
		c.Status = Pass
	}
}
