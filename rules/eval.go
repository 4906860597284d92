package rules

import (
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/units"
)

// Outcome of one rule on one target.
type Outcome uint8

// Outcomes.
const (
	Fired Outcome = iota + 1
	Quiet
	Insufficient
	// Skipped: a source the rule needs (Rule.Needs) is absent altogether.
	Skipped
)

func (o Outcome) String() string {
	switch o {
	case Fired:
		return "fired"
	case Quiet:
		return "quiet"
	case Insufficient:
		return "insufficient"
	case Skipped:
		return "skipped"
	}
	return "none"
}

// MarshalText writes the name.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// Result is one rule's outcome on one target. A fleet's diagnosis holds one
// per rule and target, so it is kept small (64 bytes): what only some
// results carry sits behind Notes.
type Result struct {
	Rule *Rule
	// Evidence holds, by path, the values the result cites: on a fired
	// result every value the condition, impact and message read; on a quiet
	// result of a rule with a passing message (a checklist item) those of
	// the condition, that message and the bound that held, when they have a
	// value.
	Evidence map[string]float64
	Message  string
	// Impact is the share of the rule's stage's latency the finding
	// accounts for: NaN when the share is unknown. ImpactMax bounds it from
	// above where it is unknown (and equals it where known): enough to cap
	// a small stage.
	Impact, ImpactMax float64
	Outcome           Outcome
	Severity          Severity
	// Notes is nil when the result has none; read it through the methods.
	// Results may share one Notes: never change it in place.
	Notes *Notes
}

// Notes are what only some results carry.
type Notes struct {
	// Bound, on a quiet result, says why the rule could not fire although
	// some of what it reads is missing.
	Bound string
	// Explains, on a fired result, are the bottlenecks it is the cause of
	// here: the rule's explains, and those of explains_if that held.
	Explains []string
	// Missing names what kept an insufficient rule from running.
	Missing []Missing
	// Suppressed holds the reason when a suppression matched.
	Suppressed string
	// Tentative, on a fired result, says it fired on what one reading
	// plainly shows (the rule's plain condition), not on a window.
	Tentative bool
}

// Tentative reports whether a fired result rests on one reading.
func (r *Result) Tentative() bool { return r.Notes != nil && r.Notes.Tentative }

// Stage is the part of latency the rule's bottleneck holds or slows.
func (r *Result) Stage() string {
	if r.Rule == nil {
		return ""
	}
	return r.Rule.Stage
}

// Bound is Notes.Bound, "" without notes.
func (r *Result) Bound() string {
	if r.Notes == nil {
		return ""
	}
	return r.Notes.Bound
}

// Explains is Notes.Explains.
func (r *Result) Explains() []string {
	if r.Notes == nil {
		return nil
	}
	return r.Notes.Explains
}

// Missing is Notes.Missing.
func (r *Result) Missing() []Missing {
	if r.Notes == nil {
		return nil
	}
	return r.Notes.Missing
}

// Suppressed is Notes.Suppressed.
func (r *Result) Suppressed() string {
	if r.Notes == nil {
		return ""
	}
	return r.Notes.Suppressed
}

// Missing is one absent or too-thin piece of evidence.
type Missing struct {
	Path string `json:"path"`
	// Why: "missing" or "only N samples (need M)".
	Why string `json:"why"`
	How string `json:"how"`
}

// DefaultMinSamples is the fewest observations a distribution needs in the
// window before a rule may judge it.
const DefaultMinSamples = 20

// DefaultMinGaugeSamples is the fewest samples a gauge summary needs: one
// sample is a moment, not a window.
const DefaultMinGaugeSamples = 2

// DefaultMinShare is the share of latency below which a finding's stage is
// too small to be critical or to be the verdict.
const DefaultMinShare = 0.2

// EvaluateEach evaluates the set on every target: out[i] is Evaluate of
// targets[i]. Targets are independent, so a fleet's are spread over the
// machine's cores; a few targets are not worth a goroutine.
func (s *Set) EvaluateEach(targets []*evidence.Evidence, cfg *Config) [][]Result {
	out := make([][]Result, len(targets))
	// One array holds every target's results: one allocation, not one per
	// target.
	n := len(s.Rules)
	all := make([]Result, len(targets)*n)
	const chunk = 32
	workers := min(runtime.GOMAXPROCS(0), (len(targets)+chunk-1)/chunk)
	if workers <= 1 {
		for i, e := range targets {
			out[i] = s.evaluate(e, cfg, all[i*n:i*n:(i+1)*n])
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				end := int(next.Add(chunk))
				start := end - chunk
				if start >= len(targets) {
					return
				}
				for i := start; i < min(end, len(targets)); i++ {
					out[i] = s.evaluate(targets[i], cfg, all[i*n:i*n:(i+1)*n])
				}
			}
		})
	}
	wg.Wait()
	return out
}

