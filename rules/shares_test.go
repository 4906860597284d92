package rules

import (
	"errors"
	"strings"
	"testing"
)

// A threshold compared with a share is a share: llmdoctor.yaml may not set
// it above 1 (a percent written as 90 would silence the rule), and the
// error names the line. A threshold compared with a trend may.
func TestShareParamsAreWithinOne(t *testing.T) {
	set, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	full, ok := set.Get("kv/full-waiting")
	if !ok || !full.shares["kv_full"] {
		t.Fatalf("kv/full-waiting's kv_full is not known as a share (%v)", full.shares)
	}
	if rising, ok := set.Get("tail/rising"); !ok || rising.shares["growth"] {
		t.Fatal("tail/rising's growth is compared with a trend, which may pass 1, yet it is taken as a share")
	}
	for _, r := range set.Rules {
		for p := range r.shares {
			if d := r.Params[p]; d < 0 || d > 1 {
				t.Errorf("%s: param %s is compared with a share, and its default %v is not one", r.ID, p, d)
			}
		}
	}

	cases := []struct {
		yaml string
		line int // 0: valid
		want string
	}{
		{"# team\nrules:\n  kv/full-waiting:\n    params:\n      kv_full: 2\n", 5, "kv_full is a share, within 0 and 1"},
		{"rules:\n  kv/full-waiting:\n    params:\n      kv_full: 0.95\n", 0, ""},
		{"rules:\n  tail/rising:\n    params:\n      growth: 1.5\n", 0, ""},
		{"min_samples: 20\nrules:\n  kv/full-waiting:\n    params:\n      kv_fulll: 0.5\n", 5, "no such param"},
		{"\nmin_share: 3\n", 2, "out of range"},
	}
	for _, c := range cases {
		cfg, err := ParseConfig("team.yaml", []byte(c.yaml))
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate(set)
		var ce *ConfigError
		switch {
		case c.line == 0 && err != nil:
			t.Errorf("%q: %v", c.yaml, err)
		case c.line == 0:
		case !errors.As(err, &ce) || ce.Line != c.line || !strings.Contains(err.Error(), c.want):
			t.Errorf("%q: got %v, want a *ConfigError at line %d saying %q", c.yaml, err, c.line, c.want)
		}
	}
}
