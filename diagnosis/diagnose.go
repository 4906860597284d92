package diagnosis

import (
	"context"
	"fmt"
	"math"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/dcgm"
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/logs"
	"github.com/llmdoctor/llmdoctor/collectors/router"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/rules"
)

// Run reads the sources and diagnoses every target in them with the rules
// of set. A run that finds no target fails with a *NoTargetError saying
// what the sources held instead. progress may be nil.
func Run(ctx context.Context, src Sources, set *rules.Set, cfg *rules.Config, progress func(Progress)) (*advisor.Diagnosis, error) {
	in, err := Read(ctx, src, progress)
	if err != nil {
		return nil, err
	}
	tell(progress, Progress{Stage: StageRules, Message: fmt.Sprintf("evaluating %d rules", len(set.Rules))})
	d := in.Diagnose(set, cfg)
	tell(progress, Progress{Stage: StageRules, Message: fmt.Sprintf("%d target(s) diagnosed", len(d.Targets)), Done: true})
	if len(d.Targets) == 0 {
		return nil, in.NothingDiagnosed()
	}
	return d, nil
}

// Checklist reads the sources and checks the pre-launch items of set (the
// checklist items and any SLO gates) on every target. strict counts an item
// that cannot be checked as failed. A run that finds no target fails with a
// *NoTargetError. progress may be nil.
func Checklist(ctx context.Context, src Sources, set *rules.Set, cfg *rules.Config, strict bool, progress func(Progress)) (*advisor.Checklist, error) {
	in, err := Read(ctx, src, progress)
	if err != nil {
		return nil, err
	}
	tell(progress, Progress{Stage: StageRules, Message: fmt.Sprintf("checking %d items", len(set.Rules))})
	cl := in.Checklist(set, cfg, strict)
	tell(progress, Progress{Stage: StageRules, Message: fmt.Sprintf("%d target(s) checked", len(cl.Targets)), Done: true})
	if len(cl.Targets) == 0 {
		return nil, in.NothingDiagnosed()
	}
	return cl, nil
}

func tell(progress func(Progress), p Progress) {
	if progress != nil {
		progress(p)
	}
}

// Diagnose builds the evidence of every target in the input and evaluates
// the rules on it. It never fails: a target with nothing to judge has gaps,
// and an input with no target gives a diagnosis without targets.
func (in *Input) Diagnose(set *rules.Set, cfg *rules.Config) *advisor.Diagnosis {
	if cfg == nil {
		cfg = &rules.Config{}
	}
	evs, given, win, notes := buildEvidence(in.Window, engine.Options{GroupBy: in.GroupBy, Engine: in.Engine}, cfg, in.Requests)
	d := &advisor.Diagnosis{Schema: advisor.Schema, Sources: in.Sources, Targets: []advisor.TargetReport{}, Notes: notes, Window: win,
		Config: cfg.File}
	for _, s := range cfg.Expired() {
		d.Notes = append(d.Notes, fmt.Sprintf("suppression of %s expired on %s and no longer applies", s.Rule, s.Until))
	}
	for i, rs := range set.EvaluateEach(evs, cfg) {
		t := advisor.Advise(evs[i], rs, cfg)
		if t.Primary.Bottleneck == "none" && len(evs[i].Inconsistencies) > 0 {
			advisor.DenyHealthy(&t, withheldPoints(set, given[i](), rs, cfg)...)
		}
		if n, confirm := in.readings(); n > 0 {
			advisor.MarkTentative(&t, n, confirm)
		}
		d.Targets = append(d.Targets, t)
	}
	return d
}

// readings is how many readings the window's evidence rests on when they
// are too few for a window (one snapshot; a log of fewer than
// logs.ThinReadings stats lines), with what would confirm a verdict from
// them; 0 when the window is a window.
func (in *Input) readings() (int, string) {
	w := in.Window
	switch {
	case w == nil:
		return 0, ""
	case w.Cumulative:
		return 1, advisor.ConfirmSnapshot
	case len(w.Histograms) == 0 && (len(w.Gauges) > 0 || len(w.Counters) > 0) && w.Points < logs.ThinReadings:
		return w.Points, advisor.ConfirmLog
	}
	return 0, ""
}

// Checklist evaluates the checklist items of set on every target of the
// input. An item whose source is absent cannot be checked (it is never
// skipped as a diagnosis rule would be).
func (in *Input) Checklist(set *rules.Set, cfg *rules.Config, strict bool) *advisor.Checklist {
	if cfg == nil {
		cfg = &rules.Config{}
	}
	evs, _, win, notes := buildEvidence(in.Window, engine.Options{GroupBy: in.GroupBy, Engine: in.Engine}, cfg, in.Requests)
	cl := &advisor.Checklist{Schema: advisor.ChecklistSchema, Sources: in.Sources, Targets: []advisor.ChecklistTarget{},
		Notes: notes, Window: win, Strict: strict, Config: cfg.File}
	keep := *cfg
	keep.KeepNeeds = true
	for i, rs := range set.EvaluateEach(evs, &keep) {
		cl.Targets = append(cl.Targets, advisor.CheckTarget(evs[i], rs))
	}
	cl.Decide()
	return cl
}

