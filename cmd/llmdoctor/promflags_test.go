package main

import (
	"strings"
	"testing"
	"time"
)

// --end takes now, now minus a duration, RFC 3339 and Unix seconds, and
// refuses in one line what would be a silently wrong window: NaN, Inf, a
// negative or future offset, seconds before 1970.
func TestParseEnd(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     now,
		"now":                  now,
		"now-2h":               now.Add(-2 * time.Hour),
		"now-90m":              now.Add(-90 * time.Minute),
		"now-1d":               now.Add(-24 * time.Hour),
		"2026-11-30T12:00:00Z": time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		"1764504000":           time.Unix(1764504000, 0),
	} {
		got, err := parseEnd(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"NaN", "Inf", "-1", "0", "now+1h", "now-", "now-0s", "now--2h", "now-xd", "yesterday", "1e300", "9.5e9"} {
		if _, err := parseEnd(in, now); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: accepted or a multi-line error (%v)", in, err)
		}
	}
}