// Evaluate runs every enabled rule on the evidence: first the rules that read
// evidence only, then those that read the verdict of the first.
func (s *Set) Evaluate(e *evidence.Evidence, cfg *Config) []Result {
	return s.evaluate(e, cfg, make([]Result, 0, len(s.Rules)))
}

// evaluate is Evaluate into out, which is empty with room for every rule.
func (s *Set) evaluate(e *evidence.Evidence, cfg *Config, out []Result) []Result {
	if cfg == nil {
		cfg = &Config{}
	}
	st := newState(e, cfg)
	defer st.done()
	var unchecked *Notes
	for pass := 0; pass < 2; pass++ {
		if pass == 1 {
			st.verdict = verdict(out, cfg.MinShareOrDefault())
			if m := uncheckedCritical(out); len(m) > 0 {
				unchecked = &Notes{Missing: m}
			}
		}
		for _, r := range s.Rules {
			if r.usesVerdict != (pass == 1) || !cfg.Enabled(r.ID) {
				continue
			}
			// Each result is built in place, in memory make zeroed. Each
			// rule runs in one pass, so out has room.
			out = out[:len(out)+1]
			res := &out[len(out)-1]
			if i := st.missingNeed(r); i >= 0 {
				res.Rule, res.Severity, res.Outcome, res.Notes = r, cfg.severity(r), Skipped, r.needGaps[i]
			} else if r.usesVerdict && unchecked != nil {
				// A judgement of the whole diagnosis needs the rules that decide it.
				res.Rule, res.Severity, res.Outcome, res.Notes = r, cfg.severity(r), Insufficient, unchecked
			} else {
				st.evalOne(r, res)
			}
			if res.Outcome == Fired {
				if why := cfg.suppressed(r.ID, e.Target); why != "" {
					// A fired result's notes are its own.
					if res.Notes == nil {
						res.Notes = st.newNotes()
					}
					res.Notes.Suppressed = why
				}
			}
		}
	}
	return out
}

// state is one target's evaluation: what every rule run on it shares.
// States are pooled: they keep their scratch from target to target.
type state struct {
	perTarget
	// vals is a copy of the target's values, read once in order: the rules
	// read them in no order, and would miss the cache on most fields.
	vals    evidence.Values
	machine *vm.VM
	buf     []byte
	// gaps and notes are where results' gaps and notes are made, many to an
	// array; each result holds its own part. They outlive a target.
	gaps  []Missing
	notes []Notes
	// lastGaps is the notes each rule last gave for missing inputs: a
	// fleet's replicas mostly lack the same ones, and an equal list shares
	// them.
	lastGaps map[*Rule]*Notes
}

type perTarget struct {
	e                    *evidence.Evidence
	v                    *evidence.Values
	cfg                  *Config
	minSamples, minGauge float64
	// withheld: the evidence has inconsistencies, so each input is looked
	// up among them.
	withheld bool
	verdict  Verdict
	fr       frame
	// params is the rule's params as a map, for the VM and text/template.
	params map[string]float64
	env    *Env
}

var states = sync.Pool{New: func() any { return &state{buf: make([]byte, 0, 512)} }}

func newState(e *evidence.Evidence, cfg *Config) *state {
	st := states.Get().(*state)
	st.vals = e.Values
	st.perTarget = perTarget{e: e, v: &st.vals, cfg: cfg, minSamples: cfg.minSamples(), minGauge: cfg.minGaugeSamples(),
		withheld: len(e.Inconsistencies) > 0}
	st.fr = frame{v: st.v, verdict: &st.verdict, text: e.Text}
	return st
}

// done returns st to the pool. What it keeps of the target (the arrays
// results' gaps and notes are cut from, lastGaps) is never changed where a
// result holds it.
func (st *state) done() {
	st.perTarget = perTarget{}
	states.Put(st)
}

