package serve

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/report"
	"github.com/llmdoctor/llmdoctor/serve/core"
)

// The report pages: GET / lists every target the server diagnosed, GET
// /report/{target} is a target's latest report and /report/{target}/{run}
// one of its kept runs. They show the history (history.go): the runs of
// the latest window the server made of its own accord, in this process.

// reportCSP is the pages' Content-Security-Policy, sent as a header as
// well as in the page: nothing loads, inline styles and data: images
// only (the pages are self-contained).
const reportCSP = report.CSP

// Bounds of ?refresh=, in seconds, and the period the pages offer.
const (
	minRefresh  = 10
	maxRefresh  = 3600
	navRefresh  = 60
	runCacheAge = 24 * 60 * 60
)

// registerPages adds the report pages; they are always on.
func (s *Server) registerPages() error {
	s.mux.HandleFunc("GET /{$}", s.pageIndex)
	s.mux.HandleFunc("GET /report/{target}", s.pageLatest)
	s.mux.HandleFunc("GET /report/{target}/{run}", s.pageRun)
	return nil
}

// href is a page's path as links on the pages name it: under the path
// of --external-url, when it has one.
func (s *Server) href(slug string, run ...string) string {
	if slug == "" {
		return s.base + "/"
	}
	p := s.base + "/report/" + slug
	if len(run) > 0 {
		p += "/" + run[0]
	}
	return p
}

// reportLink is the absolute URL of a run's report, for Slack; "" without
// --external-url or a run.
func (s *Server) reportLink(ref runRef) string {
	if s.cfg.ExternalURL == "" || ref.Slug == "" {
		return ""
	}
	return strings.TrimRight(s.cfg.ExternalURL, "/") + runPath(ref)
}

// pageIndex is GET /[?refresh=N]: every target's latest verdict, the
// most severe first (critical, warning, inconclusive, healthy), then the
// most recently diagnosed, each with its older runs.
func (s *Server) pageIndex(w http.ResponseWriter, r *http.Request) {
	refresh, err := pageQuery(r.URL.Query(), true)
	if err != nil {
		plain(w, http.StatusBadRequest, err.Error())
		return
	}
	entries := s.indexEntries()
	title := fmt.Sprintf("llmdoctor · %d target%s", len(entries), plural(len(entries)))
	if len(entries) == 0 {
		title = "llmdoctor · no target diagnosed yet: " + s.howToRun()
	}
	o := report.Options{Refresh: refresh, Nav: []report.Link{s.refreshLink("", refresh)}}
	var b bytes.Buffer
	if err := report.HTMLIndex(&b, title, entries, o); err != nil {
		s.log.Error("report pages: the index did not render", "err", err)
		plain(w, http.StatusInternalServerError, "the index did not render: "+err.Error())
		return
	}
	writePage(w, "no-store", b.Bytes())
}

// indexEntries are the index's targets in its order.
func (s *Server) indexEntries() []report.IndexEntry {
	views := s.history.all()
	entries := make([]report.IndexEntry, 0, len(views))
	ranks := make(map[string]int, len(views))
	for _, v := range views {
		latest := v.runs[0]
		e := report.IndexEntry{Name: v.name, Href: s.href(v.slug), Bottleneck: latest.verdict.Bottleneck, Status: latest.verdict.Status,
			Severity: latest.verdict.Severity, Summary: latest.summary, At: latest.at}
		for _, r := range v.runs[1:] {
			e.Runs = append(e.Runs, report.Link{Text: runLabel(r), Href: s.href(v.slug, r.id)})
		}
		ranks[e.Href] = verdictRank(latest.verdict)
		entries = append(entries, e)
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if ra, rb := ranks[a.Href], ranks[b.Href]; ra != rb {
			return ra < rb
		}
		if !a.At.Equal(b.At) {
			return a.At.After(b.At)
		}
		return a.Href < b.Href
	})
	return entries
}

