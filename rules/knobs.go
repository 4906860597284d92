package rules

import (
	"fmt"
	"regexp"

	"github.com/llmdoctor/llmdoctor/evidence"
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
