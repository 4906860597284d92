package prom

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/redact"
	"github.com/llmdoctor/llmdoctor/internal/useragent"
)

// Connection says how to reach the API. Secrets (token, password) come from
// the environment or files and never appear in errors or output.
type Connection struct {
	URL           string
	BearerToken   string
	BasicUser     string
	BasicPassword string
	// Headers are added to every request (X-Scope-OrgID for Mimir, …).
	Headers  map[string]string
	CAFile   string
	CertFile string
	KeyFile  string
	Insecure bool
	Timeout  time.Duration
}

// Redacted is the URL with its credentials masked.
func (c Connection) Redacted() string {
	var s redact.Secrets
	c.AddSecrets(&s)
	return s.String(c.URL)
}

// AddSecrets records every credential the connection carries, so that no
// output repeats one.
func (c Connection) AddSecrets(s *redact.Secrets) {
	s.AddURL(c.URL)
	s.AddHeader(c.BearerToken)
	s.AddBasic(c.BasicUser, c.BasicPassword)
	for _, v := range c.Headers {
		s.AddHeader(v)
	}
}

// RoundTripper sends the connection's credentials (headers, bearer token or
// basic auth, userinfo moved out of the URL) over its TLS settings: every
// client of this Prometheus uses it.
func (c Connection) RoundTripper() (http.RoundTripper, error) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &Error{Kind: BadURL, URL: c.Redacted()}
	}
	if u.User != nil && c.BasicUser == "" {
		// Credentials in the URL: move them into the header, out of error texts.
		c.BasicUser = u.User.Username()
		c.BasicPassword, _ = u.User.Password()
	}
	tlsCfg := &tls.Config{InsecureSkipVerify: c.Insecure} //nolint:gosec // the user asked for it
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, &Error{Kind: BadCA, Detail: err.Error(), Err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &Error{Kind: BadCA, Detail: c.CAFile + " holds no PEM certificate"}
		}
		tlsCfg.RootCAs = pool
	}
	if c.CertFile != "" || c.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, &Error{Kind: BadClientCert, Detail: err.Error(), Err: err}
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	base := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: timeout}).DialContext,
		TLSClientConfig:       tlsCfg,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   16,
		// As http.DefaultTransport: a long-running server does not keep
		// a connection (and its two goroutines) per diagnosis for ever.
		IdleConnTimeout: 90 * time.Second,
	}
	return &authTransport{base: base, conn: c}, nil
}

type authTransport struct {
	base http.RoundTripper
	conn Connection
}

// CloseIdleConnections closes the connections kept for reuse; an
// http.Client over the transport forwards its own to it.
func (t *authTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.User = nil
	r.Header.Set("User-Agent", useragent.String)
	// Queries change nothing (client_golang POSTs them): where a server
	// closed a kept-alive connection as the request went out, the
	// transport may send it again. An empty key is not sent on the wire.
	r.Header["Idempotency-Key"] = []string{}
	for k, v := range t.conn.Headers {
		r.Header.Set(k, v)
	}
	switch {
	case t.conn.BearerToken != "":
		r.Header.Set("Authorization", "Bearer "+t.conn.BearerToken)
	case t.conn.BasicUser != "":
		r.SetBasicAuth(t.conn.BasicUser, t.conn.BasicPassword)
	}
	return t.base.RoundTrip(r)
}