// verdictRank orders verdicts for the index, the most severe first.
func verdictRank(v core.Verdict) int {
	switch {
	case (v.Status == "found" || v.Status == "tentative") && v.Severity == "critical":
		return 0
	case v.Status == "found" || v.Status == "tentative":
		return 1
	case v.Status == "inconclusive", v.Status == "suppressed":
		return 2
	}
	return 3
}

// howToRun says, on an empty index, what makes a target appear, as this
// server is configured (API calls keep no run).
func (s *Server) howToRun() string {
	if s.watch != nil {
		return fmt.Sprintf("the watch lists every target after its first run (every %s)", units.ShortDuration(s.watch.Every()))
	}
	var ways []string
	if s.am != nil {
		ways = append(ways, "when Alertmanager posts an alert")
	}
	if s.slackOn {
		ways = append(ways, "on /llmdoctor diagnose")
	}
	if len(ways) == 0 {
		return "start serve with --watch, the Alertmanager receiver or the Slack app"
	}
	return "targets are listed once diagnosed " + strings.Join(ways, " or ") + " (or with --watch)"
}

// pageLatest is GET /report/{target}[?refresh=N]: the target's latest
// report, linking to the index and to its older runs.
func (s *Server) pageLatest(w http.ResponseWriter, r *http.Request) {
	refresh, err := pageQuery(r.URL.Query(), true)
	if err != nil {
		plain(w, http.StatusBadRequest, err.Error())
		return
	}
	v, ok := s.history.target(r.PathValue("target"))
	if !ok {
		s.unknownTarget(w, r.PathValue("target"))
		return
	}
	nav := append([]report.Link{{Text: "← all targets", Href: s.href("")}}, s.wholeLink(v)...)
	for _, old := range v.runs[1:] {
		nav = append(nav, report.Link{Text: "older run: " + runLabel(old), Href: s.href(v.slug, old.id)})
	}
	nav = append(nav, s.refreshLink(v.slug, refresh))
	s.renderRun(w, v.runs[0], report.Options{Nav: nav, Refresh: refresh, TargetName: v.name}, "no-store")
}

// pageRun is GET /report/{target}/{run}: a kept run, which never changes.
func (s *Server) pageRun(w http.ResponseWriter, r *http.Request) {
	if _, err := pageQuery(r.URL.Query(), false); err != nil {
		plain(w, http.StatusBadRequest, err.Error())
		return
	}
	slug, id := r.PathValue("target"), r.PathValue("run")
	v, ok := s.history.target(slug)
	if !ok {
		s.unknownTarget(w, slug)
		return
	}
	var run *histRun
	for _, x := range v.runs {
		if x.id == id {
			run = x
		}
	}
	if run == nil {
		if oldest := v.runs[len(v.runs)-1]; runBefore(id, oldest.id) {
			plain(w, http.StatusNotFound, fmt.Sprintf("run %s of %s is no longer kept: llmdoctor keeps the last %d runs of each target (--report-history), in memory; see %s for the latest",
				id, v.name, s.history.size, s.href(v.slug)))
			return
		}
		plain(w, http.StatusNotFound, fmt.Sprintf("no run %q of %s: its kept runs are listed on %s", id, v.name, s.href(v.slug)))
		return
	}
	nav := []report.Link{{Text: "← all targets", Href: s.href("")}, {Text: "latest report of " + v.name, Href: s.href(v.slug)}}
	nav = append(nav, s.wholeLink(v)...)
	for _, x := range v.runs {
		if x != run {
			nav = append(nav, report.Link{Text: "run " + runLabel(x), Href: s.href(v.slug, x.id)})
		}
	}
	s.renderRun(w, run, report.Options{Nav: nav, TargetName: v.name}, fmt.Sprintf("private, max-age=%d, immutable", runCacheAge))
}

// wholeLink links a narrowed target's pages to the latest report of the
// whole target, when it is kept.
func (s *Server) wholeLink(v targetView) []report.Link {
	if v.whole == nil {
		return nil
	}
	return []report.Link{{Text: "the whole target: latest report of " + v.whole.name, Href: s.href(v.whole.slug)}}
}

