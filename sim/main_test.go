package sim

import (
	"testing"

	"go.uber.org/goleak"
)

// The API's driver and handlers end with the server's Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
