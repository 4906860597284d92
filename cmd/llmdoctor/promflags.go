package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/internal/units"
)

type promFlags struct {
	url, end, selector             string
	window, step, timeout          time.Duration
	tokenFile, user, ca, cert, key string
	insecure                       bool
	headers                        []string
	parallel                       int
	// at and printQueries are diagnose's and checklist's (addOneRun).
	at           string
	printQueries bool
	// in is the run's standard input, for --prom-token-file -; stderr is
	// where --print-queries writes.
	in     *input
	stderr io.Writer
}

func (p *promFlags) add(f *pflag.FlagSet) {
	f.StringVar(&p.url, "prom", "", "Prometheus-compatible API to query (Prometheus, Thanos, Mimir, VictoriaMetrics)")
	p.window = 15 * time.Minute
	f.Var(windowFlag{&p.window}, "window", "with --prom: how much history to diagnose: "+prom.WindowSyntax+", from "+prom.FormatWindow(prom.MinWindow)+" to "+prom.FormatWindow(prom.MaxWindow))
	f.StringVar(&p.end, "end", "", "with --prom: end of the window: now, now-2h, RFC 3339 or Unix seconds")
	f.DurationVar(&p.step, "step", 0, "with --prom: resolution of gauges over the window (default window/60, at least 15s)")
	f.StringVar(&p.selector, "selector", "", `with --prom: label matchers that narrow every query, e.g. namespace="prod"; series without their labels (DCGM's) are joined through instance, pod, node or host`)
	f.StringVar(&p.tokenFile, "prom-token-file", "", "file holding a bearer token (- for stdin; or set LLMDOCTOR_PROM_TOKEN)")
	f.StringVar(&p.user, "prom-user", "", "basic-auth user; the password comes from LLMDOCTOR_PROM_PASSWORD")
	f.StringVar(&p.ca, "prom-ca", "", "CA certificate (PEM) to verify the server")
	f.StringVar(&p.cert, "prom-cert", "", "client certificate (PEM)")
	f.StringVar(&p.key, "prom-key", "", "client key (PEM)")
	f.BoolVar(&p.insecure, "prom-insecure", false, "skip TLS verification")
	f.StringArrayVar(&p.headers, "prom-header", nil, `extra request header "Name: value" (e.g. "X-Scope-OrgID: team-a"); repeatable`)
	f.DurationVar(&p.timeout, "prom-timeout", 30*time.Second, "timeout of one query")
	f.IntVar(&p.parallel, "prom-parallel", prom.DefaultParallel, "queries in flight at once (the histograms are spread over as many)")
}

// windowFlag is --window: a window as prom.ParseWindow reads it (days
// included), within its bounds, refused as the flag is parsed.
type windowFlag struct{ d *time.Duration }

func (w windowFlag) String() string {
	if w.d == nil {
		return ""
	}
	return prom.FormatWindow(*w.d)
}

func (w windowFlag) Type() string { return "duration" }

func (w windowFlag) Set(s string) error {
	d, err := prom.ParseWindow(s)
	var we *prom.WindowError
	if errors.As(err, &we) {
		// The flag's error names the value already.
		return errors.New(we.Why)
	}
	if err != nil {
		return err
	}
	*w.d = d
	return nil
}

// addOneRun declares the flags of a command that reads one window once.
func (p *promFlags) addOneRun(f *pflag.FlagSet) {
	f.StringVar(&p.at, "at", "", "with --prom, instead of --end: a moment to diagnose around; the window is centred on it (now-2h, RFC 3339 or Unix seconds), ending no later than now")
	f.BoolVar(&p.printQueries, "print-queries", false, "with --prom: print every request to stderr as it is answered, with its PromQL, time, result count and size")
}

// parseEnd reads now, now minus a duration (now-2h, now-90m, now-1d),
// RFC 3339 or Unix seconds; "" is now.
func parseEnd(s string, now time.Time) (time.Time, error) {
	return parseTime("--end", s, now)
}

