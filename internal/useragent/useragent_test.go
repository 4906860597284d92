package useragent

import (
	"net/http"
	"runtime/debug"
	"testing"
)

// The header names the product and version as RFC 9110 wants them: a
// token, a slash, a token, then a comment; never "(devel)" as a version.
func TestString(t *testing.T) {
	for _, c := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, "llmdoctor/devel"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "llmdoctor/devel"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c4d5e"}}}, true, "llmdoctor/v0.3.1 (rev 1a2b3c4)"},
	} {
		if got := of(c.info, c.ok); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	r, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	r.Header.Set("User-Agent", String)
	if r.UserAgent() != String || String == "" {
		t.Errorf("User-Agent %q", r.UserAgent())
	}
}
