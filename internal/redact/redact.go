// Package redact keeps credentials out of everything llmdoctor prints:
// reports, JSON, notes, progress and error lines. Every source's URLs,
// tokens, passwords and header values go through (*Secrets).String before
// they reach output.
package redact

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Mask replaces a secret, as net/url's Redacted does.
const Mask = "xxxxx"

// minLen is the shortest known secret scrubbed from free text: masking every
// "a" or "1" in a report would hide more than it protects. Shorter values are
// still masked where they sit in a URL.
const minLen = 4

// Secrets are the credentials the user handed over. A nil *Secrets knows
// none and still masks what any URL carries. Add before use; String is safe
// for concurrent use.
type Secrets struct {
	known []string // longest first
}

// Add records secret values (tokens, passwords, header values).
func (s *Secrets) Add(values ...string) {
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < minLen {
			continue
		}
		// The same value may surface escaped, as it sits in a URL.
		s.known = append(s.known, v, url.QueryEscape(v), url.PathEscape(v))
	}
	// Longest first, so a secret holding another is masked whole.
	sort.Slice(s.known, func(i, j int) bool {
		a, b := s.known[i], s.known[j]
		return len(a) > len(b) || len(a) == len(b) && a < b
	})
	out := s.known[:0]
	for i, v := range s.known {
		if i == 0 || v != s.known[i-1] {
			out = append(out, v)
		}
	}
	s.known = out
}

// AddHeader records a request header value, and the credential alone when
// the value is "Scheme credential" (Authorization: Bearer …).
func (s *Secrets) AddHeader(value string) {
	s.Add(value)
	if f := strings.Fields(value); len(f) == 2 {
		s.Add(f[1])
	}
}

// AddBasic records a basic-auth password and the header it becomes.
func (s *Secrets) AddBasic(user, password string) {
	if password == "" {
		return
	}
	s.Add(password, base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
}

// AddURL records what a URL given by the user carries: the userinfo
// password (or a lone user name, often a token), and query values whose
// names look like credentials.
func (s *Secrets) AddURL(raw string) {
	if raw == "" {
		return
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			s.AddBasic(u.User.Username(), p)
		} else {
			s.Add(u.User.Username())
		}
	}
	for _, part := range []string{u.RawQuery, u.Fragment} {
		q, _ := url.ParseQuery(part)
		for k, vs := range q {
			if SecretName(k) {
				s.Add(vs...)
			}
		}
	}
}

var secretWords = []string{"token", "key", "pass", "pwd", "secret", "sig", "auth", "credential", "session", "cookie", "jwt", "code"}

// SecretName says whether a query parameter or header name looks like it
// holds a credential (token, access_token, api_key, X-Amz-Signature, …).
func SecretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

var (
	urlRe = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>` + "`" + `]+`)
	// user:password@host written without a scheme, as --vllm accepts it.
	bareUserinfoRe = regexp.MustCompile(`(^|[\s"'=(\[,])([^\s"'@/:=(\[,]+):[^\s"'@/]+@`)
)

// String returns text with every URL's userinfo and query values masked and
// every known secret replaced by Mask. It is the one redaction llmdoctor
// applies; text without secrets comes back unchanged.
func (s *Secrets) String(text string) string {
	if s != nil {
		// Known values first: a password may hold an unescaped @ or /.
		for _, v := range s.known {
			text = strings.ReplaceAll(text, v, Mask)
		}
	}
	text = urlRe.ReplaceAllStringFunc(text, maskURL)
	return bareUserinfoRe.ReplaceAllString(text, "${1}${2}:"+Mask+"@")
}

// String redacts with no known secrets: URLs only.
func String(text string) string { return (*Secrets)(nil).String(text) }

// maskURL masks the userinfo and every query value: a query value that does
// not look like a credential by name may still be one (Azure's code=, a
// proxy's x=), and /metrics or Prometheus API URLs need none to be read.
func maskURL(u string) string {
	i := strings.Index(u, "://") + 3
	rest := u[i:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	host, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(host, "@"); at >= 0 {
		user := Mask
		if c := strings.Index(host[:at], ":"); c >= 0 {
			user = host[:c] + ":" + Mask
		}
		host = user + host[at:]
	}
	frag := ""
	if h := strings.Index(tail, "#"); h >= 0 {
		tail, frag = tail[:h], tail[h:]
		if strings.Contains(frag, "=") {
			frag = "#" + maskQuery(frag[1:])
		}
	}
	if q := strings.Index(tail, "?"); q >= 0 {
		tail = tail[:q+1] + maskQuery(tail[q+1:])
	}
	return u[:i] + host + tail + frag
}

func maskQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		switch {
		case ok && v != "":
			parts[i] = k + "=" + Mask
		case !ok && p != "":
			parts[i] = Mask
		}
	}
	return strings.Join(parts, "&")
}
