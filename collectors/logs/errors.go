package logs

import (
	"errors"
	"fmt"
)

// ErrNoStats is in the chain of every error saying a log holds no periodic
// stats line to read (stats logging off, another program's log, or lines
// in a form not known).
var ErrNoStats = errors.New("no stats lines in the log")

// noStats is a log without stats lines, in its own words.
type noStats struct{ msg string }

func (e *noStats) Error() string        { return e.msg }
func (e *noStats) Is(target error) bool { return target == ErrNoStats }

// MixedEnginesError says one log holds two engines' periodic lines: two
// servers' logs joined, which are read one log each.
type MixedEnginesError struct {
	From         string
	VLLM, SGLang int
}

func (e *MixedEnginesError) Error() string {
	return fmt.Sprintf("%s: %d vLLM stats lines and %d SGLang scheduler lines in one log: two servers' logs? read each on its own", e.From, e.VLLM, e.SGLang)
}
