// Package advisor turns rule results into a diagnosis: the root-cause
// bottleneck, findings ranked with the ones they explain listed under them,
// next steps cheapest first, and the gaps that kept rules from running.
package advisor

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/rules"
)

// Schema names the JSON contract.
const Schema = "llmdoctor.diagnosis/v1"

// Diagnosis is the whole result of one run; its JSON form is the contract.
type Diagnosis struct {
	Schema  string         `json:"schema"`
	Sources []Source       `json:"sources"`
	Window  Window         `json:"window"`
	Targets []TargetReport `json:"targets"`
	// Notes are things collectors could not read, one line each.
	Notes []string `json:"notes,omitempty"`
	// Config is the configuration file the rules ran with (its
	// suppressions and overrides), when one was read.
	Config string `json:"config,omitempty"`
}

// Source is one collector input.
type Source struct {
	Kind  string `json:"kind"`
	URL   string `json:"url,omitempty"`
	Path  string `json:"path,omitempty"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Queries is how many queries a Prometheus source answered.
	Queries int `json:"queries,omitempty"`
	// Notes say what a source that was read left out or assumed, one line each.
	Notes []string `json:"notes,omitempty"`
	// Rows is how many rows a request-level file held, Skipped how many of
	// them were left out as invalid, by reason.
	Rows    int            `json:"rows,omitempty"`
	Skipped map[string]int `json:"skipped,omitempty"`
	// Scopes say how a selector reached each family of a Prometheus
	// source's series: as given, or joined to the engine series it matches.
	Scopes []Scope `json:"scopes,omitempty"`
}

// Scope is how a selector reached one family of series: an engine's
// (vllm), an exporter's (dcgm) or one engine family whose series lack
// labels the others carry (vllm:cache_config_info).
type Scope struct {
	Families string `json:"families"`
	// Matched are the selector's matchers applied to the series as given.
	Matched []string `json:"matched,omitempty"`
	// JoinedTo are the matchers on labels the series lack: they were read
	// where they share Through (instance, pod, node or host) with the
	// engine series these match.
	JoinedTo []string `json:"joined_to,omitempty"`
	Through  string   `json:"through,omitempty"`
	// Read is false when none of the series was read; Note says why, or
	// what else was left out.
	Read bool   `json:"read"`
	Note string `json:"note,omitempty"`
}

// Window says what time the evidence covers.
type Window struct {
	Start *time.Time `json:"start,omitempty"`
	End   *time.Time `json:"end,omitempty"`
	// Seconds is the length; absent when cumulative.
	Seconds float64 `json:"seconds,omitempty"`
	// Cumulative: counts since server start (a single snapshot).
	Cumulative bool `json:"cumulative"`
	Points     int  `json:"points"`
	// Covered is how much of the window the data covers, when that is
	// under 90% of it: rates are over this time.
	Covered float64 `json:"covered_seconds,omitempty"`
}

// Length says how long the window is, and how much of it the data covers
// when that is short of it: "15m00s window (the data covers 1m00s)".
func (w Window) Length() string {
	s := units.Duration(w.Seconds) + " window"
	if w.Covered > 0 {
		s += " (the data covers " + units.Duration(w.Covered) + ")"
	}
	return s
}

// TargetReport is the diagnosis of one target.
type TargetReport struct {
	Target     evidence.Target `json:"target"`
	Primary    Primary         `json:"primary"`
	Findings   []Finding       `json:"findings"`
	Suppressed []Finding       `json:"suppressed,omitempty"`
	Next       []Step          `json:"next"`
	// NextLeftOut are steps left out because a step kept turns the same
	// knob the other way.
	NextLeftOut []LeftOut      `json:"next_left_out,omitempty"`
	Gaps        []Gap          `json:"gaps"`
	Conditions  map[string]any `json:"conditions"`
	LatencyMap  LatencyMap     `json:"latency_map"`
	Checks      Checks         `json:"checks"`
	Evidence    map[string]any `json:"evidence"`
	Members     []Member       `json:"members,omitempty"`
	// Skipped are rules left out because a whole source is absent.
	Skipped []Skip `json:"skipped,omitempty"`
	// Inconsistencies are contradictions in the evidence; rules that would
	// read the values they name did not run.
	Inconsistencies []evidence.Inconsistency `json:"inconsistencies,omitempty"`
	// Curves are small point series for charts (prompt_ttft: median TTFT
	// by prompt length).
	Curves map[string][][2]float64 `json:"curves,omitempty"`
	// Text holds names findings cite (evidence.TextFields: the outlier
	// instance of a fleet).
	Text map[string]string `json:"text,omitempty"`
	// Resolution holds, by evidence path, the bounds of the histogram
	// bucket a quantile was interpolated in (stage.ttft.p99: [5, 7.5]).
	Resolution map[string][2]float64 `json:"resolution,omitempty"`
}

// Primary is the verdict: the root-cause bottleneck.
type Primary struct {
	// Bottleneck is from the rules' vocabulary, "none" when healthy, or
	// "unknown" when nothing fired but deciding rules could not run.
	Bottleneck string `json:"bottleneck"`
	Rule       string `json:"rule,omitempty"`
	Summary    string `json:"summary"`
	// Status is found, tentative, healthy, inconclusive or suppressed.
	// Tentative: the verdict rests on a few readings (one snapshot, a few
	// log lines), not a window; Readings says how many and Confirm what
	// would confirm it. Suppressed: the root cause found is a finding the
	// configuration suppresses, so the target is not healthy although
	// nothing unsuppressed was found.
	Status string `json:"status"`
	// Readings is how many readings a tentative verdict rests on.
	Readings int `json:"readings,omitempty"`
	// Confirm says what evidence would confirm a tentative verdict.
	Confirm string `json:"confirm,omitempty"`
	// Unchecked are the critical rules that could not run.
	Unchecked []string `json:"unchecked,omitempty"`
	// Impact is the share of latency the verdict's stage holds.
	Impact *float64 `json:"impact,omitempty"`
	// Bounded are deciding rules that lacked inputs but could not have
	// fired, with why; a healthy verdict may rest on them.
	Bounded []Bounded `json:"bounded,omitempty"`
	// Against are what kept the target from healthy although no finding
	// names a cause: a target missed, time the budget cannot place,
	// withheld evidence that points at a problem.
	Against []Bounded `json:"against,omitempty"`
	// Targets names the SLO a healthy (or not-healthy) verdict was judged
	// against.
	Targets string `json:"targets,omitempty"`
}

// Found reports whether the verdict names a bottleneck found, for sure or
// tentatively.
func (p Primary) Found() bool { return p.Status == "found" || p.Status == "tentative" }

// TentativeLine says what a tentative verdict rests on and what would
// confirm it; "" for any other.
func (p Primary) TentativeLine() string {
	if p.Status != "tentative" {
		return ""
	}
	n := "what could be read"
	switch {
	case p.Readings == 1:
		n = "one reading, not a window"
	case p.Readings > 1:
		n = fmt.Sprintf("%d readings, not a window", p.Readings)
	}
	if p.Bottleneck == "none" && p.Readings > 0 {
		n += ", and shows no latency split"
	}
	return "Tentative: rests on " + n + "; confirm it with " + p.Confirm + "."
}

// JudgedLine names the targets a healthy verdict, or one kept from
// healthy, was judged against; "" for a verdict that names a bottleneck.
func (p Primary) JudgedLine() string {
	if p.Targets == "" || (p.Bottleneck != "none" && len(p.Against) == 0) {
		return ""
	}
	return "Judged against " + p.Targets + "."
}

// Bounded is a rule quiet by a bound on its missing inputs.
type Bounded struct {
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

// Finding is a fired rule.
type Finding struct {
	Rule       string             `json:"rule"`
	Severity   string             `json:"severity"`
	Bottleneck string             `json:"bottleneck"`
	Title      string             `json:"title"`
	Message    string             `json:"message"`
	Evidence   map[string]float64 `json:"evidence"`
	Sources    map[string]string  `json:"sources,omitempty"`
	// Stage is the part of latency the finding's bottleneck holds or slows;
	// Impact that part's share (absent when unknown), raised to the largest
	// share among the findings it explains.
	Stage  string   `json:"stage,omitempty"`
	Impact *float64 `json:"impact,omitempty"`
	// Capped says why a critical finding was lowered to a warning and cannot
	// be the verdict: its stage holds too little of the latency.
	Capped string       `json:"capped,omitempty"`
	Next   []rules.Step `json:"next"`
	Docs   string       `json:"docs"`
	// ExplainedBy names the finding whose bottleneck causes this one.
	ExplainedBy string `json:"explained_by,omitempty"`
	// Tentative: the finding fired on what one reading plainly shows.
	Tentative  bool   `json:"tentative,omitempty"`
	Suppressed string `json:"suppressed,omitempty"`
	sev        rules.Severity
	// impact is Impact as a number, NaN when unknown; capped is true when
	// the finding may not be the verdict.
	impact, impactMax float64
	capped            bool
	layer             string
	deniesHealthy     bool
}

// Step is a merged next step with the findings it comes from.
type Step struct {
	Do   string   `json:"do"`
	Cost string   `json:"cost"`
	For  []string `json:"for"`
	// Whatif names the change a simulation can price (rules.Changes).
	Whatif string `json:"whatif,omitempty"`
	// Turns are the knobs the step turns, as one change, each with its
	// direction (raise, lower, set, enable, disable); absent when it turns
	// no engine setting.
	Turns map[string]string `json:"turns,omitempty"`
	// Already names knobs the evidence shows already turned the step's
	// way, with that evidence: the step then turns nothing and says what
	// to check instead.
	Already map[string]string `json:"already,omitempty"`
	// Effect is what whatif predicts the step will do, when it was asked
	// and could.
	Effect *Effect `json:"effect,omitempty"`
}

// LeftOut is a next step left out of a report: a step kept, from the
// verdict's finding or one ranked higher, turns a knob of it the other way.
type LeftOut struct {
	Do    string            `json:"do"`
	Cost  string            `json:"cost"`
	For   []string          `json:"for"`
	Turns map[string]string `json:"turns,omitempty"`
	// Why names the step kept and the knob it turns the other way.
	Why string `json:"why"`
}

// Effect is a calibrated simulation's prediction for one next step.
type Effect struct {
	// Change is the exact change simulated: "max_num_seqs 32 → 128".
	Change string `json:"change"`
	// Figures are observed and predicted values, by name (ttft_p99, …).
	Figures []EffectFigure `json:"figures"`
	// ReplayError is the calibration's largest relative error when it
	// replayed the window unchanged: how far to trust the prediction.
	ReplayError float64 `json:"replay_error"`
	// Note says what else the simulation saw (the queue still grows, …).
	Note string `json:"note,omitempty"`
}

// EffectFigure is one latency figure before (observed) and after (predicted).
type EffectFigure struct {
	Name      string  `json:"name"`
	Observed  float64 `json:"observed"`
	Predicted float64 `json:"predicted"`
	// Unchanged: the change moved the figure by less than 10% in the
	// simulation, so it is predicted to stay as observed.
	Unchanged bool `json:"unchanged,omitempty"`
}

// Gap is a rule that could not run, with what it needs.
type Gap struct {
	Rule     string          `json:"rule"`
	Severity string          `json:"severity"`
	Missing  []string        `json:"missing"`
	How      string          `json:"how"`
	Details  []rules.Missing `json:"details"`
	// Bounded says why the missing inputs could not have made the rule fire.
	Bounded string `json:"bounded,omitempty"`
}

// LatencyMap splits mean TTFT into its parts; missing parts are absent.
type LatencyMap struct {
	TTFT    *float64 `json:"ttft_mean,omitempty"`
	Queue   *float64 `json:"queue_mean,omitempty"`
	Prefill *float64 `json:"prefill_mean,omitempty"`
	// Transfer is a decode instance's pull of the prompt's KV from the
	// prefill instance (prefill and decode on separate instances).
	Transfer *float64 `json:"transfer_mean,omitempty"`
	// Upstream is the prefill side's time inside a decode side's TTFT
	// that runs from the client's request.
	Upstream *float64 `json:"upstream_mean,omitempty"`
	// Front is TTFT not spent in queue or prefill (API server, tokenizer).
	Front  *float64 `json:"front_mean,omitempty"`
	Decode *float64 `json:"decode_mean,omitempty"`
	E2E    *float64 `json:"e2e_mean,omitempty"`
	// ClientTTFT is mean TTFT as clients measured it; NetworkShare the part
	// of it spent outside the server.
	ClientTTFT   *float64 `json:"client_ttft_mean,omitempty"`
	NetworkShare *float64 `json:"network_share,omitempty"`
	// FirstToken and Unexplained split mean end-to-end (E2E) with Decode:
	// what users wait for the first token, and what no stage the server
	// times holds (negative when the parts exceed the whole).
	FirstToken  *float64 `json:"first_token_mean,omitempty"`
	Unexplained *float64 `json:"unexplained_mean,omitempty"`
	// TTFTExcludesQueue: the server's TTFT leaves out queue wait, so TTFT
	// here is queue + the server's TTFT, and front is the server's TTFT −
	// prefill.
	TTFTExcludesQueue bool `json:"ttft_excludes_queue,omitempty"`
}

// BudgetLine splits mean end-to-end into the first token, decode and what
// no stage holds: "end-to-end 7.70s = first token 350ms (5%) + decode
// 750ms (10%) + in no stage 6.60s (86%)", or "; the parts exceed it by …";
// "" without end-to-end and a part.
func (m LatencyMap) BudgetLine() string {
	if m.FirstToken == nil {
		// A report written before the budget: TTFT is the first token.
		m.FirstToken = m.TTFT
	}
	if m.E2E == nil || *m.E2E <= 0 || (m.FirstToken == nil && m.Decode == nil) {
		return ""
	}
	e2e := *m.E2E
	part := func(name string, x float64) string {
		return fmt.Sprintf("%s %s (%s)", name, units.Duration(x), units.WholePercent(x/e2e))
	}
	var parts []string
	if m.FirstToken != nil {
		parts = append(parts, part("first token", *m.FirstToken))
	}
	if m.Decode != nil {
		parts = append(parts, part("decode", *m.Decode))
	}
	s := "end-to-end " + units.Duration(e2e) + " = " + strings.Join(parts, " + ")
	switch u := m.Unexplained; {
	case u != nil && math.Abs(*u) < 0.01*e2e:
		s += " (adds up)"
	case u == nil:
		if m.FirstToken == nil || m.Decode == nil {
			s += " + not timed"
		}
	case *u >= 0:
		s += " + " + part("in no stage", *u)
	default:
		s += fmt.Sprintf("; the parts exceed it by %s (%s)", units.Duration(-*u), units.WholePercent(-*u/e2e))
	}
	return s
}

// Skip groups the rules skipped for lack of one source.
type Skip struct {
	Source string   `json:"source"`
	Rules  []string `json:"rules"`
	How    string   `json:"how"`
}

// Checks counts rule outcomes.
type Checks struct {
	Fired        int `json:"fired"`
	Quiet        int `json:"quiet"`
	Insufficient int `json:"insufficient"`
	// Bounded of the quiet ones lacked inputs that bounds showed could not matter.
	Bounded int `json:"bounded"`
}

// Member is a per-instance or per-engine breakdown, with its key numbers.
type Member struct {
	Target   evidence.Target    `json:"target"`
	Evidence map[string]float64 `json:"evidence"`
}

var memberFields = []string{"stage.ttft.p99", "stage.queue.mean", "service.waiting.mean", "service.running.mean",
	"resource.kv_usage.mean", "service.preemptions"}

// Advise builds the diagnosis of one target from its evidence and results;
// cfg gives the minimum share of latency a verdict needs (nil: default).
func Advise(e *evidence.Evidence, results []rules.Result, cfg *rules.Config) TargetReport {
	t := TargetReport{Target: e.Target, Findings: []Finding{}, Gaps: []Gap{}, Next: []Step{},
		Inconsistencies: e.Inconsistencies}
	var unchecked []string
	var bounded []Bounded
	for _, r := range results {
		switch r.Outcome {
		case rules.Quiet:
			t.Checks.Quiet++
			if r.Bound() != "" {
				t.Checks.Bounded++
				g := gapOf(r)
				g.Bounded = r.Bound()
				t.Gaps = append(t.Gaps, g)
				if rules.Deciding(r) {
					bounded = append(bounded, Bounded{Rule: r.Rule.ID, Why: r.Bound()})
				}
			}
		case rules.Skipped:
			t.Skipped = addSkip(t.Skipped, r)
		case rules.Insufficient:
			t.Checks.Insufficient++
			t.Gaps = append(t.Gaps, gapOf(r))
			if rules.Deciding(r) {
				unchecked = append(unchecked, r.Rule.ID)
			}
		case rules.Fired:
			t.Checks.Fired++
			f := findingOf(e, r)
			if r.Suppressed() != "" {
				t.Suppressed = append(t.Suppressed, f)
				continue
			}
			t.Findings = append(t.Findings, f)
		}
	}
	explain(t.Findings, results)
	weigh(t.Findings, cfg.MinShareOrDefault())
	sort.SliceStable(t.Findings, func(i, j int) bool { return less(t.Findings[i], t.Findings[j]) })
	var against []Bounded
	for _, f := range t.Findings {
		if f.deniesHealthy {
			against = append(against, Bounded{Rule: f.Rule, Why: f.Message})
		}
	}
	t.Primary = primary(t.Findings, unchecked, bounded)
	if t.Primary.Status != "found" && t.Primary.Status != "tentative" && len(t.Suppressed) > 0 {
		t.Primary = suppressedRoot(e, t, results, cfg.MinShareOrDefault(), unchecked, bounded)
	}
	if t.Primary.Bottleneck == "none" && targetMissedOnCapped(t.Findings) {
		sort.SliceStable(t.Findings, func(i, j int) bool { return less(t.Findings[i], t.Findings[j]) })
		t.Primary = primary(t.Findings, unchecked, bounded)
	}
	DenyHealthy(&t, against...)
	t.Primary.Targets = targetsOf(e)
	t.Next, t.NextLeftOut = mergeSteps(t.Findings, t.Primary.Rule, e)
	t.Conditions = conditions(e)
	t.LatencyMap = latencyMap(e)
	t.Evidence = e.Values.Tree()
	t.Curves = e.TrustedCurves()
	if len(e.Text) > 0 {
		t.Text = e.Text
	}
	if len(e.Resolution) > 0 {
		t.Resolution = e.Resolution
	}
	for _, m := range e.Members {
		mm := Member{Target: m.Target, Evidence: map[string]float64{}}
		for _, p := range memberFields {
			f, _ := evidence.Lookup(p)
			// A member's withheld evidence is left out, as the target's is.
			if x := m.Values.Get(f); evidence.Present(x) && m.Inconsistent(p) == "" {
				mm.Evidence[p] = x
			}
		}
		t.Members = append(t.Members, mm)
	}
	return t
}

func addSkip(l []Skip, r rules.Result) []Skip {
	src := r.Missing()[0].Path
	for i := range l {
		if l[i].Source == src {
			l[i].Rules = append(l[i].Rules, r.Rule.ID)
			return l
		}
	}
	return append(l, Skip{Source: src, Rules: []string{r.Rule.ID}, How: r.Missing()[0].How})
}

func findingOf(e *evidence.Evidence, r rules.Result) Finding {
	f := Finding{Rule: r.Rule.ID, Severity: r.Severity.String(), sev: r.Severity, Bottleneck: r.Rule.Bottleneck,
		Title: r.Rule.Title, Message: r.Message, Evidence: r.Evidence, Stage: r.Stage(), impact: r.Impact, impactMax: r.ImpactMax, layer: r.Rule.Layer,
		Next: r.Rule.Steps(e), Docs: r.Rule.DocsPath(), Suppressed: r.Suppressed(), Sources: map[string]string{},
		Tentative: r.Tentative(), deniesHealthy: r.Rule.DeniesHealthy}
	if !rules.OnPath(r.Rule.Bottleneck) {
		// Off the latency path: no share, even where a target names the
		// stage it judges.
		f.impact, f.impactMax = math.NaN(), math.NaN()
	}
	f.Impact = share(f.impact)
	// JSON has no NaN: a cited number that is missing is left out.
	f.Evidence = make(map[string]float64, len(r.Evidence))
	for k, x := range r.Evidence {
		if evidence.Present(x) {
			f.Evidence[k] = x
		}
	}
	if f.Next == nil {
		f.Next = []rules.Step{}
	}
	for p := range r.Evidence {
		if s, ok := e.SourceOf(p); ok {
			f.Sources[p] = s.Metric
		}
	}
	return f
}

// share rounds a known share for JSON; nil when unknown.
func share(x float64) *float64 {
	if !evidence.Present(x) {
		return nil
	}
	r := math.Round(x*1000) / 1000
	return &r
}

// weigh gives each root cause the largest share among itself and the
// findings it explains, then caps: a finding whose share is known and under
// minShare cannot be critical or the verdict.
func weigh(fs []Finding, minShare float64) {
	for i := range fs {
		if fs[i].ExplainedBy != "" {
			continue
		}
		for _, g := range fs {
			if g.ExplainedBy != fs[i].Rule {
				continue
			}
			if evidence.Present(g.impact) && (!evidence.Present(fs[i].impact) || g.impact > fs[i].impact) {
				// The share is of the total the explained finding's stage is
				// part of: say that stage, so the impact matches the map's.
				fs[i].impact, fs[i].Stage = g.impact, g.Stage
			}
			if !evidence.Present(g.impactMax) || g.impactMax > fs[i].impactMax {
				// An effect whose share is unbounded leaves the cause unbounded.
				fs[i].impactMax = g.impactMax
			}
		}
		if evidence.Present(fs[i].impact) {
			fs[i].impactMax = math.Max(fs[i].impactMax, fs[i].impact)
		}
		fs[i].Impact = share(fs[i].impact)
	}
	for i := range fs {
		f := &fs[i]
		if !rules.Capped(f.impactMax, minShare) {
			continue
		}
		f.capped = true
		held := "holds " + pct(f.impactMax)
		if !evidence.Present(f.impact) {
			held = "holds at most " + pct(f.impactMax)
		}
		why := fmt.Sprintf("its stage (%s) %s of the latency, under the %s a verdict needs", f.Stage, held, pct(minShare))
		if f.sev == rules.Critical {
			f.sev, f.Severity = rules.Warning, rules.Warning.String()
			why = "lowered from critical: " + why
		}
		f.Capped = why
	}
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", x*100) }

// explain marks findings whose bottleneck another fired finding explains.
// A finding that is itself explained cannot explain others.
func explain(fs []Finding, results []rules.Result) {
	explains := map[string][]string{}
	for _, r := range results {
		explains[r.Rule.ID] = r.Explains()
	}
	// Of several findings that could explain a bottleneck, the most severe
	// claims it (a critical stall before a warning about the ITL tail);
	// at one severity, one that holds the bottleneck's own stage (adapter
	// slots holding the queue) before one that points at it from another
	// (stalls, whose stage is the gaps between tokens).
	order := make([]Finding, len(fs))
	copy(order, fs)
	sort.SliceStable(order, func(i, j int) bool { return order[i].sev > order[j].sev })
	causes := map[string]string{}
	claimed := map[string]Finding{}
	for _, c := range order {
		if c.sev < rules.Warning {
			// An info finding may not be the verdict, so it may not hide one.
			continue
		}
		for _, b := range explains[c.Rule] {
			prev, ok := claimed[b]
			stage := rules.DefaultStages[b]
			if !ok || prev.sev == c.sev && prev.Stage != stage && c.Stage == stage {
				causes[b], claimed[b] = c.Rule, c
			}
		}
	}
	for i := range fs {
		if by, ok := causes[fs[i].Bottleneck]; ok && by != fs[i].Rule {
			fs[i].ExplainedBy = by
		}
	}
	// Rules that explain each other (user rules can) would leave no root
	// cause: a finding whose chain of causes comes back to it stays a cause.
	by := map[string]string{}
	for _, f := range fs {
		by[f.Rule] = f.ExplainedBy
	}
	for i := range fs {
		seen := map[string]bool{fs[i].Rule: true}
		for c := by[fs[i].Rule]; c != ""; c = by[c] {
			if seen[c] {
				if c == fs[i].Rule {
					fs[i].ExplainedBy = ""
				}
				break
			}
			seen[c] = true
		}
	}
	// A cause that is itself explained passes its effects up to its root.
	for _, f := range fs {
		by[f.Rule] = f.ExplainedBy
	}
	for i := range fs {
		root := fs[i].ExplainedBy
		for steps := 0; root != "" && by[root] != "" && steps < len(fs); steps++ {
			root = by[root]
		}
		fs[i].ExplainedBy = root
	}
}

// less orders root causes before the findings they explain, findings that
// may be the verdict before capped ones, then by severity (a confirmed
// dominant stage before a lead), then by the share of latency accounted for
// (unknown last), then by id.
func less(a, b Finding) bool {
	if (a.ExplainedBy == "") != (b.ExplainedBy == "") {
		return a.ExplainedBy == ""
	}
	if a.capped != b.capped {
		return !a.capped
	}
	if a.sev != b.sev {
		return a.sev > b.sev
	}
	ka, kb := evidence.Present(a.impact), evidence.Present(b.impact)
	if ka != kb {
		return ka
	}
	if ka && a.impact != b.impact {
		return a.impact > b.impact
	}
	// At one share, the finding that measures the stage itself speaks
	// before those that point at it.
	if la, lb := a.layer == "stage", b.layer == "stage"; la != lb {
		return la
	}
	return a.Rule < b.Rule
}

// suppressedRoot is the verdict of a target whose unsuppressed findings
// name no root cause: when, with the suppressed findings counted, the root
// cause is one of them, the verdict is that bottleneck, suppressed. A
// suppression mutes a known finding; it never makes a target healthy.
func suppressedRoot(e *evidence.Evidence, t TargetReport, results []rules.Result, minShare float64, unchecked []string, bounded []Bounded) Primary {
	// Fresh findings: weigh has lowered and capped those of t.
	var all []Finding
	for _, r := range results {
		if r.Outcome == rules.Fired {
			all = append(all, findingOf(e, r))
		}
	}
	explain(all, results)
	weigh(all, minShare)
	sort.SliceStable(all, func(i, j int) bool { return less(all[i], all[j]) })
	p := primary(all, unchecked, bounded)
	if p.Status != "found" {
		return t.Primary
	}
	for _, f := range t.Suppressed {
		if f.Rule == p.Rule {
			p.Status = "suppressed"
			p.Summary += " (suppressed by configuration: " + f.Suppressed + ")"
			return p
		}
	}
	// An unsuppressed cause whose weight is its suppressed effects': the
	// effects are muted, the cause is still found.
	return p
}

func primary(fs []Finding, unchecked []string, bounded []Bounded) Primary {
	for _, f := range fs {
		if f.ExplainedBy != "" || f.capped || f.Bottleneck == "none" || f.sev < rules.Warning {
			continue
		}
		p := Primary{Bottleneck: f.Bottleneck, Rule: f.Rule, Summary: f.Title, Status: "found", Unchecked: unchecked,
			Impact: f.Impact}
		if f.Tentative {
			p.Status, p.Readings = "tentative", 1
			p.Confirm = ConfirmSnapshot
		}
		if n := countExplained(fs, f.Rule); n > 0 {
			p.Summary += fmt.Sprintf(" (explains %d other finding%s)", n, plural(n))
		}
		return p
	}
	if len(unchecked) > 0 {
		// What could be read shows nothing wrong, plainly (a finding
		// naming no bottleneck): a tentative healthy verdict, not an earned one.
		for _, f := range fs {
			if f.Bottleneck == "none" && f.ExplainedBy == "" && !f.deniesHealthy {
				return Primary{Bottleneck: "none", Rule: f.Rule, Status: "tentative", Unchecked: unchecked, Bounded: bounded,
					Summary: f.Title + fmt.Sprintf(", in what could be read (%d deciding check%s could not run)",
						len(unchecked), plural(len(unchecked))),
					Confirm: ConfirmChecks}
			}
		}
		return Primary{Bottleneck: "unknown", Status: "inconclusive", Unchecked: unchecked, Bounded: bounded,
			Summary: fmt.Sprintf("No bottleneck found in what could be checked, but %d deciding check%s could not run (%s): see gaps",
				len(unchecked), plural(len(unchecked)), strings.Join(unchecked, ", "))}
	}
	p := Primary{Bottleneck: "none", Status: "healthy", Bounded: bounded,
		Summary: "No bottleneck above info: every deciding check ran and none fired"}
	capped := 0
	for _, f := range fs {
		if f.capped && f.ExplainedBy == "" {
			capped++
		}
	}
	switch {
	case capped > 0:
		p.Summary = fmt.Sprintf("No bottleneck holds a significant share of latency: %d finding%s concern%s a stage under the share a verdict needs",
			capped, plural(capped), map[bool]string{true: "s", false: ""}[capped == 1])
	case len(bounded) > 0:
		var ids []string
		for _, b := range bounded {
			ids = append(ids, b.Rule)
		}
		p.Summary = fmt.Sprintf("No bottleneck: every deciding check ran or, for %s, what was measured shows it could not fire (see gaps)",
			strings.Join(ids, ", "))
	}
	return p
}

// targetMissedOnCapped lifts the cap of the finding on a stage whose target
// is missed (a target rule declares the stage it judges): a stage that holds
// little of the latency is not worth changing first, unless it is where the
// target is missed. It reports whether it lifted one.
func targetMissedOnCapped(fs []Finding) bool {
	for _, miss := range fs {
		if !miss.deniesHealthy || miss.Stage == "" {
			continue
		}
		for i := range fs {
			f := &fs[i]
			if f.capped && f.ExplainedBy == "" && f.Stage == miss.Stage && f.sev >= rules.Warning && f.Bottleneck != "none" {
				f.capped = false
				f.Capped = ""
				return true
			}
		}
	}
	return false
}

// DenyHealthy keeps a healthy (or tentatively healthy) verdict from
// standing where something stands against it: the verdict becomes
// inconclusive, naming what. A verdict that names a bottleneck is kept.
func DenyHealthy(t *TargetReport, against ...Bounded) {
	if len(against) == 0 {
		return
	}
	p := &t.Primary
	if p.Bottleneck != "none" && p.Bottleneck != "unknown" {
		return
	}
	p.Against = append(p.Against, against...)
	if p.Bottleneck != "none" {
		return
	}
	p.Bottleneck, p.Status, p.Rule, p.Readings, p.Confirm = "unknown", "inconclusive", "", 0, ""
	p.Summary = fmt.Sprintf("Not healthy, though no finding that names a cause can be the verdict: %s", strings.TrimSuffix(p.Against[0].Why, "."))
	if n := len(p.Against) - 1; n > 0 {
		p.Summary += fmt.Sprintf(" (and %d more against healthy)", n)
	}
}

// targetsOf names the SLO the evidence carries.
func targetsOf(e *evidence.Evidence) string {
	c := e.Values.Cond
	if !evidence.Present(c.TargetTTFTP99) || !evidence.Present(c.TargetTPOT) {
		return ""
	}
	s := fmt.Sprintf("TTFT p99 ≤ %s, median time per output token ≤ %s", units.Duration(c.TargetTTFTP99), units.Duration(c.TargetTPOT))
	if evidence.Present(c.TargetE2EP99) {
		s += fmt.Sprintf(", end-to-end p99 ≤ %s", units.Duration(c.TargetE2EP99))
	}
	return s
}

// What confirms a tentative verdict, by the evidence it rests on.
const (
	ConfirmSnapshot = "a window: two snapshots a few minutes apart, a live scrape (--target URL --duration 5m) or Prometheus (--prom URL)"
	ConfirmChecks   = "the latency histograms of a metrics window (--target URL or --prom URL: queue, prefill and inter-token latency), which the checks that could not run need"
	ConfirmLog      = "a longer stretch of the log (ten or more stats lines), or the server's metrics over a window (--target URL or --prom URL), whose histograms time each stage"
)

// MarkTentative makes a found verdict tentative: the evidence is a few
// readings (one snapshot, a handful of log lines), not a window. It says
// how many and what would confirm it.
func MarkTentative(t *TargetReport, readings int, confirm string) {
	if t.Primary.Status != "found" && t.Primary.Status != "tentative" {
		return
	}
	t.Primary.Status = "tentative"
	if t.Primary.Readings == 0 || readings < t.Primary.Readings {
		t.Primary.Readings = readings
	}
	t.Primary.Confirm = confirm
}

func countExplained(fs []Finding, rule string) int {
	n := 0
	for _, f := range fs {
		if f.ExplainedBy == rule {
			n++
		}
	}
	return n
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// mergeSteps merges next steps, cheapest class first. Only root causes
// count: steps of explained findings treat a symptom (raising max_num_seqs
// when the KV cache is what is full), and capped ones a stage too small to
// be worth changing. Of several findings naming the same
// bottleneck, the highest ranked speaks for it, so its advice is not repeated
// in other words.
//
// The verdict's finding speaks first, then the others by rank. A step that
// makes the same change as one already kept (the same turns, or the same
// words) is that step, for both findings. A step that turns a knob the
// other way from a step kept is left out, and said to be.
func mergeSteps(fs []Finding, verdict string, e *evidence.Evidence) ([]Step, []LeftOut) {
	order := make([]Finding, 0, len(fs))
	for _, f := range fs {
		if f.Rule == verdict {
			order = append(order, f)
		}
	}
	for _, f := range fs {
		if f.Rule != verdict {
			order = append(order, f)
		}
	}
	var out []Step
	var left []LeftOut
	byText, byChange, leftByChange := map[string]int{}, map[string]int{}, map[string]int{}
	spoken := map[string]bool{}
	for _, f := range order {
		if f.ExplainedBy != "" || f.capped || spoken[f.Bottleneck] {
			continue
		}
		spoken[f.Bottleneck] = true
		for _, s := range f.Next {
			key := changeKey(s)
			if i, ok := byText[s.Do]; ok {
				out[i].For = addRule(out[i].For, f.Rule)
				continue
			}
			if i, ok := byChange[key]; ok && key != "" {
				out[i].For = addRule(out[i].For, f.Rule)
				if out[i].Whatif == "" {
					out[i].Whatif = s.Whatif
				}
				continue
			}
			if i, ok := leftByChange[key]; ok && key != "" {
				left[i].For = addRule(left[i].For, f.Rule)
				continue
			}
			if why := opposed(out, s, verdict, e); why != "" {
				if key != "" {
					leftByChange[key] = len(left)
				}
				left = append(left, LeftOut{Do: s.Do, Cost: s.Cost, For: []string{f.Rule}, Turns: s.Turns, Why: why})
				continue
			}
			byText[s.Do] = len(out)
			if key != "" {
				byChange[key] = len(out)
			}
			out = append(out, Step{Do: s.Do, Cost: s.Cost, For: []string{f.Rule}, Whatif: s.Whatif, Turns: s.Turns, Already: s.Already})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return rules.CostRank(out[i].Cost) < rules.CostRank(out[j].Cost) })
	if out == nil {
		out = []Step{}
	}
	return out, left
}

// changeKey names the change a step makes, "" when it turns no knob: two
// steps with one key make one change, however worded.
func changeKey(s rules.Step) string {
	m, pre := s.Turns, ""
	if len(s.Already) > 0 {
		m, pre = s.Already, "already "
	}
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+m[k])
	}
	return pre + strings.Join(parts, ", ")
}

// turnVerbs say what a kept step does to a knob.
var turnVerbs = map[string]string{"raise": "raises", "lower": "lowers", "enable": "turns on", "disable": "turns off"}

// opposed says why s is left out: a kept step turns one of its knobs the
// other way; "" when none does.
func opposed(kept []Step, s rules.Step, verdict string, e *evidence.Evidence) string {
	for _, k := range kept {
		for _, knob := range slices.Sorted(maps.Keys(s.Turns)) {
			if !rules.Opposed(s.Turns[knob], k.Turns[knob]) {
				continue
			}
			whose := "the step for " + k.For[0] + ", ranked higher,"
			if k.For[0] == verdict {
				whose = "the verdict's step (" + verdict + ")"
			}
			return whose + " " + turnVerbs[k.Turns[knob]] + " " + e.Knob(knob)
		}
	}
	return ""
}

func addRule(l []string, rule string) []string {
	if slices.Contains(l, rule) {
		return l
	}
	return append(l, rule)
}

func gapOf(r rules.Result) Gap {
	g := Gap{Rule: r.Rule.ID, Severity: r.Severity.String(), Details: r.Missing()}
	seen := map[string]bool{}
	var how []string
	for _, m := range r.Missing() {
		g.Missing = append(g.Missing, m.Path)
		if m.How != "" && !seen[m.How] {
			seen[m.How] = true
			how = append(how, m.How)
		}
	}
	g.How = strings.Join(how, "; ")
	return g
}

func conditions(e *evidence.Evidence) map[string]any {
	c, _ := e.Values.Tree()["cond"].(map[string]any)
	if c == nil {
		c = map[string]any{}
	}
	return c
}

func latencyMap(e *evidence.Evidence) LatencyMap {
	v := e.Values
	p := func(x float64) *float64 {
		if !evidence.Present(x) {
			return nil
		}
		return &x
	}
	// Withheld values stay out of the map; a TTFT that excludes queue wait
	// is completed from the parts, never split into a negative residual.
	ok := func(path string, x float64) *float64 {
		if e.Inconsistent(path) != "" {
			return nil
		}
		return p(x)
	}
	m := LatencyMap{TTFT: ok("stage.ttft", v.Stage.TTFT.Mean), Queue: ok("stage.queue", v.Stage.Queue.Mean),
		Prefill: ok("stage.prefill", v.Stage.Prefill.Mean), Front: p(v.Stage.FrontMean), Transfer: ok("stage.transfer", v.Stage.Transfer.Mean), Upstream: p(v.Stage.UpstreamMean),
		Decode: ok("stage.decode", v.Stage.Decode.Mean), E2E: ok("service.e2e", v.Service.E2E.Mean),
		ClientTTFT: p(v.Service.ClientTTFT.Mean), NetworkShare: p(v.Service.NetworkShare)}
	b := v.Stage.Budget
	if m.E2E != nil {
		m.FirstToken, m.Unexplained = p(b.FirstToken), p(b.Unexplained)
	}
	for _, in := range e.Inconsistencies {
		if in.Check == "ttft-excludes-queue" && m.Queue != nil {
			m.TTFT, m.TTFTExcludesQueue = p(*m.Queue+v.Stage.TTFT.Mean), true
		}
	}
	return m
}