// setParams makes r's params, with the config's overrides, what
// expressions and messages read.
func (st *state) setParams(r *Rule) {
	st.params, st.fr.params = r.Params, r.paramVals
	if o, ok := st.cfg.Rules[r.ID]; ok && len(o.Params) > 0 {
		st.params = st.cfg.params(r)
		st.fr.params = make([]float64, len(r.paramNames))
		for i, p := range r.paramNames {
			st.fr.params[i] = st.params[p]
		}
	}
}

// test runs a boolean expression: its closures, or the VM with the
// environment the VM reads.
func (st *state) test(x *expression) (any, error) {
	if x.test != nil {
		return x.test(&st.fr), nil
	}
	return st.run(x)
}

// number runs a numeric expression; false when it fails or is no float64.
func (st *state) number(x *expression) (float64, bool) {
	if x.num != nil {
		return x.num(&st.fr), true
	}
	v, err := st.run(x)
	f, ok := v.(float64)
	return f, ok && err == nil
}

func (st *state) run(x *expression) (any, error) {
	if st.env == nil {
		st.env = newEnv(st.v)
	}
	if st.machine == nil {
		st.machine = &vm.VM{}
	}
	st.env.Params, st.env.Verdict = st.params, st.verdict
	return st.machine.Run(x.prog, st.env)
}

// missingNeed returns the first source r needs that the evidence lacks, as
// an index in r.Needs, or -1; the checklist sets KeepNeeds, so there an
// absent source is "cannot check".
func (st *state) missingNeed(r *Rule) int {
	if st.cfg.KeepNeeds {
		return -1
	}
	for i, at := range r.needs {
		if !evidence.Present(at.get(st.v)) {
			return i
		}
	}
	return -1
}

// Deciding reports whether a result is one the verdict depends on: a
// critical rule about the server, not about how it was measured.
func Deciding(r Result) bool {
	return r.Severity == Critical && r.Rule.Bottleneck != "measurement" && r.Rule.Bottleneck != "client"
}

func uncheckedCritical(rs []Result) []Missing {
	var out []Missing
	for i := range rs {
		if r := &rs[i]; r.Outcome == Insufficient && Deciding(*r) {
			out = append(out, Missing{Path: r.Rule.ID, Why: "could not run", How: "see that rule's gap"})
		}
	}
	return out
}

func verdict(rs []Result, minShare float64) Verdict {
	var v Verdict
	var bn []string // distinct bottlenecks: few, so a list
	for i := range rs {
		r := &rs[i]
		if r.Outcome != Fired || r.Suppressed() != "" {
			continue
		}
		switch CapSeverity(r.Severity, causeMax(r, rs), minShare) {
		case Critical:
			v.Critical++
		case Warning:
			v.Warning++
		case Info:
			v.Info++
		}
		// Findings on one stage (slow decode and the bandwidth behind it)
		// are one bottleneck; a finding that names none is none.
		key := r.Rule.Bottleneck
		if st := r.Stage(); st != "" {
			key = "stage " + st
		}
		if r.Rule.Bottleneck != "none" && !slices.Contains(bn, key) {
			bn = append(bn, key)
		}
		if evidence.Present(r.Impact) {
			v.TopImpact = math.Max(v.TopImpact, r.Impact)
		}
	}
	v.Bottlenecks = float64(len(bn))
	return v
}

// causeMax is a finding's impact bound raised to those of the findings it
// explains, as the advisor weighs a cause; an effect without a bound leaves
// the cause unbounded.
func causeMax(r *Result, rs []Result) float64 {
	m := r.ImpactMax
	if r.Severity < Warning {
		return m // an info finding explains nothing
	}
	for i := range rs {
		o := &rs[i]
		if o.Outcome != Fired || o.Suppressed() != "" || o.Rule == r.Rule || !slices.Contains(r.Explains(), o.Rule.Bottleneck) {
			continue
		}
		if !evidence.Present(o.ImpactMax) {
			return math.NaN()
		}
		if evidence.Present(m) {
			m = math.Max(m, o.ImpactMax)
		}
	}
	return m
}

// CapSeverity lowers a critical finding whose stage holds less than
// minShare of the latency to a warning. Its upper bound decides where the
// impact is unknown; with neither known, nothing is capped.
func CapSeverity(s Severity, impactMax, minShare float64) Severity {
	if s == Critical && Capped(impactMax, minShare) {
		return Warning
	}
	return s
}

// Capped reports whether a finding whose impact is at most impactMax is too
// small to be critical or the verdict.
func Capped(impactMax, minShare float64) bool {
	return evidence.Present(impactMax) && impactMax < minShare
}

