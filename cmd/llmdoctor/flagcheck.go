package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/logs"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/collectors/requests"
	"github.com/llmdoctor/llmdoctor/collectors/scrape"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/internal/units"
)

// checkScrapeFlags refuses scrape and snapshot flag values that mean
// nothing whichever source is read. (With --target, Validate has refused
// them already in the same words.)
func (o *diagnoseOpts) checkScrapeFlags() error {
	switch {
	case o.interval <= 0 || o.duration < 0 || o.scrapes < 0:
		return o.sourceProblem(diagnosis.BadSchedule)
	case o.timeout <= 0:
		return o.sourceProblem(diagnosis.BadScrapeTimeout)
	case o.snapshotInterval < 0:
		return o.sourceProblem(diagnosis.BadSnapshotInterval)
	}
	return nil
}

// explain words an error of the pipeline for the command line: which flag
// to change, with every credential the flags carry masked. All are exit 2.
func (o *diagnoseOpts) explain(err error) error {
	var (
		se *diagnosis.SourceError
		re *diagnosis.ReadError
		ne *diagnosis.NoTargetError
		ee *exitError
	)
	switch {
	case errors.As(err, &ee):
		return o.mask(err)
	case errors.As(err, &se):
		return o.sourceProblem(se.Problem)
	case errors.As(err, &ne):
		return o.mask(nothingDiagnosed(ne))
	case errors.As(err, &re):
		return o.mask(o.readFailure(re))
	}
	return o.mask(&exitError{2, err.Error()})
}

// mask hides the flags' credentials in an error's message.
func (o *diagnoseOpts) mask(err error) error {
	sec := o.secrets()
	var ee *exitError
	if errors.As(err, &ee) {
		return &exitError{ee.code, sec.String(ee.msg)}
	}
	return errors.New(sec.String(err.Error()))
}

// sourceProblem words a problem of the sources as the flags that set them.
func (o *diagnoseOpts) sourceProblem(p diagnosis.Problem) error {
	pf := &o.prom
	switch p {
	case diagnosis.NothingToRead:
		return usageErr("nothing to read: give --prom URL, --target URL, --snapshot FILE, --log FILE, --bench FILE or --requests FILE (try --help)")
	case diagnosis.SeveralMetricsSources:
		return usageErr("give one kind of metrics source: --prom, --target, --snapshot or --log")
	case diagnosis.HeaderWithoutEngine:
		return usageErr("--target-header applies to --target and --dcgm scrapes")
	case diagnosis.GPUWithoutEngine:
		return usageErr("--dcgm is scraped alongside --target; with snapshots, pass the exporter's saved output as another --snapshot")
	case diagnosis.BadSchedule:
		return usageErr("--interval must be positive, --duration and --scrapes not negative")
	case diagnosis.BadScrapeTimeout:
		return usageErr("--timeout %s: want a positive duration such as 10s, the time one scrape may take", units.ShortDuration(o.timeout))
	case diagnosis.DurationUnderInterval:
		// The second scrape comes one interval after the first: the window
		// would be longer than asked.
		return usageErr("--duration %s is shorter than --interval %s: give --duration %s or more (0 for a single scrape)",
			units.ShortDuration(o.duration), units.ShortDuration(o.interval), units.ShortDuration(o.interval))
	case diagnosis.BadSnapshotInterval:
		return usageErr("--snapshot-interval %s: want a positive duration such as 15m", units.ShortDuration(o.snapshotInterval))
	case diagnosis.BadPromWindow:
		return usageErr("--window %s: want a positive duration such as 15m", units.ShortDuration(pf.window))
	case diagnosis.BadPromStep:
		return usageErr("--step %s: want a positive duration such as 30s, or leave it out (window/60, at least 15s)", units.ShortDuration(pf.step))
	case diagnosis.BadPromParallel:
		return usageErr("--prom-parallel %d: want at least 1 query in flight (default %d)", pf.parallel, prom.DefaultParallel)
	case diagnosis.BadPromTimeout:
		return usageErr("--prom-timeout %s: want a positive duration such as 30s", units.ShortDuration(pf.timeout))
	case diagnosis.CertWithoutKey:
		return usageErr("--prom-cert needs --prom-key, the client certificate's private key (PEM)")
	case diagnosis.KeyWithoutCert:
		return usageErr("--prom-key needs --prom-cert, the client certificate (PEM)")
	case diagnosis.PromWindowUnderScrape:
		return usageErr("--window %s is shorter than one scrape interval (Prometheus usually scrapes every %s or more): give --window %s or more",
			units.ShortDuration(pf.window), units.ShortDuration(prom.MinStep), units.ShortDuration(prom.MinStep))
	case diagnosis.PromWindowUnderStep:
		return usageErr("--window %s is shorter than --step %s: give a window of at least one step", units.ShortDuration(pf.window), units.ShortDuration(pf.step))
	case diagnosis.UnknownEngine:
		return usageErr("--engine %q: want auto, %s", o.engine, strings.Join(engine.Names(), " or "))
	}
	return usageErr("%w", &diagnosis.SourceError{Problem: p})
}

// readFailure words a source that could not be read: what happened, then
// which flag to change.
func (o *diagnoseOpts) readFailure(re *diagnosis.ReadError) error {
	var (
		fe    *requests.FormatError
		se    *scrape.SpacingError
		fetch *scrape.FetchError
		mixed *logs.MixedEnginesError
	)
	switch {
	case re.Kind == diagnosis.KindPrometheus:
		return o.prom.explain(re.Err)
	case re.Opening:
		return usageErr("--%s: %w", re.Kind, re.Err)
	case errors.As(re.Err, &fe) && fe.Reader != "" && fe.Reader != re.Kind:
		return usageErr("%w: use --%s", re.Err, fe.Reader)
	case errors.As(re.Err, &fe) && fe.Convert != "":
		return usageErr("%w, then give it to --requests", re.Err)
	case errors.As(re.Err, &se) && se.Readings > 0:
		return &exitError{2, re.Err.Error() + ": leave out --snapshot-interval"}
	case errors.As(re.Err, &se):
		return &exitError{2, re.Err.Error() + ": pass --snapshot-interval (e.g. 15m)"}
	case errors.As(re.Err, &mixed):
		return &exitError{2, fmt.Sprintf("%s: %d vLLM stats lines and %d SGLang scheduler lines in one log: two servers' logs? give each its own --log",
			mixed.From, mixed.VLLM, mixed.SGLang)}
	case errors.As(re.Err, &fetch) && fetch.Kind == scrape.BadStatus && (fetch.Code == http.StatusUnauthorized || fetch.Code == http.StatusForbidden):
		return &exitError{2, re.Err.Error() + ": pass its credentials with --target-header (e.g. 'Authorization: Bearer …')"}
	case errors.As(re.Err, &fetch) && fetch.Kind == scrape.BadStatus && fetch.Code == http.StatusNotFound:
		return &exitError{2, re.Err.Error() + ": check the --target URL (the server's address, or its /metrics URL)"}
	}
	return &exitError{2, re.Err.Error()}
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
		msg += fmt.Sprintf(": raise --prom-timeout (now %s) or shorten --window", units.ShortDuration(p.timeout))
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
