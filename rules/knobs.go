package rules

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/units"
)

// knobRef is how a next step names an engine setting by its meaning:
// {max_num_seqs}. The engine behind the target supplies its flag.
var knobRef = regexp.MustCompile(`\{([a-z][a-z0-9_]*)\}`)

// checkKnobs refuses a step that names a knob no engine vocabulary knows.
func checkKnobs(do string) error {
	for _, m := range knobRef.FindAllStringSubmatch(do, -1) {
		if _, ok := evidence.DefaultKnobs[m[1]]; !ok {
			return fmt.Errorf("next step names knob {%s}, which is not one of the known knobs", m[1])
		}
	}
	return nil
}

// Turns are the ways a next step may turn a knob, each with its opposite.
var Turns = map[string]string{"raise": "lower", "lower": "raise", "enable": "disable", "disable": "enable", "set": ""}

// KnobTurns are the turns that fit each knob a step may name (the keys of
// evidence.DefaultKnobs): a number is raised, lowered or set; a switch
// enabled or disabled.
var KnobTurns = map[string][]string{
	"max_num_seqs":           numberTurns,
	"max_num_batched_tokens": numberTurns,
	"gpu_memory_utilization": numberTurns,
	"max_model_len":          numberTurns,
	"api_server_count":       numberTurns,
	"long_prefill_limits":    numberTurns,
	"kv_cache_fp8":           switchTurns,
	"enable_prefix_caching":  switchTurns,
	"mixed_chunked_prefill":  switchTurns,
	"speculative_decoding":   switchTurns,
	"num_speculative_tokens": numberTurns,
	"max_loras":              numberTurns,
}

var (
	numberTurns = []string{"raise", "lower", "set"}
	switchTurns = []string{"enable", "disable"}
)

// KnobState is the evidence that shows a switch's setting.
type KnobState struct {
	// Field is 1 when the switch is on, 0 when off.
	Field string
	// On and Off say what the evidence shows, as the start of a sentence.
	On, Off string
}

// KnobStates declare, for the switches whose setting the evidence shows,
// the field that shows it. A step that would turn a switch the way the
// evidence shows it already is becomes what to check instead.
var KnobStates = map[string]KnobState{
	"enable_prefix_caching": {Field: "cond.prefix_caching", On: "prefix caching is already on", Off: "prefix caching is already off"},
	"kv_cache_fp8":          {Field: "cond.kv_cache_fp8", On: "the KV cache is already fp8", Off: "the KV cache is already in the model's own type"},
	"speculative_decoding":  {Field: "cond.speculative", On: "speculative decoding is already on", Off: "speculative decoding is already off"},
}

// Opposed reports whether two turns of one knob go opposite ways.
func Opposed(a, b string) bool { return a != "" && b != "" && Turns[a] == b }

// checkStep validates a step's turns, its if_already and its only_if,
// compiling only_if; nil when the step has none.
func checkStep(s Step) (*stepCond, error) {
	if err := checkKnobs(s.Do); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(s.Turns)) {
		fits, ok := KnobTurns[k]
		if !ok {
			return nil, fmt.Errorf("turns knob %s, which is not one of %s", k, strings.Join(slices.Sorted(maps.Keys(KnobTurns)), ", "))
		}
		if !slices.Contains(fits, s.Turns[k]) {
			return nil, fmt.Errorf("turns %s %q: want one of %s", k, s.Turns[k], strings.Join(fits, ", "))
		}
	}
	if s.IfAlready != "" {
		if len(s.Turns) == 0 {
			return nil, errors.New("if_already needs turns: it is said where the evidence shows them already made")
		}
		for _, k := range slices.Sorted(maps.Keys(s.Turns)) {
			if _, ok := KnobStates[k]; !ok || !slices.Contains(switchTurns, s.Turns[k]) {
				return nil, fmt.Errorf("if_already can never be said: no evidence shows whether %s is already turned %s (switches the evidence shows: %s)",
					k, s.Turns[k], strings.Join(slices.Sorted(maps.Keys(KnobStates)), ", "))
			}
		}
		if err := checkKnobs(s.IfAlready); err != nil {
			return nil, fmt.Errorf("if_already: %w", err)
		}
	}
	if s.OnlyIf == "" {
		return nil, nil
	}
	// A scratch rule: only_if reads evidence, never params or the verdict.
	scratch := &Rule{}
	x, err := scratch.compile(s.OnlyIf, expr.AsBool())
	if err != nil {
		return nil, fmt.Errorf("only_if: %s", oneLine(err))
	}
	reads := map[string]bool{}
	if err := scratch.walk(x.prog.Node(), reads); err != nil {
		return nil, fmt.Errorf("only_if: %w", err)
	}
	if scratch.usesVerdict {
		return nil, errors.New("only_if reads evidence only, not the verdict")
	}
	if len(reads) == 0 {
		return nil, errors.New("only_if reads no evidence")
	}
	return &stepCond{x: x, reads: fieldsOf(reads)}, nil
}

