package diagnosis

import (
	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
)

// Validate checks what can be checked before anything is read: one metrics
// source at most, a GPU exporter or scrape header only with an engine to
// scrape, a schedule and a Prometheus window that can give a window. Its
// errors are *SourceError.
func (s Sources) Validate() error {
	fail := func(p Problem) error { return &SourceError{Problem: p} }
	if _, ok := engine.Lookup(s.Engine); s.Engine != "" && !ok {
		return fail(UnknownEngine)
	}
	sc := s.Scrape
	engines := sc != nil && len(sc.Engines) > 0
	if sc != nil && len(sc.Header) > 0 && !engines {
		return fail(HeaderWithoutEngine)
	}
	given := 0
	for _, ok := range []bool{s.Prom != nil, engines, len(s.Snapshots) > 0, s.Log != nil} {
		if ok {
			given++
		}
	}
	switch {
	case given == 0 && len(s.Bench)+len(s.Requests) == 0:
		return fail(NothingToRead)
	case given > 1:
		return fail(SeveralMetricsSources)
	case sc != nil && len(sc.GPUExporters) > 0 && !engines:
		return fail(GPUWithoutEngine)
	case s.SnapshotInterval < 0:
		return fail(BadSnapshotInterval)
	}
	if engines {
		switch {
		case sc.Interval <= 0 || sc.Duration < 0 || sc.Scrapes < 0:
			return fail(BadSchedule)
		case sc.Client == nil && sc.Timeout <= 0:
			return fail(BadScrapeTimeout)
		case sc.Scrapes == 0 && sc.Duration > 0 && sc.Duration < sc.Interval:
			// The second scrape comes one interval after the first.
			return fail(DurationUnderInterval)
		}
	}
	if p := s.Prom; p != nil {
		o, c := p.Options, p.Connection
		switch {
		case o.Window <= 0:
			return fail(BadPromWindow)
		case o.Step < 0:
			return fail(BadPromStep)
		case o.Parallel < 1:
			return fail(BadPromParallel)
		case c.Timeout <= 0:
			return fail(BadPromTimeout)
		case c.CertFile != "" && c.KeyFile == "":
			return fail(CertWithoutKey)
		case c.KeyFile != "" && c.CertFile == "":
			return fail(KeyWithoutCert)
		// A window shorter than one scrape interval holds at most one
		// sample of a series: increase() over it is empty or a guess, and
		// a range query repeats that one sample at every step as if it
		// were many.
		case o.Window < prom.MinStep:
			return fail(PromWindowUnderScrape)
		case o.Window < o.Step:
			return fail(PromWindowUnderStep)
		}
	}
	return nil
}
