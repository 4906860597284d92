package scrape

import (
	"errors"
	"fmt"
)

// MalformedError says data is not an exposition llmdoctor reads: empty, an
// HTML page, or Prometheus text or OpenMetrics that does not parse. Its text
// is the problem; Err is the parser's own error, when there is one.
type MalformedError struct {
	Problem string
	Err     error
}

func (e *MalformedError) Error() string { return e.Problem }

func (e *MalformedError) Unwrap() error { return e.Err }

// FetchKind says why a server gave no exposition.
type FetchKind int

// Kinds of fetch failure.
const (
	// Unreachable: no answer (refused, timed out, a bad address).
	Unreachable FetchKind = iota + 1
	// BrokenOff: the answer stopped before its end.
	BrokenOff
	// BadStatus: an answer other than 200 OK.
	BadStatus
	// TooLarge: a body over the size an exposition can have.
	TooLarge
	// NotMetrics: a body that is not an exposition (Err is a
	// *MalformedError).
	NotMetrics
)

// FetchError says a live scrape of a server failed: the source is down or
// is not a /metrics endpoint. URL is the server with credentials masked;
// Err never holds a secret.
type FetchError struct {
	Kind FetchKind
	URL  string
	// Status is the answer's status line and Code its code (BadStatus).
	Status string
	Code   int
	// Reason is the transport's failure in a few words (Unreachable,
	// BrokenOff).
	Reason string
	Err    error
}

func (e *FetchError) Error() string {
	switch e.Kind {
	case Unreachable:
		return fmt.Sprintf("cannot reach %s: %s", e.URL, e.Reason)
	case BrokenOff:
		return fmt.Sprintf("reading %s: %s", e.URL, e.Reason)
	case BadStatus:
		return fmt.Sprintf("%s answered %s", e.URL, e.Status)
	case TooLarge:
		return fmt.Sprintf("%s: response larger than %d MiB", e.URL, maxBody>>20)
	}
	if e.Err == nil {
		return e.URL + ": failed"
	}
	return e.URL + ": " + e.Err.Error()
}

func (e *FetchError) Unwrap() error { return e.Err }

// malformed is a MalformedError for err, unless it is one already.
func malformed(err error) error {
	if err == nil {
		return nil
	}
	var me *MalformedError
	if errors.As(err, &me) {
		return err
	}
	return &MalformedError{Problem: err.Error(), Err: err}
}