// checkSteps refuses a rule whose own steps turn one knob opposite ways.
func checkSteps(steps []Step) error {
	for i, a := range steps {
		for j := i + 1; j < len(steps); j++ {
			for k, t := range a.Turns {
				if Opposed(t, steps[j].Turns[k]) {
					return fmt.Errorf("next steps %d and %d turn %s opposite ways (%s, %s)", i+1, j+1, k, t, steps[j].Turns[k])
				}
			}
		}
	}
	return nil
}

// stepCond is a step's only_if compiled, with the fields it reads.
type stepCond struct {
	x     *expression
	reads []evidence.Field
}

// holds judges the condition on e: known is false when a field it reads
// is missing or withheld.
func (c *stepCond) holds(e *evidence.Evidence) (holds, known bool) {
	for _, f := range c.reads {
		if !evidence.Present(e.Values.Get(f)) || e.Inconsistent(f.Path) != "" {
			return false, false
		}
	}
	if c.x.test != nil {
		return c.x.test(&frame{v: &e.Values}), true
	}
	out, err := expr.Run(c.x.prog, newEnv(&e.Values))
	b, ok := out.(bool)
	return b && ok, err == nil && ok
}

// Steps are the rule's next steps for a target: those whose only_if the
// evidence shows false are left out; one whose every turn the evidence
// shows already made becomes what to check instead (Already); each {knob}
// becomes the flag of the target's engine.
func (r *Rule) Steps(e *evidence.Evidence) []Step {
	out := make([]Step, 0, len(r.Next))
	for i, s := range r.Next {
		if i < len(r.stepIf) && r.stepIf[i] != nil {
			c := r.stepIf[i]
			if holds, known := c.holds(e); known && !holds {
				continue
			}
		}
		if made := alreadyMade(s.Turns, e); made != nil {
			s = alreadyStep(s, made)
		}
		out = append(out, s)
	}
	return StepsFor(out, e)
}

// StepReads lists the evidence paths the rule's next steps read: those
// their only_if reads, and those that show a switch they turn already on
// or off.
func (r *Rule) StepReads() []string {
	seen := map[string]bool{}
	for i, s := range r.Next {
		if i < len(r.stepIf) && r.stepIf[i] != nil {
			for _, f := range r.stepIf[i].reads {
				seen[f.Path] = true
			}
		}
		for k := range s.Turns {
			if st, ok := KnobStates[k]; ok {
				seen[st.Field] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// alreadyMade names each turn of a step with the evidence that shows it
// made, when the evidence shows every one; nil otherwise.
func alreadyMade(turns map[string]string, e *evidence.Evidence) map[string]string {
	if len(turns) == 0 {
		return nil
	}
	made := map[string]string{}
	for k, t := range turns {
		st, ok := KnobStates[k]
		if !ok {
			return nil
		}
		f, _ := evidence.Lookup(st.Field)
		x := e.Values.Get(f)
		if !evidence.Present(x) || e.Inconsistent(st.Field) != "" {
			return nil
		}
		if !(t == "enable" && x == 1 || t == "disable" && x == 0) {
			return nil
		}
		made[k] = st.Field + " = " + units.Number(x)
	}
	return made
}

// alreadyStep is a step whose change the evidence shows made: what the
// evidence shows, then what to check.
func alreadyStep(s Step, made map[string]string) Step {
	var said []string
	for _, k := range slices.Sorted(maps.Keys(made)) {
		st := KnobStates[k]
		w := st.On
		if s.Turns[k] == "disable" {
			w = st.Off
		}
		said = append(said, w+" ("+made[k]+")")
	}
	check := s.IfAlready
	if check == "" {
		check = "check how it serves this workload before changing anything else"
	}
	return Step{Do: strings.Join(said, " and ") + ": " + check, Cost: s.Cost, Already: made}
}

// StepsFor renders steps for a target: each {knob} becomes the flag of the
// target's engine.
func StepsFor(steps []Step, e *evidence.Evidence) []Step {
	out := make([]Step, len(steps))
	for i, s := range steps {
		s.Do = knobRef.ReplaceAllStringFunc(s.Do, func(m string) string { return e.Knob(m[1 : len(m)-1]) })
		out[i] = s
	}
	return out
}

// KnobWords renders a step for documentation, naming each knob in words.
func KnobWords(do string) string {
	return knobRef.ReplaceAllStringFunc(do, func(m string) string { return evidence.DefaultKnobs[m[1:len(m)-1]] })
}