// unknownTarget is the 404 of a target the history does not hold.
func (s *Server) unknownTarget(w http.ResponseWriter, slug string) {
	plain(w, http.StatusNotFound, fmt.Sprintf("no report of target %q: reports are kept in this process's memory, for targets diagnosed of the latest window since it started (the last %d targets); the index %s lists them",
		slug, s.history.maxTargets, s.href("")))
}

// renderRun writes a run's report page.
func (s *Server) renderRun(w http.ResponseWriter, run *histRun, o report.Options, cache string) {
	d, err := run.diagnosis()
	if err != nil {
		s.log.Error("report pages: a kept run cannot be read", "run", run.id, "err", err)
		plain(w, http.StatusInternalServerError, "the kept run cannot be read: "+err.Error())
		return
	}
	var b bytes.Buffer
	if err := report.HTML(&b, d, o); err != nil {
		s.log.Error("report pages: a report did not render", "run", run.id, "err", err)
		plain(w, http.StatusInternalServerError, "the report did not render: "+err.Error())
		return
	}
	writePage(w, cache, b.Bytes())
}

// writePage answers an HTML page with the pages' headers.
func writePage(w http.ResponseWriter, cache string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", reportCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", cache)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// pageQuery reads a page's parameters: refresh (seconds between reloads,
// minRefresh to maxRefresh) where the page takes it, nothing else.
func pageQuery(q url.Values, refreshable bool) (int, error) {
	for k := range q {
		if k != "refresh" || !refreshable {
			if refreshable {
				return 0, fmt.Errorf("unknown parameter %q: this page takes refresh (seconds between reloads)", k)
			}
			return 0, fmt.Errorf("unknown parameter %q: a kept run takes none (it never changes)", k)
		}
	}
	vs, ok := q["refresh"]
	if !ok {
		return 0, nil
	}
	if len(vs) != 1 {
		return 0, fmt.Errorf("refresh is given %d times: give it once", len(vs))
	}
	n, err := strconv.Atoi(vs[0])
	if err != nil || n < minRefresh || n > maxRefresh {
		return 0, fmt.Errorf("refresh=%s: give the seconds between reloads, from %d to %d (refresh=%d reloads every minute)", vs[0], minRefresh, maxRefresh, navRefresh)
	}
	return n, nil
}

// refreshLink turns auto-refresh on or off for the index ("") or a
// target's latest report.
func (s *Server) refreshLink(slug string, refresh int) report.Link {
	if refresh > 0 {
		return report.Link{Text: "stop reloading", Href: s.href(slug)}
	}
	return report.Link{Text: fmt.Sprintf("reload every %ds", navRefresh), Href: s.href(slug) + "?refresh=" + strconv.Itoa(navRefresh)}
}

// runLabel names a run in links: when, what asked, and its verdict.
func runLabel(r *histRun) string {
	return r.at.UTC().Format("2006-01-02 15:04:05 UTC") + " · " + r.trigger + " · " + r.verdict.Label()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// slackMessages renders d as one message per target, each linking to its
// run's report page when it was kept and the server knows its external
// URL; otherwise to o.ReportURL (the API's diagnosis, or nothing).
func (s *Server) slackMessages(d *advisor.Diagnosis, runs []runRef, o report.SlackOptions) []report.SlackMessage {
	if d == nil || len(d.Targets) == 0 {
		return report.SlackDiagnosis(d, o)
	}
	out := make([]report.SlackMessage, 0, len(d.Targets))
	for i := range d.Targets {
		oi := o
		if i < len(runs) {
			if link := s.reportLink(runs[i]); link != "" {
				oi.ReportURL = link
			}
		}
		// A message reads the diagnosis's window, sources and notes, and
		// its own target: d narrowed to it renders the same message.
		one := *d
		one.Targets = d.Targets[i : i+1 : i+1]
		out = append(out, report.SlackDiagnosis(&one, oi)...)
	}
	return out
}
