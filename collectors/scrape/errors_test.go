package scrape

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A front end tells a server that is down from one that is not a /metrics
// endpoint by the error's type, not its words.
func TestFetchErrorsKeepTheirKind(t *testing.T) {
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>login</html>"))
	}))
	defer html.Close()
	fail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusBadGateway)
	}))
	defer fail.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	cases := map[string]struct {
		url       string
		kind      FetchKind
		malformed bool
	}{
		"html": {html.URL + "/metrics", NotMetrics, true},
		"502":  {fail.URL + "/metrics", BadStatus, false},
		"down": {closedURL + "/metrics", Unreachable, false},
		"bad":  {"http://user:s3cr3t@[::1", Unreachable, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Fetch(context.Background(), http.DefaultClient, c.url)
			var fe *FetchError
			if !errors.As(err, &fe) || fe.Kind != c.kind {
				t.Fatalf("got %#v, want a *FetchError of kind %d", err, c.kind)
			}
			var me *MalformedError
			if errors.As(err, &me) != c.malformed {
				t.Errorf("errors.As(%v, *MalformedError) = %v, want %v", err, !c.malformed, c.malformed)
			}
			for e := error(fe); e != nil; e = errors.Unwrap(e) {
				if strings.Contains(e.Error(), "s3cr3t") {
					t.Errorf("the chain of %q shows the password: %q", err, e)
				}
			}
		})
	}
}

func TestParseErrorsAreMalformed(t *testing.T) {
	for _, in := range []string{
		"",
		"<html></html>",
		"# TYPE vllm:x gauge\nvllm:x{ 1\n",
		"# TYPE vllm:x gauge\nvllm:x{ 1\n# EOF\n",
	} {
		_, err := Parse([]byte(in), "")
		var me *MalformedError
		if !errors.As(err, &me) {
			t.Errorf("Parse(%q): got %#v, want a *MalformedError", in, err)
		}
	}
}
