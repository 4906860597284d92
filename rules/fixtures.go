package rules

import (
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// Fixture is one test case of a rule: evidence in, outcome out. Its file name
// starts with the outcome it expects: fired, quiet or insufficient.
type Fixture struct {
	// Evidence maps a field path (stage.ttft.p99) or a node path with its
	// fields (stage.ttft: {count: 400, mean: 1.2}) to values.
	Evidence map[string]any `yaml:"evidence"`
	// Params override the rule's params for this case.
	Params map[string]float64 `yaml:"params"`
	// Message lists substrings a fired message must contain.
	Message []string `yaml:"message"`
	// Bound lists substrings of the reason a quiet case must be bounded by
	// (the rule lacked inputs, and the ones it had show it could not fire).
	Bound []string `yaml:"bound"`
	// Tentative, on a fired case, says it must fire on the rule's plain
	// condition (one reading); a fired case without it must not.
	Tentative bool `yaml:"tentative"`
	// Next lists substrings the fired rule's next steps for this evidence
	// must hold, each in one step, and NotNext substrings none may hold:
	// steps left out by only_if, or turned into a check by if_already.
	Next    []string `yaml:"next"`
	NotNext []string `yaml:"not_next"`
}

// TestResult is the outcome of one fixture.
type TestResult struct {
	Rule, File string
	Want, Got  Outcome
	Err        string
	// Missing, when the case was insufficient, is what the rule lacked.
	Missing []Missing
}

// OK reports a pass.
func (t TestResult) OK() bool { return t.Err == "" && t.Want == t.Got }

// FixtureDir is where a rule's cases live, beside its file.
func FixtureDir(ruleFile string) string {
	return strings.TrimSuffix(strings.TrimSuffix(ruleFile, ".yaml"), ".yml") + ".tests"
}

// RunFixtures runs the cases of every rule in rs found in fsys. rel maps a
// rule to its file path inside fsys.
func RunFixtures(set *Set, rs []*Rule, fsys fs.FS, rel func(*Rule) string) []TestResult {
	var out []TestResult
	for _, r := range rs {
		dir := FixtureDir(rel(r))
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			out = append(out, TestResult{Rule: r.ID, File: dir, Err: "no fixture folder"})
			continue
		}
		for _, en := range entries {
			if en.IsDir() || !strings.HasSuffix(en.Name(), ".yaml") {
				continue
			}
			p := path.Join(dir, en.Name())
			out = append(out, runFixture(set, r, fsys, p))
		}
	}
	return out
}

func runFixture(set *Set, r *Rule, fsys fs.FS, p string) TestResult {
	tr := TestResult{Rule: r.ID, File: p}
	base := path.Base(p)
	for _, o := range []Outcome{Fired, Quiet, Insufficient} {
		if strings.HasPrefix(base, o.String()) {
			tr.Want = o
		}
	}
	if tr.Want == 0 {
		tr.Err = "file name must start with fired, quiet or insufficient"
		return tr
	}
	data, err := fs.ReadFile(fsys, p)
	if err != nil {
		tr.Err = err.Error()
		return tr
	}
	var fx Fixture
	if err := yamlUnmarshal(data, &fx); err != nil {
		tr.Err = oneLine(fmt.Errorf("%s", yaml.FormatError(err, false, false)))
		return tr
	}
	e, err := FixtureEvidence(fx.Evidence)
	if err != nil {
		tr.Err = err.Error()
		return tr
	}
	cfg := &Config{}
	if len(fx.Params) > 0 {
		cfg.Rules = map[string]Override{r.ID: {Params: fx.Params}}
	}
	one := &Set{Rules: []*Rule{r}, byID: map[string]*Rule{r.ID: r}}
	if r.usesVerdict {
		// Verdict rules judge the others' findings: run the whole set.
		one = set
	}
	for _, res := range one.Evaluate(e, cfg) {
		if res.Rule != r {
			continue
		}
		tr.Got = res.Outcome
		if res.Outcome == Insufficient {
			tr.Missing = res.Missing()
		}
		if res.Outcome == Fired && res.Tentative() != fx.Tentative {
			tr.Err = fmt.Sprintf("fired with tentative %v, want %v", res.Tentative(), fx.Tentative)
		}
		if res.Outcome == Fired {
			for _, want := range fx.Message {
				if !strings.Contains(res.Message, want) {
					tr.Err = fmt.Sprintf("message %q does not contain %q", res.Message, want)
				}
			}
			if err := checkNext(r.Steps(e), fx); err != "" {
				tr.Err = err
			}
		}
		if len(fx.Bound) > 0 && res.Bound() == "" {
			tr.Err = "want a quiet result bounded by the inputs present, got no bound"
		}
		for _, want := range fx.Bound {
			if !strings.Contains(res.Bound(), want) {
				tr.Err = fmt.Sprintf("bound %q does not contain %q", res.Bound(), want)
			}
		}
	}
	return tr
}

// checkNext says how steps miss a fixture's next and not_next; "" when
// they do not.
func checkNext(steps []Step, fx Fixture) string {
	var did []string
	for _, s := range steps {
		did = append(did, s.Do)
	}
	for _, want := range fx.Next {
		if !slices.ContainsFunc(did, func(d string) bool { return strings.Contains(d, want) }) {
			return fmt.Sprintf("no next step holds %q: %q", want, did)
		}
	}
	for _, not := range fx.NotNext {
		if i := slices.IndexFunc(did, func(d string) bool { return strings.Contains(d, not) }); i >= 0 {
			return fmt.Sprintf("next step %q holds %q", did[i], not)
		}
	}
	return ""
}

// FixtureEvidence builds evidence from a fixture's map.
func FixtureEvidence(m map[string]any) (*evidence.Evidence, error) {
	e := evidence.New(evidence.Target{Model: "fixture"})
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	set := func(p string, v any) error {
		f, ok := evidence.Lookup(p)
		if !ok {
			return fmt.Errorf("evidence: %s is not a field", p)
		}
		x, ok := toFloat(v)
		if !ok {
			return fmt.Errorf("evidence: %s: %v is not a number", p, v)
		}
		e.Values.Set(f, x)
		return nil
	}
	for _, k := range keys {
		switch v := m[k].(type) {
		case map[string]any:
			for sub, x := range v {
				if err := set(k+"."+sub, x); err != nil {
					return nil, err
				}
			}
		default:
			if err := set(k, v); err != nil {
				return nil, err
			}
		}
	}
	// As collectors' evidence does: consistency checks and derived shares.
	evidence.Check(e)
	return e, nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case uint64:
		return float64(x), true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case string:
		if strings.EqualFold(x, "nan") {
			return math.NaN(), true
		}
	}
	return 0, false
}

func yamlUnmarshal(data []byte, v any) error {
	return yaml.UnmarshalWithOptions(data, v, yaml.Strict())
}

// FullEvidence returns evidence with every field set to x.
func FullEvidence(x float64) *evidence.Evidence {
	e := evidence.New(evidence.Target{Model: "full"})
	for _, f := range evidence.Fields() {
		e.Values.Set(f, x)
	}
	return e
}
