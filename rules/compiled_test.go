package rules

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/expr-lang/expr/vm"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// allRules are the built-in rules, the checklist items and user rules that
// use what compiled expressions and messages leave to expr and
// text/template.
func allRules(t *testing.T) []*Rule {
	t.Helper()
	rs := builtinSet(t).Rules
	cl, err := ChecklistItems()
	if err != nil {
		t.Fatal(err)
	}
	rs = append(rs, cl.Rules...)
	for i, src := range []string{
		// expr builtins and integer arithmetic run on the VM.
		`when: max(stage.ttft.p99, stage.ttft.p50 * 2) > params.a && 3 * 2 > 5
says: "{{printf \"%.1f\" .stage.ttft.p99}} {{.stage.ttft.p99}} {{.params.a}}"`,
		`when: '(stage.ttft.mean > 0.5 ? stage.ttft.p99 : -stage.ttft.p50) / 2 >= params.a || !(service.waiting.mean != 1)'
impact: 'stage.ttft.mean > 1 ? 0.5 : stage.ttft.p50 ** 2'
says: "{{if gt .stage.ttft.mean 0.5}}slow{{end}}{{if eq .params.a 0.4}} default{{end}} {{.stage.ttft.mean | dur}} {{num (sub .stage.ttft.p99 .stage.ttft.p50)}}"`,
		`when: verdict.warning >= 1 and not (verdict.critical > 0)
says: "{{if le .verdict.warning 1.0}}one{{else if ge .verdict.warning 3.0}}many{{else}}a few{{end}} {{atleast .verdict.warning 2.0}}	{{ratio .verdict.top_impact}}  "`,
		`when: service.ttft_p99_outlier_ratio > params.a
says: "{{index .text \"service.ttft_p99_outlier\"}} is {{times .service.ttft_p99_outlier_ratio 1}} {{len .text}}"`,
	} {
		r, err := Parse("user.yaml", []byte("id: user/r"+string(rune('a'+i))+"\ntitle: t\nlayer: stage\nbottleneck: queueing\nseverity: warning\nparams: {a: 0.4}\nthresholds: {a: because}\n"+src+"\n"))
		if err != nil {
			t.Fatalf("user rule %d: %v", i, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// randomEvidence sets most fields, some to numbers rules treat specially
// (0, 1, a param's default, negative, infinite), and leaves the rest
// missing.
func randomEvidence(rng *rand.Rand, rs []*Rule) *evidence.Evidence {
	e := evidence.New(evidence.Target{Model: "m"})
	for _, f := range evidence.Fields() {
		var x float64
		switch rng.Intn(10) {
		case 0:
			continue
		case 1:
			x = float64(rng.Intn(3))
		case 9:
			r := rs[rng.Intn(len(rs))]
			if len(r.paramVals) == 0 {
				continue
			}
			x = r.paramVals[rng.Intn(len(r.paramVals))]
		case 2:
			x = -rng.Float64()
		case 3:
			x = math.Inf(1)
		case 4:
			x = rng.Float64() * 1e13
		case 5:
			x = float64(rng.Intn(100000))
		default:
			x = rng.Float64() * math.Pow(10, float64(rng.Intn(4)))
		}
		e.Values.Set(f, x)
	}
	if rng.Intn(2) == 0 {
		e.Text["service.ttft_p99_outlier"] = "pod  a\tb"
	}
	return e
}

func randomParams(rng *rand.Rand, r *Rule) map[string]float64 {
	if rng.Intn(2) == 0 {
		return r.Params
	}
	p := map[string]float64{}
	for _, name := range r.paramNames {
		p[name] = r.Params[name] * rng.Float64() * 2
	}
	return p
}

// Expressions run as closures give what the expr VM gives, on any
// evidence, and every built-in one runs as closures.
func TestCompiledExpressionsMatchTheVM(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	rs := allRules(t)
	for _, r := range rs {
		var xs []*expression
		for _, x := range []*expression{r.when, r.applies, r.impact} {
			if x != nil {
				xs = append(xs, x)
			}
		}
		for _, bs := range [][]bound{r.bounds, r.conjuncts} {
			for _, b := range bs {
				xs = append(xs, b.cond)
			}
		}
		for _, b := range r.explainsIf {
			xs = append(xs, b.cond)
		}
		for _, x := range xs {
			if x.test == nil && x.num == nil && !strings.HasPrefix(r.ID, "user/") {
				t.Errorf("%s: %s runs on the VM", r.ID, x.prog.Source().String())
			}
		}
		for trial := 0; trial < 300; trial++ {
			e := randomEvidence(rng, rs)
			params := randomParams(rng, r)
			vd := Verdict{Critical: float64(rng.Intn(3)), Warning: float64(rng.Intn(4)), Bottlenecks: float64(rng.Intn(3)),
				TopImpact: rng.Float64()}
			env := newEnv(&e.Values)
			env.Params, env.Verdict = params, vd
			fr := frame{v: &e.Values, verdict: &vd}
			for _, p := range r.paramNames {
				fr.params = append(fr.params, params[p])
			}
			for _, x := range xs {
				want, err := vm.Run(x.prog, env)
				if err != nil {
					t.Fatalf("%s: %s: %v", r.ID, x.prog.Source().String(), err)
				}
				var got any = "(VM)"
				switch {
				case x.test != nil:
					got = x.test(&fr)
				case x.num != nil:
					got = x.num(&fr)
				default:
					continue
				}
				if w, ok := want.(float64); ok && math.IsNaN(w) {
					if g, ok := got.(float64); ok && math.IsNaN(g) {
						continue
					}
				}
				if got != want {
					t.Fatalf("%s: %s: closures give %v, the VM %v", r.ID, x.prog.Source().String(), got, want)
				}
			}
		}
	}
}

// Compiled messages write what text/template writes, or leave it to
// text/template; every built-in message is compiled, and it runs wherever
// its inputs are there.
func TestCompiledMessagesMatchTemplates(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	rs := allRules(t)
	for _, r := range rs {
		user := strings.HasPrefix(r.ID, "user/")
		if r.msg == nil && !user {
			t.Errorf("%s: says is not compiled", r.ID)
		}
		for _, b := range r.bounds {
			if b.msg == nil && !user {
				t.Errorf("%s: a bound's says is not compiled", r.ID)
			}
		}
		ran := false
		for trial := 0; trial < 300; trial++ {
			e := randomEvidence(rng, rs)
			params := randomParams(rng, r)
			vd := Verdict{Critical: float64(rng.Intn(3)), Warning: float64(rng.Intn(4)), TopImpact: rng.Float64()}
			fr := frame{v: &e.Values, verdict: &vd, text: e.Text}
			for _, p := range r.paramNames {
				fr.params = append(fr.params, params[p])
			}
			want, err := r.render(&e.Values, e.Text, params, vd)
			if r.msg != nil {
				got, ok := r.msg(&fr, nil)
				switch {
				case ok && (err != nil || collapse(got) != want):
					t.Fatalf("%s: compiled %q, text/template %q (%v)", r.ID, collapse(got), want, err)
				case !ok && !user && allPresent(e, r.reads):
					t.Fatalf("%s: compiled message refused evidence with every input", r.ID)
				}
				ran = ran || ok
			}
			for _, b := range r.bounds {
				want, err := b.render(&e.Values, params)
				if got, ok := b.msg(&fr, nil); ok && (err != nil || collapse(got) != want) {
					t.Fatalf("%s: bound compiled %q, text/template %q (%v)", r.ID, collapse(got), want, err)
				}
			}
		}
		if !ran && r.msg != nil {
			t.Errorf("%s: the compiled message never ran", r.ID)
		}
	}
}

func allPresent(e *evidence.Evidence, fs []evidence.Field) bool {
	for _, f := range fs {
		if !evidence.Present(e.Values.Get(f)) {
			return false
		}
	}
	return true
}

func TestCollapseIsFieldsJoined(t *testing.T) {
	for _, s := range []string{"", " ", "a", " a ", "a b", "a  b\n", "\ta\nb\r\n", "p99 2× the median\n",
		"a\u00a0b", "a\u0085 b", "\u2003a\u3000", "x\xffy \xc2", "ends with ×\n\n", "a \u00a0 b", "µs  ", " – "} {
		if got, want := collapse([]byte(s)), strings.Join(strings.Fields(s), " "); got != want {
			t.Errorf("collapse(%q) = %q, want %q", s, got, want)
		}
	}
}

// EvaluateEach, which spreads targets over goroutines, gives each target
// what Evaluate gives it alone, in order; run with -race it also shows the
// rules share nothing mutable between targets.
func TestEvaluateEachIsEvaluatePerTarget(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	rs := allRules(t)
	var unique []*Rule
	seen := map[string]bool{}
	for _, r := range rs {
		if !seen[r.ID] {
			seen[r.ID] = true
			unique = append(unique, r)
		}
	}
	s, err := NewSet(unique)
	if err != nil {
		t.Fatal(err)
	}
	targets := make([]*evidence.Evidence, 300)
	for i := range targets {
		targets[i] = randomEvidence(rng, rs)
	}
	cfg := &Config{Rules: map[string]Override{rs[0].ID: {Params: map[string]float64{}}}}
	got := s.EvaluateEach(targets, cfg)
	if len(got) != len(targets) {
		t.Fatalf("%d result lists for %d targets", len(got), len(targets))
	}
	before := make([]string, len(got))
	for i := range got {
		before[i] = printed(got[i])
	}
	// Backwards, so each target follows others than before: results share
	// notes between targets, and a later target must not change them.
	for i := len(targets) - 1; i >= 0; i-- {
		want := s.Evaluate(targets[i], cfg)
		if printed(got[i]) != printed(want) {
			t.Fatalf("target %d: EvaluateEach differs from Evaluate", i)
		}
	}
	for i := range got {
		if printed(got[i]) != before[i] {
			t.Fatalf("target %d: its results changed after other targets were evaluated", i)
		}
	}
}

// printed is results as %+v prints them (NaN impacts equal, maps in key
// order) with their notes shown, not their address.
func printed(rs []Result) string {
	var b strings.Builder
	for _, r := range rs {
		n := r.Notes
		r.Notes = nil
		fmt.Fprintf(&b, "%+v %+v\n", r, n)
	}
	return b.String()
}

// Two rules that give the same advice give it in the same words, so that
// the advisor merges it into one step naming both: a step whose first 40
// characters are another's must be that step.
func TestSameAdviceInSameWords(t *testing.T) {
	type said struct{ text, rule string }
	first := map[string]said{}
	for _, r := range builtinSet(t).Rules {
		for _, s := range r.Next {
			if len(s.Do) < 40 {
				continue
			}
			prev, ok := first[s.Do[:40]]
			switch {
			case !ok:
				first[s.Do[:40]] = said{s.Do, r.ID}
			case prev.text != s.Do:
				t.Errorf("%s and %s give one step in different words:\n  %s\n  %s", prev.rule, r.ID, prev.text, s.Do)
			}
		}
	}
}

// A rule that reads more fields than the gap array holds, before one whose
// gaps repeat from target to target, evaluates without running off the
// array (a user rule may read forty fields; the built-in ones read seven).
func TestWideRuleGaps(t *testing.T) {
	var wide, small []string
	for _, f := range evidence.Fields() {
		if strings.Count(f.Path, ".") != 1 {
			continue // one node a field: each missing field is a gap of its own
		}
		switch {
		case strings.HasPrefix(f.Path, "stage.") && len(small) < 5:
			small = append(small, f.Path)
		case !strings.HasPrefix(f.Path, "stage.") && len(wide) < 40:
			wide = append(wide, f.Path)
		}
	}
	var rs []*Rule
	for i, fields := range [][]string{wide, small} {
		when := strings.Join(fields, " >= 0 && ") + " >= 0"
		r, err := Parse("user.yaml", []byte(fmt.Sprintf("id: user/wide%d\ntitle: t\nlayer: stage\nbottleneck: queueing\nseverity: warning\nwhen: %s\nsays: x\n", i, when)))
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	s, err := NewSet(rs)
	if err != nil {
		t.Fatal(err)
	}
	// The wide rule's gaps alternate, so they are kept; the small one's
	// repeat, so they are shared.
	for i := range 12 {
		e := evidence.New(evidence.Target{Model: "m"})
		if i%2 == 1 {
			if e, err = FixtureEvidence(map[string]any{wide[0]: 1}); err != nil {
				t.Fatal(err)
			}
		}
		out := s.Evaluate(e, nil)
		if len(out) != 2 || len(out[0].Missing()) < 30 || len(out[1].Missing()) != len(small) {
			t.Fatalf("target %d: %d and %d gaps", i, len(out[0].Missing()), len(out[1].Missing()))
		}
	}
}
