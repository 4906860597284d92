package prom

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// One parser for every front end: Go's and Prometheus's durations, days
// included, within one bound; what it refuses says why.
func TestParseWindow(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"15m": 15 * time.Minute, "1h30m": 90 * time.Minute, "90s": 90 * time.Second, "1.5h": 90 * time.Minute,
		"1d": 24 * time.Hour, "1d12h": 36 * time.Hour, "7d": 7 * 24 * time.Hour, "1w": 7 * 24 * time.Hour,
		"15s": 15 * time.Second, " 6H ": 6 * time.Hour,
	} {
		got, err := ParseWindow(in)
		if err != nil || got != want {
			t.Errorf("ParseWindow(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"30d": "longer than 7d", "100000h": "longer than 7d", "7d1s": "longer than 7d", "2w": "longer than 7d",
		"10s": "shorter than 15s", "0s": "shorter than 15s", "-5m": "shorter than 15s",
		"": "not a duration", "abc": "not a duration", "5": "not a duration", "1d 2h": "not a duration",
	} {
		_, err := ParseWindow(in)
		var we *WindowError
		if !errors.As(err, &we) || we.Value != in || !strings.HasPrefix(we.Why, why) {
			t.Errorf("ParseWindow(%q): %v, want a *WindowError of %q: %s…", in, err, in, why)
		}
	}
}

func TestFormatWindow(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute: "30m", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s",
		24 * time.Hour: "1d", 36 * time.Hour: "1d12h", MaxWindow: "7d",
	} {
		if got := FormatWindow(d); got != want {
			t.Errorf("FormatWindow(%s) = %q, want %q", d, got, want)
		}
		if back, err := ParseWindow(want); err != nil || back != d {
			t.Errorf("ParseWindow(%q) = %s, %v: not what FormatWindow wrote", want, back, err)
		}
	}
}
