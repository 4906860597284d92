package main

import (
	"io"
	"net/http"
	"strings"

	"github.com/llmdoctor/llmdoctor/internal/redact"
)

// secrets are every credential the source flags carry: userinfo and query
// values of --prom, --target and --dcgm URLs, the Prometheus token and
// password, and header values. The pipeline masks what it reads with the
// sources' own; these also cover what a flag error echoes.
func (o *diagnoseOpts) secrets() *redact.Secrets {
	s := &redact.Secrets{}
	// A malformed flag still yields what it read so far.
	conn, _ := o.prom.connection()
	conn.AddSecrets(s)
	for _, u := range append(append(append([]string{}, o.targetURLs...), o.vllmURLs...), o.dcgmURLs...) {
		s.AddURL(u)
	}
	for _, h := range append(append(append([]string{}, o.prom.headers...), o.scrapeHeaders...), o.vllmHeaders...) {
		if _, v, ok := strings.Cut(h, ":"); ok {
			s.AddHeader(v)
		} else {
			s.AddHeader(h) // echoed by the usage error: mask it whole
		}
	}
	return s
}

// scrapeHeader reads --target-header "Name: value" flags. Userinfo in a URL
// is sent as basic auth by net/http itself.
func (o *diagnoseOpts) scrapeHeader() (http.Header, error) {
	h := http.Header{}
	for _, x := range o.scrapeHeaders {
		k, v, ok := strings.Cut(x, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageErr("--target-header %q: want \"Name: value\"", x)
		}
		h.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h, nil
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
