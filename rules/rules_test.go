package rules

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func builtinSet(t testing.TB) *Set {
	t.Helper()
	b, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkFixtures runs every rule's cases and requires a fired, a quiet and an
// insufficient case for each.
func checkFixtures(t *testing.T, s *Set) {
	t.Helper()
	seen := map[string]map[Outcome]bool{}
	for _, tr := range RunFixtures(s, s.Rules, BuiltinFS, func(r *Rule) string { return r.File }) {
		if seen[tr.Rule] == nil {
			seen[tr.Rule] = map[Outcome]bool{}
		}
		seen[tr.Rule][tr.Want] = true
		if !tr.OK() {
			t.Errorf("%s: want %s, got %s %s", tr.File, tr.Want, tr.Got, tr.Err)
		}
	}
	for _, r := range s.Rules {
		for _, o := range []Outcome{Fired, Quiet, Insufficient} {
			if !seen[r.ID][o] {
				t.Errorf("%s: no %s fixture in %s", r.ID, o, FixtureDir(r.File))
			}
		}
	}
}

// Every built-in rule has fired, quiet and insufficient cases, and they pass.
func TestBuiltinFixtures(t *testing.T) {
	s := builtinSet(t)
	checkFixtures(t, s)
	if len(s.Rules) < 10 {
		t.Errorf("only %d built-in rules", len(s.Rules))
	}
}

// Every checklist item has fired (fails), quiet (passes) and insufficient
// (cannot check) cases.
func TestChecklistFixtures(t *testing.T) {
	s, err := ChecklistItems()
	if err != nil {
		t.Fatal(err)
	}
	checkFixtures(t, s)
}

// Rule files live at builtin/<id>.yaml so ids and paths never drift apart.
func TestBuiltinPathsMatchIDs(t *testing.T) {
	s := builtinSet(t)
	for _, r := range s.Rules {
		if want := "builtin/" + r.ID + ".yaml"; r.File != want {
			t.Errorf("rule %s is in %s, want %s", r.ID, r.File, want)
		}
	}
}

func TestParseErrorsCarryFileLineAndID(t *testing.T) {
	base := "id: x/y\ntitle: t\nlayer: stage\nbottleneck: queueing\nseverity: warning\nstage: queue\n"
	cases := []struct{ name, src, want string }{
		{"unknown field", base + "when: stage.ttft.nope > 1\nsays: s\n", "f.yaml:7: rule x/y: when:"},
		{"type error", base + "when: stage.ttft.mean + 'a'\nsays: s\n", "f.yaml:7: rule x/y: when:"},
		{"bad stage", strings.Replace(base, "stage: queue", "stage: gpu", 1) + "when: stage.ttft.mean > 1\nsays: s\n", "f.yaml:6: rule x/y: stage \"gpu\""},
		{"bound without says", base + "when: stage.ttft.mean > 1\nbound: [{if: stage.ttft.p99 < 1}]\nsays: s\n", "bound 1: needs if and says"},
		{"bound cites what it does not read", base + "when: stage.ttft.mean > 1\nbound: [{if: stage.ttft.p99 < 1, says: '{{dur .stage.ttft.mean}}'}]\nsays: s\n", "says reads stage.ttft.mean, which its condition does not"},
		{"group read", base + "when: stage.ttft > 1\nsays: s\n", "mismatched types"},
		{"undeclared param", base + "when: stage.ttft.mean > params.x\nsays: s\n", "params.x is not declared"},
		{"param without reason", base + "params: {x: 1}\nwhen: stage.ttft.mean > params.x\nsays: s\n", "no justification"},
		{"bad template", base + "when: stage.ttft.mean > 1\nsays: '{{dur .stage.ttft.nope}}'\n", "f.yaml:8: rule x/y: says:"},
		{"bad severity", strings.Replace(base, "warning", "fatal", 1) + "when: stage.ttft.mean > 1\nsays: s\n", "f.yaml:5: rule x/y: unknown severity"},
		{"bad bottleneck", strings.Replace(base, "queueing", "gpu", 1) + "when: stage.ttft.mean > 1\nsays: s\n", "f.yaml:4"},
		{"unknown key", base + "whenn: 1\n", "f.yaml"},
		{"now disabled", base + "when: now() > 1\nsays: s\n", "when:"},
		{"bad id", strings.Replace(base, "x/y", "XY", 1) + "when: stage.ttft.mean > 1\nsays: s\n", "area/name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want error containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestDuplicateIDs(t *testing.T) {
	b, _ := Builtin()
	if _, err := NewSet(b, b[:1]); err == nil || !strings.Contains(err.Error(), "duplicate id") {
		t.Fatalf("want duplicate id error, got %v", err)
	}
}

func TestReadsComeFromTheExpression(t *testing.T) {
	s := builtinSet(t)
	r, _ := s.Get("queue/ttft-dominated")
	got := strings.Join(r.Reads(), " ")
	want := "service.waiting.max stage.queue.mean stage.queue.p99 stage.share.queue"
	if got != want {
		t.Fatalf("reads %q, want %q", got, want)
	}
}

// The generated docs in docs/rules match the rule files.
func TestDocsAreFresh(t *testing.T) {
	s := builtinSet(t)
	c, err := ChecklistItems()
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range DocFiles(s, c) {
		got, err := os.ReadFile(filepath.Join("..", "docs", "rules", rel))
		if err != nil || string(got) != want {
			t.Errorf("docs/rules/%s is stale or missing: run go generate ./rules", rel)
		}
	}
}

func FuzzParseRule(f *testing.F) {
	data, _ := BuiltinFS.ReadFile("builtin/queue/ttft-dominated.yaml")
	f.Add(data)
	f.Add([]byte("id: a/b\ntitle: t\nlayer: stage\nbottleneck: queueing\nseverity: info\nwhen: stage.ttft.p99 > 1\nsays: '{{dur .stage.ttft.p99}}'\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Parse("f.yaml", in)
		if err != nil {
			return
		}
		// A rule that loads must evaluate on empty and on full evidence.
		s, _ := NewSet([]*Rule{r})
		s.Evaluate(FullEvidence(1), nil)
		e, _ := FixtureEvidence(nil)
		s.Evaluate(e, nil)
	})
}

func FuzzFixtureEvidence(f *testing.F) {
	f.Add([]byte("evidence:\n  stage.ttft: {count: 100, p99: 3}\n  service.finished: 4\n"))
	set := builtinSet(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		var fx Fixture
		if yamlUnmarshal(in, &fx) != nil {
			return
		}
		if e, err := FixtureEvidence(fx.Evidence); err == nil {
			set.Evaluate(e, nil)
		}
	})
}

// Built-in rules on the latency path say which stage they hold or slow, so
// their impact is written where they are; off the path, none claims one.
func TestBuiltinRulesDeclareTheirStage(t *testing.T) {
	s := builtinSet(t)
	for _, r := range s.Rules {
		if r.BuiltIn && OnPath(r.Bottleneck) && r.Spec.Stage == "" {
			t.Errorf("%s (%s) declares no stage", r.ID, r.Bottleneck)
		}
		// A target judged on one stage says which (target/tpot: decode).
		if !OnPath(r.Bottleneck) && r.Spec.Stage != "" && !r.DeniesHealthy {
			t.Errorf("%s (%s) is off the latency path but declares stage %s", r.ID, r.Bottleneck, r.Spec.Stage)
		}
	}
	r, err := Parse("f.yaml", []byte("id: x/y\ntitle: t\nlayer: stage\nbottleneck: kv-capacity\nseverity: warning\nwhen: stage.ttft.mean > 1\nsays: s\n"))
	if err != nil || r.Stage != "queue" {
		t.Fatalf("a user rule without stage: %v, stage %q", err, r.Stage)
	}
}

// Stalls explain slow prefills only when prompt lengths are mixed and the
// engine spends much of its time in stalled steps (3100 s over 20 streams in
// 400 s: 39%): then short prompts wait behind long ones. Uniformly long
// prompts make their own prefill.
func TestExplainsIfHoldsOnlyWhereItsConditionDoes(t *testing.T) {
	s := builtinSet(t)
	r, _ := s.Get("interference/stalls")
	one := &Set{Rules: []*Rule{r}, byID: map[string]*Rule{r.ID: r}}
	for _, c := range []struct {
		p50  float64
		want string
	}{{480, "decode queueing prefill"}, {6000, "decode queueing"}} {
		e, err := FixtureEvidence(map[string]any{
			"stage.itl": map[string]any{"count": 900000, "p50": 0.018}, "stage.itl_stalls": 4700, "stage.itl_stall_seconds": 3100,
			"service.finished": 2700, "service.e2e": map[string]any{"count": 2700, "mean": 7.7},
			"service.running": map[string]any{"mean": 20, "samples": 31}, "cond.window_seconds": 400,
			"cond.prompt_tokens": map[string]any{"count": 2700, "p50": c.p50, "p99": 14000}})
		if err != nil {
			t.Fatal(err)
		}
		res := one.Evaluate(e, nil)[0]
		if res.Outcome != Fired || strings.Join(res.Explains(), " ") != c.want {
			t.Fatalf("prompt p50 %v: %s explains %v, want %s", c.p50, res.Outcome, res.Explains(), c.want)
		}
		// Impact: frozen time per request over end-to-end.
		if math.Abs(res.Impact-3100.0/2700/7.7) > 1e-9 {
			t.Fatalf("impact %v", res.Impact)
		}
	}
}

// The verdict summary weighs a cause as the advisor does: a KV finding on a
// small queue share that explains a large one stays critical, so a rule
// judging "no critical finding" does not contradict the report.
func TestVerdictSummaryWeighsCauses(t *testing.T) {
	s := builtinSet(t)
	kv, _ := s.Get("kv/preemption")
	q, _ := s.Get("queue/ttft-dominated")
	rs := []Result{
		{Rule: kv, Outcome: Fired, Severity: Critical, Impact: 0.05, ImpactMax: 0.05, Notes: &Notes{Explains: kv.Explains}},
		{Rule: q, Outcome: Fired, Severity: Critical, Impact: 0.8, ImpactMax: 0.8},
	}
	if v := verdict(rs, DefaultMinShare); v.Critical != 2 {
		t.Fatalf("critical %v, want 2: the cause takes its effect's share", v.Critical)
	}
	rs[1].ImpactMax, rs[1].Impact = 0.1, 0.1
	if v := verdict(rs, DefaultMinShare); v.Critical != 0 {
		t.Fatalf("critical %v, want 0: both stages are small", v.Critical)
	}
}

// An empty or comment-only llmdoctor.yaml is all defaults, not an error.
func TestEmptyConfigIsDefaults(t *testing.T) {
	for _, doc := range []string{"", "# nothing set yet\n", "\n\n"} {
		c, err := ParseConfig("llmdoctor.yaml", []byte(doc))
		if err != nil || c.MinSamples != 0 || c.MinShare != 0 {
			t.Errorf("%q: %+v, %v", doc, c, err)
		}
	}
	if _, err := ParseConfig("llmdoctor.yaml", []byte("min_samples: 0\n")); err == nil {
		t.Error("an explicit 0 was taken")
	}
}

func TestConfigSLO(t *testing.T) {
	c, err := ParseConfig("llmdoctor.yaml", []byte("slo: {ttft_p99: 1s, tpot_p50: 30ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Targets()
	if got.TTFTP99 != time.Second || got.TPOT != 30*time.Millisecond || c.SLOFrom != "llmdoctor.yaml" {
		t.Fatalf("targets %+v from %q", got, c.SLOFrom)
	}
	// End-to-end defaults to what the other two allow for the answers.
	if d := got.E2EFor(500); d != time.Second+15*time.Second {
		t.Errorf("e2e target for 500 tokens: %v", d)
	}
	if d := (SLO{TTFTP99: time.Second, E2EP99: 9 * time.Second}).E2EFor(500); d != 9*time.Second {
		t.Errorf("a set e2e target is kept: %v", d)
	}
	if def := (&Config{}).Targets(); def.TTFTP99 != 2*time.Second || def.TPOT != 50*time.Millisecond || def.E2EP99 != 0 {
		t.Errorf("defaults %+v", def)
	}
	bad, _ := ParseConfig("x", []byte("slo: {ttft_p99: -1s}\n"))
	if err := bad.checkValues(func(string) (*Rule, bool) { return nil, false }); err == nil || !strings.Contains(err.Error(), "slo.ttft_p99") {
		t.Errorf("a negative target: %v", err)
	}
}

// A model entry may say only whether the model is a mixture of experts;
// an entry that says nothing is refused.
func TestConfigModelMoE(t *testing.T) {
	c, err := ParseConfig("llmdoctor.yaml", []byte("models:\n  my/moe: {moe: true}\n  my/dense: {moe: false, weight_bytes: 16e9}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if m := c.MoE(); len(m) != 2 || !m["my/moe"] || m["my/dense"] {
		t.Fatalf("moe %v", m)
	}
	c, err = ParseConfig("llmdoctor.yaml", []byte("models:\n  my/model: {}\n"))
	if err == nil {
		err = c.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "weight_bytes") {
		t.Fatalf("an empty model entry: %v", err)
	}
}
