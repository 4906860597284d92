package rules

import (
	"regexp"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// stepFlag is a command-line flag named in a rendered step.
var stepFlag = regexp.MustCompile(`--[a-z][a-z0-9-]*`)

// benchFlags are flags steps may name that are no engine's knob, each with
// why naming it without an engine's knob map is right.
var benchFlags = map[string]string{
	"--request-rate":       "the benchmark client's arrival rate (vllm bench serve, sglang.bench_serving): a flag of the load generator, not of the server",
	"--burstiness":         "the benchmark client's arrival spread, named beside --request-rate: a load generator flag",
	"--random-range-ratio": "the benchmark client's prompt-length spread, named with its tool (vllm bench serve)",
}

// allSteps gives every built-in rule and checklist item with next steps.
func allSteps(t *testing.T) []*Rule {
	t.Helper()
	b, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ChecklistItems()
	if err != nil {
		t.Fatal(err)
	}
	return append(b, c.Rules...)
}

// parenDepth is the deepest nesting of parentheses in s.
func parenDepth(s string) int {
	depth, deepest := 0, 0
	for _, r := range s {
		switch r {
		case '(':
			depth++
			deepest = max(deepest, depth)
		case ')':
			depth--
		}
	}
	return deepest
}

// Every rule's next steps, rendered for each registered engine and for none,
// read as advice that engine's users can follow: no knob the engine lacks as
// the step's whole point, no parentheses inside parentheses, no flag twice,
// and no flag that is another engine's or no engine's.
func TestStepsPerEngine(t *testing.T) {
	engines := evidence.Engines()
	if len(engines) < 2 {
		t.Fatalf("%d engines registered; the test needs vLLM and SGLang", len(engines))
	}
	own := map[string]map[string]bool{} // engine → flags its knobs name
	for _, v := range engines {
		own[v.Name] = map[string]bool{}
		for _, f := range v.Knobs {
			for _, x := range stepFlag.FindAllString(f, -1) {
				own[v.Name][x] = true
			}
		}
	}
	used := map[string]bool{}
	for _, r := range allSteps(t) {
		for _, s := range r.Next {
			for _, m := range knobRef.FindAllStringSubmatch(s.Do, -1) {
				used[m[1]] = true
			}
		}
		for _, v := range append([]*evidence.Engine{nil}, engines...) {
			name := "no engine"
			if v != nil {
				name = v.Title
			}
			for i, s := range StepsFor(r.Next, &evidence.Evidence{Engine: v}) {
				where := r.ID + " step " + string(rune('1'+i)) + " for " + name
				knobs := knobRef.FindAllStringSubmatch(r.Next[i].Do, -1)
				if v != nil && len(knobs) > 0 {
					missing := 0
					for _, m := range knobs {
						if v.Knobs[m[1]] == "" {
							missing++
						}
					}
					if missing == len(knobs) {
						t.Errorf("%s: every setting it names is one %s lacks: %q", where, name, s.Do)
					}
				}
				if strings.Contains(s.Do, "((") || parenDepth(s.Do) > 1 {
					t.Errorf("%s: parentheses inside parentheses: %q", where, s.Do)
				}
				seen := map[string]bool{}
				for _, f := range stepFlag.FindAllString(s.Do, -1) {
					if seen[f] {
						t.Errorf("%s: names %s twice: %q", where, f, s.Do)
					}
					seen[f] = true
					if _, ok := benchFlags[f]; ok {
						continue
					}
					if v == nil {
						t.Errorf("%s: names the flag %s without knowing the engine: %q", where, f, s.Do)
						continue
					}
					if own[v.Name][f] {
						continue
					}
					other := ""
					for _, w := range engines {
						if own[w.Name][f] {
							other = w.Title
						}
					}
					if other != "" {
						t.Errorf("%s: names %s's flag %s: %q", where, other, f, s.Do)
					} else {
						t.Errorf("%s: names %s, which is no knob of %s and not a whitelisted benchmark flag: %q", where, f, name, s.Do)
					}
				}
			}
		}
	}
	for k := range evidence.DefaultKnobs {
		if !used[k] {
			t.Errorf("knob {%s} is named by no step: remove it from evidence.DefaultKnobs and the engines' knobs", k)
		}
	}
}

// Every built-in step that names a knob says which way it turns it, and
// names every knob it turns, so that the reader sees the flag and the
// advisor can tell steps that clash or repeat; a step the evidence can
// show already made says what to check instead.
func TestStepsDeclareTheirTurns(t *testing.T) {
	for _, r := range allSteps(t) {
		for i, s := range r.Next {
			where := r.ID + " step " + string(rune('1'+i))
			named := map[string]bool{}
			for _, m := range knobRef.FindAllStringSubmatch(s.Do, -1) {
				named[m[1]] = true
				if s.Turns[m[1]] == "" {
					t.Errorf("%s names {%s} but does not say under turns which way it turns it: %q", where, m[1], s.Do)
				}
			}
			for k, turn := range s.Turns {
				if !named[k] {
					t.Errorf("%s turns %s without naming {%s}: %q", where, k, k, s.Do)
				}
				if _, ok := KnobStates[k]; ok && (turn == "enable" || turn == "disable") && s.IfAlready == "" {
					t.Errorf("%s turns %s %s, which the evidence can show already done, with no if_already", where, k, turn)
				}
			}
		}
	}
	for k := range evidence.DefaultKnobs {
		if len(KnobTurns[k]) == 0 {
			t.Errorf("knob %s has no turns in KnobTurns", k)
		}
	}
	for k, st := range KnobStates {
		if f, ok := evidence.Lookup(st.Field); !ok || f.Unit != "bool" {
			t.Errorf("knob %s: its state %s is not a bool evidence field", k, st.Field)
		}
	}
}

// A step's turns, if_already and only_if are checked at load, with the
// rule's file, line and the step's number.
func TestStepLint(t *testing.T) {
	head := "id: team/s\ntitle: t\nlayer: stage\nbottleneck: queueing\nseverity: warning\nwhen: stage.ttft.p99 > 1\nsays: x\nnext:\n"
	for _, c := range []struct{ next, want string }{
		{"  - {do: x, cost: config, turns: {max_batch: raise}}\n", "next step 1: turns knob max_batch, which is not one of"},
		{"  - {do: x, cost: config, turns: {max_num_seqs: enable}}\n", `turns max_num_seqs "enable": want one of raise, lower, set`},
		{"  - {do: x, cost: config, turns: {kv_cache_fp8: raise}}\n", `turns kv_cache_fp8 "raise": want one of enable, disable`},
		{"  - {do: x, cost: config, if_already: y}\n", "if_already needs turns"},
		{"  - {do: x, cost: config, turns: {max_num_seqs: raise}, if_already: y}\n", "if_already can never be said: no evidence shows whether max_num_seqs"},
		{"  - {do: x, cost: config, only_if: cond.nope == 1}\n", "next step 1: only_if:"},
		{"  - {do: x, cost: config, only_if: verdict.critical > 0}\n", "only_if reads evidence only"},
		{"  - {do: x, cost: config, only_if: 1 > 0}\n", "only_if reads no evidence"},
		{"  - {do: x, cost: config, turns: {max_num_seqs: raise}}\n  - {do: y, cost: config, turns: {max_num_seqs: lower}}\n",
			"next steps 1 and 2 turn max_num_seqs opposite ways"},
	} {
		_, err := Parse("team/s.yaml", []byte(head+c.next))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "team/s.yaml:8: rule team/s: ") {
			t.Errorf("%q: %v, want %q", c.next, err, c.want)
		}
	}
}