// buildEvidence is the collector end of every run: the window (nil: none)
// and request-level files to evidence per target, the window's description
// and the notes collecting left; beside each target's checked evidence, how
// to get it as given (nothing withheld), which a diagnosis asks for only
// when withheld evidence might stand against a healthy verdict. It is the
// one place the engine's builder is called (every registered engine's
// catalogue). The window is left as it was found, so one Input can be
// diagnosed and checked.
func buildEvidence(w *window.Window, opt engine.Options, cfg *rules.Config, reqs []RequestFile) (evs []*evidence.Evidence, given []func() *evidence.Evidence, _ advisor.Window, _ []string) {
	if w == nil {
		w = window.New()
	}
	// The builder adds notes to the window: keep them out of it.
	kept := len(w.Notes)
	opt.WeightBytes = cfg.WeightBytes()
	opt.MoE = cfg.MoE()
	evs = engine.Build(w, opt)
	notes := append([]string(nil), w.Notes...)
	w.Notes = w.Notes[:kept]
	notes = append(notes, dcgm.Attach(w, evs, cfg.PeakBandwidths())...)
	notes = append(notes, router.Attach(w, evs)...)
	evs, more := attachRequests(evs, reqs)
	notes = append(notes, more...)
	for _, e := range evs {
		setTargets(e, cfg)
		given = append(given, evidence.CheckKeepingGiven(e))
		for _, n := range e.Notes {
			if len(evs) > 1 {
				n = targetName(e.Target) + ": " + n
			}
			notes = append(notes, n)
		}
	}
	win := advisor.Window{Cumulative: w.Cumulative, Points: w.Points}
	if !w.Start.IsZero() {
		s, e := w.Start.UTC(), w.End.UTC()
		win.Start, win.End = &s, &e
	}
	if secs := w.Seconds(); !math.IsNaN(secs) {
		win.Seconds = secs
		if c := w.Covered(); c < window.MinCovered*secs {
			win.Covered = c
		}
	}
	// Two snapshots (a log has its own note on how few its lines are).
	if w.Points == 2 && len(w.Gauges) > 0 && len(w.Histograms) > 0 {
		notes = append(notes, "gauges (running, waiting, KV usage) were sampled only at the window's two ends, so bursts between them are invisible; scrape the server live or query Prometheus for a sampled window")
	}
	if w.Cumulative {
		notes = append(notes, "one snapshot: counts and distributions cover the time since the server started, and rates cannot be computed; give two snapshots for a window")
	}
	return evs, given, win, notes
}

// withheldPoints names the causes that evidence withheld as inconsistent
// would show: a rule that fires on the evidence read as given, at warning
// or above and naming a bottleneck, where it did not fire as checked.
// Withheld evidence that points at a problem keeps a target from healthy.
func withheldPoints(set *rules.Set, raw *evidence.Evidence, checked []rules.Result, cfg *rules.Config) []advisor.Bounded {
	fired := map[string]bool{}
	for _, r := range checked {
		if r.Outcome == rules.Fired {
			fired[r.Rule.ID] = true
		}
	}
	var out []advisor.Bounded
	for _, r := range set.Evaluate(raw, cfg) {
		if r.Outcome != rules.Fired || fired[r.Rule.ID] || r.Severity < rules.Warning || r.Suppressed() != "" ||
			!rules.OnPath(r.Rule.Bottleneck) || r.Rule.Bottleneck == "none" {
			continue
		}
		out = append(out, advisor.Bounded{Rule: r.Rule.ID,
			Why: "withheld evidence points at " + r.Rule.Bottleneck + " (" + r.Rule.ID + " fires on it as given): " + r.Message})
	}
	return out
}

// attachRequests adds request-level evidence: to the only target, or to a
// target of its own when there is no metrics source.
func attachRequests(evs []*evidence.Evidence, reqs []RequestFile) ([]*evidence.Evidence, []string) {
	var notes []string
	for _, r := range reqs {
		switch len(evs) {
		case 0:
			// A benchmark names the model it ran; a request file does not.
			model := r.acc.Run.Model
			if model == "" {
				model = "requests from " + r.From
			}
			e := evidence.New(evidence.Target{Model: model})
			r.acc.Fill(e, r.From)
			evs = append(evs, e)
		case 1:
			r.acc.Fill(evs[0], r.From)
		default:
			notes = append(notes, fmt.Sprintf("%s was not attached: the metrics hold %d targets and a request file does not say which it belongs to", r.From, len(evs)))
		}
	}
	return evs, notes
}

// setTargets puts the SLO a healthy verdict is judged against into the
// request conditions, cited as the configuration's or the defaults.
func setTargets(e *evidence.Evidence, cfg *rules.Config) {
	t := cfg.Targets()
	from := "default for interactive serving"
	if cfg.SLOFrom != "" {
		from = "set in " + cfg.SLOFrom
	}
	c := &e.Values.Cond
	c.TargetTTFTP99, c.TargetTPOT = t.TTFTP99.Seconds(), t.TPOT.Seconds()
	for _, p := range []string{"cond.target_ttft_p99", "cond.target_tpot"} {
		e.Cite(p, evidence.Source{Metric: "target", Note: from})
	}
	if d := t.E2EFor(c.OutputTokens.P99); d > 0 {
		c.TargetE2EP99 = d.Seconds()
		note := from
		if cfg.SLO.E2EP99 <= 0 {
			note = "TTFT p99 target + p99 output tokens × per-token target"
		}
		e.Cite("cond.target_e2e_p99", evidence.Source{Metric: "target", Note: note})
	}
	for _, m := range e.Members {
		setTargets(m, cfg)
	}
}

func targetName(t evidence.Target) string {
	switch {
	case t.Model != "" && t.Instance != "":
		return t.Model + " on " + t.Instance
	case t.Model != "":
		return t.Model
	}
	return t.Instance
}
