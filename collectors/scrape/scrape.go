package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/internal/redact"
	"github.com/llmdoctor/llmdoctor/internal/useragent"
)

// maxBody bounds one scrape; vLLM's /metrics is well under a megabyte.
const maxBody = 64 << 20

// Scraper reads /metrics of one or more servers every Interval for Duration.
type Scraper struct {
	URLs     []string
	Interval time.Duration
	Duration time.Duration
	Client   *http.Client
	// Progress, when set, gets a line per tick (stderr on a terminal).
	Progress io.Writer
	// Scrapes, when positive, stops after that many scrapes following the
	// first instead of after Duration.
	Scrapes int
	// Sequential scrapes the URLs one after another, in order, at each tick.
	Sequential bool
	// Until, when closed, ends the scrape after one last scrape at once: a
	// caller that knows when its window ends (a probe's step) reads it to
	// the end instead of to the last tick.
	Until <-chan struct{}
	// Dead, after Run, holds why each URL that failed its first scrape was
	// left out (index-aligned with URLs; nil where it answered).
	Dead []error
	now  func() time.Time
}

// Fetch reads one exposition over HTTP. Credentials in u's userinfo are
// sent as basic auth; errors name u with them masked.
func Fetch(ctx context.Context, c *http.Client, u string) (*Snapshot, error) {
	name := redact.String(u)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		// The request's error quotes the URL, credentials and all: only its
		// masked text is kept.
		return nil, &FetchError{Kind: Unreachable, URL: name, Reason: redact.String(netReason(err))}
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	req.Header.Set("User-Agent", useragent.String)
	resp, err := c.Do(req)
	if err != nil {
		return nil, &FetchError{Kind: Unreachable, URL: name, Reason: redact.String(netReason(err)), Err: transportCause(err)}
	}
	// Read-only: closing the body cannot lose what was read.
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, &FetchError{Kind: BadStatus, URL: name, Status: resp.Status, Code: resp.StatusCode}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, &FetchError{Kind: BrokenOff, URL: name, Reason: redact.String(netReason(err)), Err: transportCause(err)}
	}
	if len(data) > maxBody {
		return nil, &FetchError{Kind: TooLarge, URL: name}
	}
	s, err := Parse(data, resp.Header.Get("Content-Type"))
	if err != nil {
		return nil, &FetchError{Kind: NotMetrics, URL: name, Err: malformed(err)}
	}
	return s, nil
}

// transportCause is the transport's error without the URL a *url.Error
// quotes (credentials and all); a timeout stays a context.DeadlineExceeded.
func transportCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func netReason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case strings.Contains(err.Error(), "connection refused"):
		return "connection refused (is the server running and the port right?)"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// MetricsURL adds /metrics to a bare server address.
func MetricsURL(u string) string {
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	p, err := url.Parse(u)
	if err == nil && (p.Path == "" || p.Path == "/") {
		p.Path = "/metrics"
		return p.String()
	}
	return u
}