// newNotes makes notes for a result.
func (st *state) newNotes() *Notes {
	if len(st.notes) == cap(st.notes) {
		st.notes = make([]Notes, 0, 16)
	}
	st.notes = st.notes[:len(st.notes)+1]
	return &st.notes[len(st.notes)-1]
}

// missingNotes are notes naming what of reads is missing: those the rule
// gave last when they name the same.
func (st *state) missingNotes(r *Rule, reads []input) *Notes {
	saved := st.gaps // scan may move to a new array
	m := st.missing(reads)
	if last := st.lastGaps[r]; last != nil && slices.Equal(last.Missing, m) {
		st.gaps = saved // nothing holds what scan added
		return last
	}
	if st.lastGaps == nil || len(st.lastGaps) > 1024 {
		st.lastGaps = map[*Rule]*Notes{}
	}
	n := st.newNotes()
	n.Missing = m
	st.lastGaps[r] = n
	return n
}

// evalOne fills res, which is zero.
func (st *state) evalOne(r *Rule, res *Result) {
	cfg := st.cfg
	res.Rule, res.Severity, res.Impact, res.ImpactMax = r, cfg.severity(r), math.NaN(), math.NaN()
	st.setParams(r)
	if r.skipIf != nil && st.present(r.skipIfIn) {
		if ok, err := st.test(r.skipIf); err == nil && ok == true {
			res.Outcome = Quiet
			res.Evidence = r.passCites(st.v, r.skipIfIn)
			return
		}
	}
	if r.applies != nil {
		if !st.present(r.appliesIn) {
			res.Notes = st.missingNotes(r, r.appliesIn)
			res.Outcome = Insufficient
			// Whether it applies is unknown, but a bound may show it could
			// not fire either way.
			if why, in := r.bounded(st); why != "" {
				n := st.newNotes()
				*n = Notes{Missing: res.Notes.Missing, Bound: why}
				res.Outcome, res.Notes = Quiet, n
				res.Evidence = r.passCites(st.v, r.appliesIn, in)
			}
			return
		}
		if ok, err := st.test(r.applies); err == nil && ok == false {
			res.Outcome = Quiet
			res.Evidence = r.passCites(st.v, r.appliesIn)
			return
		}
	}
	if !st.present(r.in) {
		if r.plain != nil && st.plainFires(r) {
			st.fire(r, res)
			for _, f := range r.plainIn {
				res.Evidence[f.Path] = f.at.get(st.v)
			}
			if res.Notes == nil {
				res.Notes = st.newNotes()
			}
			res.Notes.Tentative = true
			return
		}
		res.Notes = st.missingNotes(r, r.in)
		res.Outcome = Insufficient
		if why, in := r.bounded(st); why != "" {
			// Shared notes are never changed: these get their own.
			n := st.newNotes()
			*n = Notes{Missing: res.Notes.Missing, Bound: why}
			res.Outcome, res.Notes = Quiet, n
			res.Evidence = r.passCites(st.v, r.in, in)
		}
		return
	}
	out, err := st.test(r.when)
	if err != nil {
		res.Outcome = Insufficient
		res.Notes = st.newNotes()
		res.Notes.Missing = []Missing{{Path: r.ID, Why: "condition failed: " + oneLine(err)}}
		return
	}
	if fired, _ := out.(bool); !fired {
		res.Outcome = Quiet
		res.Evidence = r.passCites(st.v, r.in)
		return
	}
	st.fire(r, res)
}

// plainFires reports whether a rule that cannot run for thin gauges fires
// on its plain condition: every input is there, some on fewer samples than
// a window needs, and what one reading shows holds.
func (st *state) plainFires(r *Rule) bool {
	if !st.thinOnly(r.in) || !st.thinOnly(r.plainIn) {
		return false
	}
	out, err := st.test(r.plain)
	fired, _ := out.(bool)
	return err == nil && fired
}

// thinOnly reports whether the inputs are all there, withheld by nothing,
// distributions counted enough, gauges on at least one sample.
func (st *state) thinOnly(reads []input) bool {
	saved := st.minGauge
	st.minGauge = 1
	ok := st.present(reads)
	st.minGauge = saved
	return ok
}

