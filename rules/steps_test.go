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
