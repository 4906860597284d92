package main

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/window"
	"github.com/llmdoctor/llmdoctor/internal/redact"
)

// secrets are every credential the source flags carry: userinfo and query
// values of --prom, --vllm and --dcgm URLs, the Prometheus token and
// password, and header values.
func (o *diagnoseOpts) secrets() *redact.Secrets {
	s := &redact.Secrets{}
	// A malformed flag still yields what it read so far.
	conn, _ := o.prom.connection()
	conn.AddSecrets(s)
	for _, u := range append(append([]string{}, o.vllmURLs...), o.dcgmURLs...) {
		s.AddURL(u)
	}
	for _, h := range append(append([]string{}, o.prom.headers...), o.scrapeHeaders...) {
		if _, v, ok := strings.Cut(h, ":"); ok {
			s.AddHeader(v)
		} else {
			s.AddHeader(h) // echoed by the usage error: mask it whole
		}
	}
	return s
}

// gather reads every source the flags name, with every credential the
// flags carry masked in what it returns: the error, source lines, notes and
// the provenance the report cites.
func (o *diagnoseOpts) gather() (*window.Window, []advisor.Source, []requestSource, error) {
	sec := o.secrets()
	var (
		w       *window.Window
		sources []advisor.Source
		reqs    []requestSource
		err     error
	)
	if len(o.scrapeHeaders) > 0 && len(o.vllmURLs) == 0 {
		err = usageErr("--vllm-header applies to --vllm and --dcgm scrapes")
	} else {
		w, sources, reqs, err = o.gatherSources()
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return nil, nil, nil, &exitError{ee.code, sec.String(ee.msg)}
		}
		return nil, nil, nil, errors.New(sec.String(err.Error()))
	}
	for i := range sources {
		s := &sources[i]
		s.URL, s.Path, s.Error = sec.String(s.URL), sec.String(s.Path), sec.String(s.Error)
		for j, n := range s.Notes {
			s.Notes[j] = sec.String(n)
		}
	}
	if w != nil {
		w.From = sec.String(w.From)
		for i, n := range w.Notes {
			w.Notes[i] = sec.String(n)
		}
	}
	return w, sources, reqs, nil
}

// scrapeClient is the HTTP client of --vllm and --dcgm scrapes. Userinfo in
// a URL is sent as basic auth by net/http itself.
func (o *diagnoseOpts) scrapeClient() (*http.Client, error) {
	h := http.Header{}
	for _, x := range o.scrapeHeaders {
		k, v, ok := strings.Cut(x, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageErr("--vllm-header %q: want \"Name: value\"", x)
		}
		h.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	c := &http.Client{Timeout: o.timeout}
	if len(h) > 0 {
		c.Transport = headerTransport{http.DefaultTransport, h}
	}
	return c, nil
}

type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// redactWriter masks credentials in each write: progress lines are written
// whole.
type redactWriter struct {
	w   io.Writer
	sec *redact.Secrets
}

func (r redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, r.sec.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
