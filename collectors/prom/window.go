package prom

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// The windows llmdoctor diagnoses, whichever front end asks (the CLI's
// --window, serve's API, the Alertmanager receiver, the slash command):
//
//   - MinWindow is one scrape interval as Prometheus usually scrapes
//     (MinStep): a shorter window holds one sample of each series, and a
//     rate needs two.
//   - MaxWindow is a week. Each query of a diagnosis reads every sample of
//     the window (rate over [window], gauges at window/60): at a 15 s
//     scrape a week is 40,320 samples a series, which a few hundred
//     histogram series keep well inside Prometheus's default
//     --query.max-samples (50 million) and its default retention (15 d);
//     a month is four times that, and fails on a busy server. A longer
//     question is a comparison of windows (llmdoctor compare --at).
const (
	MinWindow = MinStep
	MaxWindow = 7 * 24 * time.Hour
)

// WindowError is a window that ParseWindow refuses.
type WindowError struct {
	// Value is the window as given.
	Value string
	// Why says what is wrong, without the value: each front end names
	// the value its own way (--window 30d, window=30d, a slash command's
	// word).
	Why string
	// Bound is the bound the window is past (MinWindow or MaxWindow);
	// zero when the value is not a duration at all.
	Bound time.Duration
}

func (e *WindowError) Error() string { return fmt.Sprintf("window %q: %s", e.Value, e.Why) }

// WindowSyntax is how a window is written, for help texts.
const WindowSyntax = "a duration like 30m, 1h30m, 6h or 1d"

// ParseWindow reads a window as Go (1h30m, 90s) or Prometheus (1d, 1w,
// 1d12h) writes a duration, in any case, from MinWindow to MaxWindow.
func ParseWindow(v string) (time.Duration, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	d, err := time.ParseDuration(s)
	if err != nil {
		md, merr := model.ParseDuration(s)
		if merr != nil {
			return 0, &WindowError{Value: v, Why: "not " + WindowSyntax}
		}
		d = time.Duration(md)
	}
	if err := CheckWindow(d); err != nil {
		var we *WindowError
		if errors.As(err, &we) {
			we.Value = v
		}
		return 0, err
	}
	return d, nil
}

// CheckWindow says whether d is a window llmdoctor diagnoses: a
// *WindowError when it is not.
func CheckWindow(d time.Duration) error {
	switch {
	case d < MinWindow:
		return &WindowError{Value: FormatWindow(d), Bound: MinWindow, Why: fmt.Sprintf("shorter than %s, one scrape interval (a shorter window holds one sample)", FormatWindow(MinWindow))}
	case d > MaxWindow:
		return &WindowError{Value: FormatWindow(d), Bound: MaxWindow, Why: fmt.Sprintf("longer than %s, the longest window llmdoctor diagnoses", FormatWindow(MaxWindow))}
	}
	return nil
}

// FormatWindow writes a window as ParseWindow reads it and people write
// it: 30m, 1h30m, 1d, 7d; 90s as 1m30s.
func FormatWindow(d time.Duration) string {
	if d <= 0 || d%time.Millisecond != 0 {
		return d.String()
	}
	const day = 24 * time.Hour
	s := ""
	if d >= day {
		s, d = fmt.Sprintf("%dd", d/day), d%day
		if d == 0 {
			return s
		}
	}
	return s + model.Duration(d).String()
}
