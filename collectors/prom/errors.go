package prom

import (
	"fmt"
	"github.com/llmdoctor/llmdoctor/collectors/engine"

	"time"
)

// Kind says what went wrong, so that a front end can say what to do about
// it in its own terms (flag names, config keys).
type Kind int

// Kinds of failure.
const (
	// Other is a failure with no better name.
	Other Kind = iota
	// BadURL: Connection.URL is not an absolute http or https URL.
	BadURL
	// BadCA: Connection.CAFile cannot be read or holds no PEM certificate.
	BadCA
	// BadClientCert: Connection.CertFile and KeyFile do not load as a pair.
	BadClientCert
	// Unreachable: no connection to the server.
	Unreachable
	// Timeout: a query took longer than Connection.Timeout.
	Timeout
	// Unauthorized: the server refused the credentials (401).
	Unauthorized
	// Forbidden: the credentials may not run the query (403).
	Forbidden
	// BadQuery: the server could not parse a query (usually the selector).
	BadQuery
	// TooExpensive: the server refused a query as too large.
	TooExpensive
	// ServerFailed: the server or a proxy in front of it failed (5xx).
	ServerFailed
	// NoMetrics: no serving engine's metric matched in the window.
	NoMetrics
)

// Error is every error the collector returns. Its text names the server
// (without secrets) and what happened; Kind says which failure it is.
type Error struct {
	Kind Kind
	// URL is the server, redacted.
	URL string
	// Detail is the server's or the transport's own words, when there are any.
	Detail string
	// Query is the query that failed, shortened.
	Query string
	// Selector, Start and End describe the window a NoMetrics error searched.
	Selector   string
	Start, End time.Time
	// Err is the underlying error; never one holding a secret.
	Err error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	switch e.Kind {
	case BadURL:
		return fmt.Sprintf("%q is not a URL like http://prometheus:9090", e.URL)
	case BadCA:
		return "CA certificate: " + e.Detail
	case BadClientCert:
		return "client certificate: " + e.Detail
	case Unreachable:
		return fmt.Sprintf("cannot reach %s: %s", e.URL, e.Detail)
	case Timeout:
		return fmt.Sprintf("%s timed out (%s)", e.URL, e.Query)
	case Unauthorized:
		return fmt.Sprintf("%s refused the credentials (401)", e.URL)
	case Forbidden:
		return fmt.Sprintf("%s forbids this query (403)", e.URL)
	case BadQuery:
		return fmt.Sprintf("%s could not parse a query: %s", e.URL, e.Detail)
	case TooExpensive:
		return fmt.Sprintf("%s rejected a query as too expensive (%s)", e.URL, e.Detail)
	case ServerFailed:
		return fmt.Sprintf("%s failed (%s): the server or a proxy in front of it is in trouble", e.URL, e.Detail)
	case NoMetrics:
		where := ""
		if e.Selector != "" {
			where = " matching {" + e.Selector + "}"
		}
		return fmt.Sprintf("%s has no %s metrics%s between %s and %s", e.URL, engine.Titles(), where,
			e.Start.UTC().Format(time.RFC3339), e.End.UTC().Format(time.RFC3339))
	}
	if e.Query != "" {
		return fmt.Sprintf("%s: %s (%s)", e.URL, e.Detail, e.Query)
	}
	return fmt.Sprintf("%s: %s", e.URL, e.Detail)
}
