package requests

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// TestMain checks that no reader leaves a worker running. The quick tier
// meets the size bounds with small inputs (a 1 MiB line, a 16 MiB
// document); the heavy tier keeps the real ones (64 MiB, 1 GiB).
func TestMain(m *testing.M) {
	if !testkit.Heavy() {
		maxLine, maxBench = 1<<20, 16<<20
	}
	goleak.VerifyTestMain(m)
}

// scaled is quick in the quick tier and heavy in the heavy one: how many
// random documents a test reads.
func scaled(quick, heavy int) int {
	if testkit.Heavy() {
		return heavy
	}
	return quick
}