// fire fills res as a fired result of r: the values it read, its impact,
// what it explains and its message.
func (st *state) fire(r *Rule, res *Result) {
	res.Outcome = Fired
	res.Evidence = make(map[string]float64, len(r.in)+len(r.verdictReads))
	for _, f := range r.in {
		res.Evidence[f.Path] = f.at.get(st.v)
	}
	for _, name := range r.verdictReads {
		res.Evidence[verdictKeys[name]] = verdictByName[name](st.verdict)
	}
	switch {
	case r.impact != nil:
		if x, ok := st.number(r.impact); ok && evidence.Present(x) {
			res.Impact = math.Max(0, math.Min(1, x))
		}
	case r.share != nil:
		if x := r.shareAt.get(st.v); evidence.Present(x) && (!st.withheld || st.e.Inconsistent(r.share.Path) == "") {
			res.Impact = math.Max(0, math.Min(1, x))
		}
		if x := r.shareMaxAt.get(st.v); evidence.Present(x) {
			res.ImpactMax = math.Max(0, math.Min(1, x))
		}
	}
	if evidence.Present(res.Impact) {
		res.ImpactMax = res.Impact
	}
	// The rule's own list is shared, clipped so that an append copies it.
	explains := slices.Clip(r.Explains)
	for _, b := range r.explainsOrder {
		c := r.explainsIf[b]
		if !st.present(c.in) {
			continue // unknown: explain nothing on a guess
		}
		if ok, err := st.test(c.cond); err == nil && ok == true {
			explains = append(explains, b)
		}
	}
	if len(explains) > 0 {
		res.Notes = st.newNotes()
		res.Notes.Explains = explains
	}
	res.Message = st.message(r)
}

// message renders what a fired rule says, or its title when the template
// fails.
func (st *state) message(r *Rule) string {
	if r.msg != nil {
		if b, ok := r.msg(&st.fr, st.buf[:0]); ok {
			st.buf = b
			return collapse(b)
		}
	}
	msg, err := r.render(st.v, st.e.Text, st.params, st.verdict)
	if err != nil {
		return r.Title
	}
	return msg
}

// passCites is what a quiet result cites: nothing for a rule without a
// passing message (diagnosis rules, whose quiet results nobody shows, so a
// diagnosis of a thousand targets does not build maps for them).
func (r *Rule) passCites(v *evidence.Values, inputs ...[]input) map[string]float64 {
	if r.ok == nil {
		return nil
	}
	return cited(v, append(inputs, r.okIn)...)
}

