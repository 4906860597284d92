package serve

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if a goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
