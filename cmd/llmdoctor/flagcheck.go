package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/prom"
)

// dur prints a duration as it is written on the command line: 10m, not 10m0s.
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// check refuses --prom flag values that cannot give a window, before any
// query is sent.
func (p *promFlags) check() error {
	switch {
	case p.window <= 0:
		return usageErr("--window %s: want a positive duration such as 15m", dur(p.window))
	case p.step < 0:
		return usageErr("--step %s: want a positive duration such as 30s, or leave it out (window/60, at least 15s)", dur(p.step))
	case p.parallel < 1:
		return usageErr("--prom-parallel %d: want at least 1 query in flight (default 8)", p.parallel)
	case p.timeout <= 0:
		return usageErr("--prom-timeout %s: want a positive duration such as 30s", dur(p.timeout))
	case p.cert != "" && p.key == "":
		return usageErr("--prom-cert needs --prom-key, the client certificate's private key (PEM)")
	case p.key != "" && p.cert == "":
		return usageErr("--prom-key needs --prom-cert, the client certificate (PEM)")
	}
	// A window shorter than one scrape interval holds at most one sample of
	// a series: increase() over it is empty or a guess, and a range query
	// repeats that one sample at every step as if it were many.
	if p.window < prom.MinStep {
		return usageErr("--window %s is shorter than one scrape interval (Prometheus usually scrapes every %s or more): give --window %s or more",
			dur(p.window), dur(prom.MinStep), dur(prom.MinStep))
	}
	if p.window < p.step {
		return usageErr("--window %s is shorter than --step %s: give a window of at least one step", dur(p.window), dur(p.step))
	}
	return nil
}

// explain words a Prometheus failure for the command line: what happened,
// then which flag to change.
func (p *promFlags) explain(err error) error {
	var pe *prom.Error
	if !errors.As(err, &pe) {
		return &exitError{2, err.Error()}
	}
	msg := pe.Error()
	switch pe.Kind {
	case prom.BadURL:
		msg = fmt.Sprintf("--prom %q is not a URL like http://prometheus:9090", pe.URL)
		if !strings.Contains(pe.URL, "://") {
			msg += ": add the scheme, --prom http://" + pe.URL
		}
	case prom.BadCA:
		msg = "--prom-ca: " + pe.Detail
	case prom.BadClientCert:
		msg = "--prom-cert/--prom-key: " + pe.Detail
	case prom.Timeout:
		msg += fmt.Sprintf(": raise --prom-timeout (now %s) or shorten --window", dur(p.timeout))
	case prom.Unauthorized:
		msg += ": check LLMDOCTOR_PROM_TOKEN, --prom-token-file, or --prom-user with LLMDOCTOR_PROM_PASSWORD"
	case prom.Forbidden:
		msg += ": check the token's permissions or --prom-header X-Scope-OrgID"
	case prom.BadQuery:
		if p.selector != "" {
			msg += fmt.Sprintf(" (check --selector %q)", p.selector)
		}
	case prom.TooExpensive:
		msg += ": shorten --window, raise --step or narrow --selector"
	case prom.ServerFailed:
		msg += "; try again"
	case prom.NoMetrics:
		msg += ": check --prom, --selector and --end"
	}
	return &exitError{2, msg}
}

// checkScrape refuses scrape and snapshot flag values that cannot give the
// window asked for.
func (o *diagnoseOpts) checkScrape() error {
	switch {
	case o.timeout <= 0:
		return usageErr("--timeout %s: want a positive duration such as 10s, the time one scrape may take", dur(o.timeout))
	case o.snapshotInterval < 0:
		return usageErr("--snapshot-interval %s: want a positive duration such as 15m", dur(o.snapshotInterval))
	case len(o.vllmURLs) > 0 && o.scrapes == 0 && o.duration > 0 && o.duration < o.interval:
		// The second scrape comes one interval after the first: the window
		// would be longer than asked.
		return usageErr("--duration %s is shorter than --interval %s: give --duration %s or more (0 for a single scrape)",
			dur(o.duration), dur(o.interval), dur(o.interval))
	}
	return nil
}