// cited collects the values of the given fields that are present, by path:
// what a result cites. NaN has no JSON form and cites nothing.
func cited(v *evidence.Values, inputs ...[]input) map[string]float64 {
	out := map[string]float64{}
	for _, ins := range inputs {
		for _, f := range ins {
			if x := f.at.get(v); evidence.Present(x) {
				out[f.Path] = x
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// bounded returns why a rule whose inputs are partly missing cannot fire
// (a bound of its own holds, or a part of its condition that can be judged
// alone is false) and the inputs that reason reads. "" when neither.
func (r *Rule) bounded(st *state) (string, []input) {
	if r.usesVerdict {
		return "", nil
	}
	judge := func(b *bound, want bool) (string, bool) {
		if !st.present(b.in) {
			return "", false
		}
		out, err := st.test(b.cond)
		if v, ok := out.(bool); err != nil || !ok || v != want {
			return "", false
		}
		return st.boundReason(b)
	}
	for i := range r.bounds {
		if why, ok := judge(&r.bounds[i], true); ok {
			return why, r.bounds[i].in
		}
	}
	for i := range r.conjuncts {
		if why, ok := judge(&r.conjuncts[i], false); ok {
			return why, r.conjuncts[i].in
		}
	}
	return "", nil
}

// boundReason renders a bound's reason: its says, or for a conjunct its
// own condition with the values it read.
func (st *state) boundReason(b *bound) (string, bool) {
	if b.says == nil {
		st.buf = b.isFalse(st.buf[:0], st.v, st.params)
		return string(st.buf), true
	}
	if b.msg != nil {
		if buf, ok := b.msg(&st.fr, st.buf[:0]); ok {
			st.buf = buf
			return collapse(buf), true
		}
	}
	why, err := b.render(st.v, st.params)
	return why, err == nil
}

// how is e.How: the catalogue's text unless the engine has its own.
func (st *state) how(f *input) string {
	if st.e.Engine == nil {
		return f.How
	}
	return st.e.How(f.Path)
}

// inconsistent is e.Inconsistent(f.Path), with f's node known.
func (st *state) inconsistent(f *input) string {
	if !st.withheld {
		return ""
	}
	for _, in := range st.e.Inconsistencies {
		for _, x := range in.Fields {
			if x == f.node || x == f.Path {
				return in.Note
			}
		}
	}
	return ""
}

// missing lists the inputs that are absent, withheld as inconsistent, or
// summaries too thin to judge.
func (st *state) missing(reads []input) []Missing {
	out, _ := st.scan(reads, true)
	return out
}

// present reports whether missing would list nothing, without listing.
func (st *state) present(reads []input) bool {
	_, ok := st.scan(reads, false)
	return ok
}

// scan is missing; with list false it stops at the first gap. It reports
// whether there is none.
func (st *state) scan(reads []input, list bool) ([]Missing, bool) {
	v := st.v
	// Results' gaps share arrays, each result capped to its own.
	if list && cap(st.gaps)-len(st.gaps) < len(reads) {
		st.gaps = make([]Missing, 0, max(32, len(reads)))
	}
	start := len(st.gaps)
	// The nodes (distributions, gauges) already named or checked, by
	// their numbers in reads. A distribution whose count was checked is
	// not named again, even for a field of it that is absent.
	var arr [64]bool
	checked := arr[:]
	if n := 3 * len(reads); n > len(arr) {
		checked = make([]bool, n)
	}
	for i := range reads {
		f := &reads[i]
		if note := st.inconsistent(f); note != "" {
			if !checked[f.nodeID] {
				if !list {
					return nil, false
				}
				checked[f.nodeID] = true
				st.gaps = append(st.gaps, Missing{Path: f.node, Why: "inconsistent: " + note, How: st.how(f)})
			}
			continue
		}
		if f.samples != noSlot && !checked[f.seriesID] {
			// A missing sample count is hand-made evidence; collectors set it.
			if n := f.samples.get(v); evidence.Present(n) && n < st.minGauge {
				if !list {
					return nil, false
				}
				checked[f.seriesID] = true
				st.gaps = append(st.gaps, Missing{Path: f.Series,
					Why: fmt.Sprintf("only %s samples in the window (need %s)", units.Number(n), units.Number(st.minGauge)), How: st.how(f)})
				continue
			}
		}
		if !evidence.Present(f.at.get(v)) {
			// Name the distribution or gauge once, not each of its fields.
			if !checked[f.nodeID] {
				if !list {
					return nil, false
				}
				checked[f.nodeID] = true
				st.gaps = append(st.gaps, Missing{Path: f.node, Why: "missing", How: st.how(f)})
			}
			continue
		}
		if f.count != noSlot && !checked[f.distID] {
			checked[f.distID] = true
			if n := f.count.get(v); !evidence.Present(n) || n < st.minSamples {
				if !list {
					return nil, false
				}
				st.gaps = append(st.gaps, Missing{Path: f.Dist,
					Why: fmt.Sprintf("only %s samples in the window (need %s)", units.Number(n), units.Number(st.minSamples)), How: st.how(f)})
			}
		}
	}
	if len(st.gaps) == start {
		return nil, true
	}
	return st.gaps[start:len(st.gaps):len(st.gaps)], false
}

// Config holds per-rule overrides and suppressions (llmdoctor.yaml).
type Config struct {
	MinSamples float64 `yaml:"min_samples"`
	// MinGaugeSamples is the fewest samples a gauge summary needs.
	MinGaugeSamples float64 `yaml:"min_gauge_samples"`
	// MinShare is the share of latency a finding's stage must hold to be
	// critical or the verdict.
	MinShare float64 `yaml:"min_share"`
	// Models gives facts about served models that metrics do not carry.
	Models map[string]ModelConfig `yaml:"models"`
	// GPUs overrides the peak-bandwidth table by dcgm-exporter modelName.
	GPUs     map[string]GPUConfig `yaml:"gpus"`
	Rules    map[string]Override  `yaml:"rules"`
	Suppress []Suppression        `yaml:"suppress"`
	// SLO are the targets a healthy verdict is judged against; unset ones
	// are the defaults for interactive serving (DefaultSLO).
	SLO SLO `yaml:"slo"`
	// SLOFrom names where SLO came from (llmdoctor.yaml, --slo); "" when
	// every target is a default.
	SLOFrom string `yaml:"-"`
	// File is the file the config was read from; "" when none was.
	File string `yaml:"-"`
	// Now is the time suppressions expire against (zero: time.Now()).
	Now time.Time `yaml:"-"`
	// KeepNeeds evaluates rules even when a source they need is absent (the
	// checklist: there, absent evidence is "cannot check").
	KeepNeeds bool `yaml:"-"`
	// src is the YAML it was parsed from, to name a bad value's line.
	src []byte
}

// SLO are latency targets. Zero means the default.
type SLO struct {
	TTFTP99 time.Duration `yaml:"ttft_p99"`
	TPOT    time.Duration `yaml:"tpot_p50"`
	E2EP99  time.Duration `yaml:"e2e_p99"`
}

// DefaultSLO are targets for interactive serving: a first token within 2 s
// for 99 requests in 100 and 20 tokens/s for the median request (50 ms per
// output token). End-to-end has no fixed default: an answer's length is the
// client's choice, so its target is what the other two allow for the
// longest answers (TTFT target + p99 output tokens × per-token target).
var DefaultSLO = SLO{TTFTP99: 2 * time.Second, TPOT: 50 * time.Millisecond}

// Targets returns the SLO with defaults filled in.
func (c *Config) Targets() SLO {
	t := c.SLO
	if t.TTFTP99 <= 0 {
		t.TTFTP99 = DefaultSLO.TTFTP99
	}
	if t.TPOT <= 0 {
		t.TPOT = DefaultSLO.TPOT
	}
	return t
}

// E2EFor is the end-to-end p99 target for answers of p99 length outTokens:
// the one set, or what the TTFT and per-token targets allow; 0 when neither
// is known.
func (t SLO) E2EFor(outTokens float64) time.Duration {
	if t.E2EP99 > 0 {
		return t.E2EP99
	}
	if !(outTokens >= 0) {
		return 0
	}
	return t.TTFTP99 + time.Duration(outTokens*float64(t.TPOT))
}

// String is how a report names the targets: TTFT p99 ≤ 2s, …
func (t SLO) String() string {
	e2e := "TTFT target + p99 output tokens × per-token target"
	if t.E2EP99 > 0 {
		e2e = t.E2EP99.String()
	}
	return fmt.Sprintf("TTFT p99 ≤ %v, median time per output token ≤ %v, end-to-end p99 ≤ %s", t.TTFTP99, t.TPOT, e2e)
}

// ModelConfig describes one served model.
type ModelConfig struct {
	// WeightBytes is the size of the weights as loaded (after quantization).
	WeightBytes float64 `yaml:"weight_bytes"`
	// MoE says whether the model is a mixture of experts (true) or dense
	// (false); unset, a preset by served name decides, or nothing does.
	MoE *bool `yaml:"moe"`
}

// GPUConfig describes one GPU model.
type GPUConfig struct {
	// PeakBandwidth is HBM bandwidth in bytes/s.
	PeakBandwidth float64 `yaml:"peak_bandwidth"`
}

// PeakBandwidths returns the configured GPU bandwidths by modelName.
func (c *Config) PeakBandwidths() map[string]float64 {
	return positive(c.GPUs, func(g GPUConfig) float64 { return g.PeakBandwidth })
}

// WeightBytes returns the configured model sizes by served name.
func (c *Config) WeightBytes() map[string]float64 {
	return positive(c.Models, func(m ModelConfig) float64 { return m.WeightBytes })
}

// MoE returns, by served name, the models configured as mixture of
// experts (true) or dense (false).
func (c *Config) MoE() map[string]bool {
	out := map[string]bool{}
	for name, m := range c.Models {
		if m.MoE != nil {
			out[name] = *m.MoE
		}
	}
	return out
}

// positive keeps the entries whose value is set.
func positive[T any](m map[string]T, value func(T) float64) map[string]float64 {
	out := map[string]float64{}
	for name, x := range m {
		if v := value(x); v > 0 {
			out[name] = v
		}
	}
	return out
}

// Override changes one rule.
type Override struct {
	Enabled  *bool              `yaml:"enabled"`
	Severity string             `yaml:"severity"`
	Params   map[string]float64 `yaml:"params"`
}

// Suppression silences a rule, optionally for one model, until a date.
type Suppression struct {
	Rule   string `yaml:"rule"`
	Model  string `yaml:"model"`
	Reason string `yaml:"reason"`
	Until  string `yaml:"until"`
	until  time.Time
}

// Enabled reports whether the config leaves a rule on.
func (c *Config) Enabled(id string) bool {
	o, ok := c.Rules[id]
	return !ok || o.Enabled == nil || *o.Enabled
}

func (c *Config) severity(r *Rule) Severity {
	if o, ok := c.Rules[r.ID]; ok && o.Severity != "" {
		if s, err := ParseSeverity(o.Severity); err == nil {
			return s
		}
	}
	return r.Sev
}

func (c *Config) params(r *Rule) map[string]float64 {
	o, ok := c.Rules[r.ID]
	if !ok || len(o.Params) == 0 {
		return r.Params
	}
	p := make(map[string]float64, len(r.Params))
	for k, v := range r.Params {
		p[k] = v
	}
	for k, v := range o.Params {
		p[k] = v
	}
	return p
}

func (c *Config) minGaugeSamples() float64 {
	if c.MinGaugeSamples > 0 {
		return c.MinGaugeSamples
	}
	return DefaultMinGaugeSamples
}

// MinShareOrDefault is the configured minimum share, or the default.
func (c *Config) MinShareOrDefault() float64 {
	if c != nil && c.MinShare > 0 {
		return c.MinShare
	}
	return DefaultMinShare
}

func (c *Config) minSamples() float64 {
	if c.MinSamples > 0 {
		return c.MinSamples
	}
	return DefaultMinSamples
}

func (c *Config) suppressed(id string, t evidence.Target) string {
	if len(c.Suppress) == 0 {
		return ""
	}
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	for _, s := range c.Suppress {
		if s.Rule != id || (s.Model != "" && s.Model != t.Model) {
			continue
		}
		if !s.until.IsZero() && now.After(s.until) {
			continue
		}
		return s.Reason
	}
	return ""
}

// Validate checks the config against the rules a run knows (diagnosis
// rules, checklist items): unknown rule ids and params, bad severities,
// numbers out of range, suppressions without a reason or with a bad date.
// Its errors are *ConfigError.
func (c *Config) Validate(sets ...*Set) error {
	find := func(id string) (*Rule, bool) {
		for _, s := range sets {
			if r, ok := s.Get(id); ok {
				return r, true
			}
		}
		return nil, false
	}
	for _, id := range slices.Sorted(maps.Keys(c.Rules)) {
		o := c.Rules[id]
		r, ok := find(id)
		if !ok {
			return &ConfigError{Key: "rules." + id, Kind: UnknownRule, Rule: id, Problem: "no such rule", Line: c.line("rules", id)}
		}
		if o.Severity != "" {
			if _, err := ParseSeverity(o.Severity); err != nil {
				return &ConfigError{Key: "rules." + id, Kind: BadSeverity, Rule: id, Problem: err.Error(), Line: c.line("rules", id, "severity")}
			}
		}
		for _, p := range slices.Sorted(maps.Keys(o.Params)) {
			if _, ok := r.Params[p]; !ok {
				return &ConfigError{Key: "rules." + id + ".params." + p, Kind: UnknownParam, Rule: id, Line: c.line("rules", id, "params", p),
					Problem: fmt.Sprintf("the rule has no such param (it has %v)", slices.Sorted(maps.Keys(r.Params)))}
			}
		}
	}
	if err := c.checkValues(find); err != nil {
		return err
	}
	for i := range c.Suppress {
		sp := &c.Suppress[i]
		key := fmt.Sprintf("suppress[%d]", i)
		if _, ok := find(sp.Rule); !ok {
			return &ConfigError{Key: key, Kind: UnknownRule, Rule: sp.Rule, Problem: fmt.Sprintf("no such rule %q", sp.Rule)}
		}
		if sp.Reason == "" {
			return &ConfigError{Key: key + " (" + sp.Rule + ")", Kind: NoReason, Rule: sp.Rule, Problem: "a suppression needs a reason"}
		}
		if sp.Until != "" {
			t, err := time.Parse("2006-01-02", sp.Until)
			if err != nil {
				return &ConfigError{Key: key + " (" + sp.Rule + ")", Kind: BadDate, Rule: sp.Rule, Problem: "until must be a date like 2026-12-31"}
			}
			sp.until = t.Add(24*time.Hour - time.Nanosecond)
		}
	}
	return nil
}

// Expired lists suppressions whose date has passed, so a report can say so.
func (c *Config) Expired() []Suppression {
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	var out []Suppression
	for _, s := range c.Suppress {
		if !s.until.IsZero() && now.After(s.until) {
			out = append(out, s)
		}
	}
	return out
}