// Steps for a target: a step whose only_if the evidence shows false is
// left out, one it cannot judge stays; a switch the evidence shows on
// turns its step into what to check, naming the evidence.
func TestStepsForTheEvidence(t *testing.T) {
	r, err := Parse("team/s.yaml", []byte("id: team/s\ntitle: t\nlayer: stage\nbottleneck: queueing\nseverity: warning\nwhen: stage.ttft.p99 > 1\nsays: x\nnext:\n"+
		"  - {do: 'for MoE models, expert parallelism', cost: architecture, only_if: cond.moe == 1}\n"+
		"  - do: turn on prefix caching ({enable_prefix_caching})\n    cost: config\n    whatif: prefix_caching\n    turns: {enable_prefix_caching: enable}\n    if_already: check its hit rate\n"+
		"  - do: use {kv_cache_fp8}\n    cost: config\n    turns: {kv_cache_fp8: enable}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := evidence.New(evidence.Target{})
	if got := r.Steps(e); len(got) != 3 || got[1].Do != "turn on prefix caching (vLLM enable-prefix-caching / SGLang without disable-radix-cache)" || got[1].Already != nil {
		t.Fatalf("unknown evidence: %+v", got)
	}
	e.Values.Cond.MoE, e.Values.Cond.PrefixCaching, e.Values.Cond.KVCacheFP8 = 0, 1, 1
	got := r.Steps(e)
	if len(got) != 2 {
		t.Fatalf("a dense model kept the MoE step: %+v", got)
	}
	if got[0].Do != "prefix caching is already on (cond.prefix_caching = 1): check its hit rate" || got[0].Whatif != "" || got[0].Turns != nil ||
		got[0].Already["enable_prefix_caching"] != "cond.prefix_caching = 1" {
		t.Errorf("prefix caching on: %+v", got[0])
	}
	if got[1].Do != "the KV cache is already fp8 (cond.kv_cache_fp8 = 1): check how it serves this workload before changing anything else" {
		t.Errorf("fp8 on, no if_already: %+v", got[1])
	}
	e.Values.Cond.MoE, e.Values.Cond.PrefixCaching = 1, 0
	if got := r.Steps(e); len(got) != 3 || got[0].Do != "for MoE models, expert parallelism" || got[1].Already != nil {
		t.Errorf("an MoE model, prefix caching off: %+v", got)
	}
}