// Run scrapes until Duration has passed (at least twice). A server whose
// first scrape fails is left out (see Dead) while the others go on; when
// none answers, Run fails. Later failures leave gaps and a note. Cancelling
// ctx ends the scraping early: what was collected is kept and named.
func (s *Scraper) Run(ctx context.Context) (*window.Window, error) {
	if s.Client == nil {
		s.Client = &http.Client{Timeout: 10 * time.Second}
	}
	now := s.now
	if now == nil {
		now = time.Now
	}
	snaps := make([][]*Snapshot, len(s.URLs))
	// at[i][j] is the tick snaps[i][j] was taken at: a failed scrape leaves
	// its tick empty for that server, so every server's points stay on the
	// same ticks.
	at := make([][]int, len(s.URLs))
	var ticks []time.Time
	fails := make([]int, len(s.URLs))
	s.Dead = make([]error, len(s.URLs))
	tick := func(first bool) error {
		t := now()
		ticks = append(ticks, t)
		k := len(ticks) - 1
		var wg sync.WaitGroup
		errs := make([]error, len(s.URLs))
		for i, u := range s.URLs {
			if s.Dead[i] != nil {
				continue
			}
			wg.Add(1)
			fetch := func() {
				defer wg.Done()
				snap, err := Fetch(ctx, s.Client, u)
				if err != nil {
					errs[i] = err
					return
				}
				// Samples stamped by the server are placed at their own time.
				snap.Time = t
				if !snap.Latest.IsZero() {
					snap.Time = snap.Latest
				}
				snaps[i] = append(snaps[i], snap)
				at[i] = append(at[i], k)
			}
			if s.Sequential {
				fetch()
			} else {
				go fetch()
			}
		}
		wg.Wait()
		alive := 0
		for i, err := range errs {
			switch {
			case err == nil:
				if s.Dead[i] == nil {
					alive++
				}
			case first:
				s.Dead[i] = err
			default:
				fails[i]++
			}
		}
		if first && alive == 0 {
			ticks = ticks[:0]
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := tick(true); err != nil {
		return nil, err
	}
	interrupted, last := false, false
	start := now()
	n := 1
	ticker := time.NewTicker(s.Interval)
	defer ticker.Stop()
	for !last && ((s.Scrapes > 0 && n <= s.Scrapes) || (s.Scrapes <= 0 && now().Sub(start) < s.Duration)) {
		select {
		case <-ctx.Done():
			interrupted = true
		case <-s.Until:
			last = true
		case <-ticker.C:
		}
		if interrupted {
			break
		}
		if err := tick(false); err != nil {
			return nil, err
		}
		n++
		if s.Progress != nil {
			// Progress is best effort: a terminal that cannot show it does
			// not stop the scrape.
			_, _ = fmt.Fprintf(s.Progress, "\rscraping %d server(s): %d scrapes, %s of %s ",
				len(s.URLs), n, now().Sub(start).Round(time.Second), s.Duration)
		}
	}
	if s.Progress != nil {
		_, _ = fmt.Fprintln(s.Progress)
	}
	ws := make([]*window.Window, 0, len(s.URLs))
	for i, u := range s.URLs {
		if s.Dead[i] != nil {
			continue
		}
		instance := ""
		if len(s.URLs) > 1 {
			instance = instanceOf(u, s.URLs)
		}
		if err := SameConfig(snaps[i], nil); err != nil {
			return nil, fmt.Errorf("%s: %w", redact.String(u), err)
		}
		// The URL becomes provenance in the report: no credentials.
		w := onTicks(Window(snaps[i], instance, redact.String(u)), at[i], len(ticks))
		if fails[i] > 0 {
			w.Notes = append(w.Notes, fmt.Sprintf("%s: %d of %d scrapes failed", redact.String(u), fails[i], n))
		}
		ws = append(ws, w)
	}
	w := Merge(ws)
	if w.Times = tickTimes(ticks, snaps, at); !window.Increasing(w.Times) {
		w.Times = nil // placed evenly, as the ticks were meant to be
	}
	w.NoteGaps()
	if interrupted {
		w.Notes = append(w.Notes, fmt.Sprintf("partial window: stopped after %d scrapes over %s (interrupted), so the diagnosis covers what was collected", n,
			now().Sub(start).Round(time.Second)))
	}
	return w, nil
}

// onTicks places a server's window on the scrape ticks: at[j] is the tick
// of its j-th reading. A tick whose scrape failed gets no gauge value (NaN)
// and no histogram step; the step after it covers the whole pause, as the
// window's increases do. Points become the ticks; Times are the run's to
// set (tickTimes), for every server at once.
func onTicks(w *window.Window, at []int, ticks int) *window.Window {
	if ticks < 2 {
		return w
	}
	w.Points, w.Times = ticks, nil
	if len(at) == ticks {
		return w
	}
	for name, gs := range w.Gauges {
		for k, g := range gs {
			pts := make([]float64, ticks)
			for i := range pts {
				pts[i] = math.NaN()
			}
			for j, p := range g.Points {
				if j < len(at) {
					pts[at[j]] = p
				}
			}
			w.Gauges[name][k].Points = pts
		}
	}
	for name, hs := range w.Histograms {
		for k, h := range hs {
			if h.Steps == nil {
				continue
			}
			steps := make([][]window.Bucket, ticks)
			for j, st := range h.Steps {
				if j < len(at) {
					steps[at[j]] = st
				}
			}
			w.Histograms[name][k].Steps = steps
		}
	}
	return w
}

// tickTimes is when each tick's readings were taken: the time of the first
// server's reading at it (its samples' own timestamp when it stamps them,
// as a simulator or a federating exporter does, else the tick's clock), so
// points sit on the same clock as the window's start and end. A tick no
// server answered has no reading to draw: it gets its clock time shifted as
// its neighbour's was, to keep the order. Nil with fewer than two ticks.
func tickTimes(ticks []time.Time, snaps [][]*Snapshot, at [][]int) []time.Time {
	if len(ticks) < 2 {
		return nil
	}
	out := make([]time.Time, len(ticks))
	for i := range snaps {
		for j, k := range at[i] {
			if out[k].IsZero() {
				out[k] = snaps[i][j].Time
			}
		}
	}
	for k := range out {
		if !out[k].IsZero() {
			continue
		}
		switch {
		case k > 0:
			out[k] = out[k-1].Add(ticks[k].Sub(ticks[k-1]))
		default:
			out[k] = ticks[k]
		}
	}
	return out
}

// instanceOf is u's instance label among urls: its host and port, and its
// path too where another URL shares them (two servers behind one gateway).
func instanceOf(u string, urls []string) string {
	hp := hostPort(u)
	for _, o := range urls {
		if o != u && hostPort(o) == hp {
			if p, err := url.Parse(u); err == nil {
				return hp + p.EscapedPath()
			}
		}
	}
	return hp
}

func hostPort(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}

// Files reads saved expositions, oldest first. interval, when non-zero, is the
// time between consecutive files; otherwise sample timestamps in the files, or
// the files' modification times, place them. A file whose series repeat at
// several timestamps (an OpenMetrics backfill, a recording) is read as the
// readings it holds, each at its time. The path "-" reads stdin (nil: the
// process's standard input).
func Files(paths []string, interval time.Duration, stdin io.Reader) (*window.Window, error) {
	snaps := make([]*Snapshot, 0, len(paths))
	var names []string
	stamped, byMtime := false, false
	for _, p := range paths {
		data, err := readLimited(p, stdin)
		if err != nil {
			return nil, err
		}
		ss, err := ParseSeries(data, "")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(ss) > 1 {
			if interval > 0 {
				return nil, &SpacingError{Files: []string{p}, Readings: len(ss)}
			}
			stamped = true
			for i, s := range ss {
				snaps = append(snaps, s)
				names = append(names, fmt.Sprintf("%s (reading %d)", p, i+1))
			}
			continue
		}
		s := ss[0]
		st, _ := os.Stat(p)
		switch {
		case interval > 0:
			s.Time = time.Unix(0, 0).Add(time.Duration(len(snaps)) * interval)
		case !s.Latest.IsZero():
			s.Time = s.Latest
		case st != nil:
			s.Time = st.ModTime()
			byMtime = true
		}
		snaps = append(snaps, s)
		names = append(names, p)
	}
	if len(snaps) > 1 && interval == 0 {
		for i := 1; i < len(snaps); i++ {
			if !snaps[i].Time.After(snaps[i-1].Time) {
				if stamped || !snaps[i-1].Latest.IsZero() {
					return nil, fmt.Errorf("%s was taken before %s, which comes ahead of it: give the snapshots oldest first", names[i], names[i-1])
				}
				return nil, &SpacingError{Files: []string{names[i-1], names[i]}}
			}
		}
	}
	// Files written moments apart (a checkout, a copy) say nothing about
	// when they were scraped.
	if byMtime {
		for i := 1; i < len(snaps); i++ {
			if snaps[i].Time.Sub(snaps[i-1].Time) < minMtimeGap {
				return nil, &SpacingError{Files: []string{names[i-1], names[i]}}
			}
		}
	}
	if err := Consistent(snaps, names); err != nil {
		return nil, err
	}
	from := strings.Join(paths, ", ")
	w := Window(snaps, "", from)
	if interval > 0 {
		// Only the spacing is known, not the wall-clock times: the points
		// are evenly spaced, exactly.
		w.Start, w.End, w.Times = time.Time{}, time.Time{}, nil
		w.Length = time.Duration(len(snaps)-1) * interval
	}
	w.NoteGaps()
	return w, nil
}

// minMtimeGap is the least spacing file modification times are trusted for.
const minMtimeGap = 5 * time.Second

// SpacingError says the spacing of snapshots is unknown (Readings 0: two
// files without timestamps), or given although a file carries its own
// (Readings: how many it holds).
type SpacingError struct {
	Files    []string
	Readings int
}

func (e *SpacingError) Error() string {
	if e.Readings > 0 {
		return fmt.Sprintf("%s holds %d readings with their own timestamps: no spacing may be given", e.Files[0], e.Readings)
	}
	return fmt.Sprintf("cannot tell how far apart %s and %s were taken", e.Files[0], e.Files[1])
}

// readLimited reads a snapshot file ("-": standard input) up to maxBody.
func readLimited(p string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	if p == "-" {
		r = stdin
		if r == nil {
			r = os.Stdin
		}
	} else {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("cannot read snapshot: %w", err)
		}
		defer func() { _ = f.Close() }() // read only: all it held was read
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read snapshot %s: %w", p, err)
	}
	if len(data) > maxBody {
		return nil, fmt.Errorf("%s is larger than %d MiB: a /metrics exposition is well under one; is it the right file?", p, maxBody>>20)
	}
	return data, nil
}
