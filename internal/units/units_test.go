package units

import (
	"math"
	"testing"
)

// The formats every report shares: the unit follows the size, missing
// numbers say so, and nothing reads as a different quantity.
func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Duration(0.0123), "12ms"},
		{Duration(1.5), "1.50s"},
		{Duration(65), "1m05s"},
		{Duration(0), "0s"},
		{Duration(1e-9), "<1µs"},
		{Duration(0.0002), "200µs"},
		{Duration(0.0007), "700µs"},
		{Duration(3599), "59m59s"},
		{Duration(3600*5 + 61), "5h01m"},
		{Duration(36e6), "416d16h"},
		{Duration(2e9), "over 30 years"},
		{Duration(math.NaN()), "n/a"},
		{Number(1234), "1234"},
		{Tokens(12345), "12.3k"},
		{Percent(0.256), "26%"},
		{Percent(0.0042), "0.4%"},
		{Percent(0.0004), "<0.1%"},
		{Percent(0), "0%"},
		{BytesPerSecond(864e9), "864 GB/s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