// parseTime is parseEnd for the flag named.
func parseTime(flag, s string, now time.Time) (time.Time, error) {
	bad := fmt.Errorf("%s %q: want now, now-2h, RFC 3339 (2026-11-30T12:00:00Z) or Unix seconds", flag, s)
	if s == "" || s == "now" {
		return now, nil
	}
	if rest, ok := strings.CutPrefix(s, "now-"); ok {
		d, err := time.ParseDuration(rest)
		if days, ok := strings.CutSuffix(rest, "d"); ok && err != nil {
			n, e := strconv.Atoi(days)
			d, err = time.Duration(n)*24*time.Hour, e
		}
		if err != nil || d <= 0 {
			return time.Time{}, bad
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	// Unix seconds after 1970, within what nanoseconds in an int64 hold
	// (ParseFloat also takes NaN and Inf).
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < 9e9 {
		return time.Unix(0, int64(f*1e9)), nil
	}
	return time.Time{}, bad
}

func (p *promFlags) connection() (prom.Connection, error) {
	c := prom.Connection{URL: p.url, BasicUser: p.user, CAFile: p.ca, CertFile: p.cert, KeyFile: p.key,
		Insecure: p.insecure, Timeout: p.timeout, Headers: map[string]string{}}
	c.BearerToken = strings.TrimSpace(os.Getenv("LLMDOCTOR_PROM_TOKEN"))
	if p.tokenFile != "" {
		b, err := p.in.read(p.tokenFile)
		if err != nil {
			return c, fmt.Errorf("--prom-token-file: %w", err)
		}
		c.BearerToken = strings.TrimSpace(string(b))
	}
	if p.user != "" {
		c.BasicPassword = os.Getenv("LLMDOCTOR_PROM_PASSWORD")
	}
	for _, h := range p.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return c, fmt.Errorf("--prom-header %q: want \"Name: value\"", h)
		}
		c.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return c, nil
}

// source is the Prometheus source the flags describe. The window's own
// checks are diagnosis.Sources.Validate's; here only what cannot be parsed.
func (p *promFlags) source() (*diagnosis.PromSource, error) {
	now := time.Now()
	end, err := parseEnd(p.end, now)
	if err != nil {
		return nil, usageErr("%w", err)
	}
	if p.at != "" {
		if p.end != "" {
			return nil, usageErr("--at and --end both place the window: give one")
		}
		at, err := parseTime("--at", p.at, now)
		if err != nil {
			return nil, usageErr("%w", err)
		}
		if at.After(now) {
			return nil, usageErr("--at %s is in the future: nothing is recorded there yet", p.at)
		}
		// Nothing is recorded after now: a window reaching past it ends there.
		end = at.Add(p.window / 2)
		if end.After(now) {
			end = now
		}
	}
	conn, err := p.connection()
	if err != nil {
		return nil, usageErr("%w", err)
	}
	return &diagnosis.PromSource{Connection: conn, Options: prom.Options{Window: p.window, End: end, Step: p.step,
		Selector: p.selector, Parallel: p.parallel}}, nil
}

// size is a byte count as 812 B, 41.3 kB or 27.1 MB.
func size(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1e6:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// queryPrinter writes each request as it is answered: a heading line, then
// the PromQL indented, ready to paste into Prometheus.
func queryPrinter(w io.Writer) func(prom.Query) {
	var mu sync.Mutex
	n := 0
	return func(q prom.Query) {
		mu.Lock()
		defer mu.Unlock()
		n++
		head := fmt.Sprintf("query %d · %s · %s", n, q.Endpoint, units.Duration(q.Took.Seconds()))
		if q.Err != nil {
			head += " · failed: " + q.Err.Error()
		} else {
			head += fmt.Sprintf(" · %d series", q.Series)
			if q.Bytes > 0 {
				head += " · " + size(q.Bytes)
			}
		}
		when := "time " + q.End.UTC().Format(time.RFC3339)
		if !q.Start.IsZero() {
			when = "start " + q.Start.UTC().Format(time.RFC3339) + "  end " + q.End.UTC().Format(time.RFC3339)
		}
		if q.Step > 0 {
			when += "  step " + units.ShortDuration(q.Step)
		}
		note(w, "%s\n  %s\n  %s\n", head, when, strings.ReplaceAll(q.Expr, "\n", "\n  "))
	}
}
