package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// fiftyRules returns the built-in rules plus copies under new ids, 50 in all.
func fiftyRules(b *testing.B) *Set {
	builtin, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	rs := append([]*Rule{}, builtin...)
	for i := 0; len(rs) < 50; i++ {
		src := builtin[i%len(builtin)]
		data, _ := BuiltinFS.ReadFile(src.File)
		text := strings.Replace(string(data), "id: "+src.ID, fmt.Sprintf("id: copy%d/%s", i, strings.ReplaceAll(src.ID, "/", "-")), 1)
		r, err := Parse(src.File, []byte(text))
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	s, err := NewSet(rs)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// thousandTargets are the fixture of a firing verdict rule, its TTFT
// varied, a thousand times.
func thousandTargets(b *testing.B) []*evidence.Evidence {
	fx, _ := BuiltinFS.ReadFile("builtin/verdict/no-single-bottleneck.tests/fired.yaml")
	var f Fixture
	if err := yamlUnmarshal(fx, &f); err != nil {
		b.Fatal(err)
	}
	targets := make([]*evidence.Evidence, 1000)
	for i := range targets {
		e, err := FixtureEvidence(f.Evidence)
		if err != nil {
			b.Fatal(err)
		}
		e.Values.Stage.TTFT.Mean *= 1 + float64(i%7)/10
		targets[i] = e
	}
	return targets
}

// Evaluating 50 rules over 1000 targets as a diagnosis does: the targets
// spread over the cores.
func BenchmarkEvaluate50Rules1000Targets(b *testing.B) {
	s, targets, cfg := fiftyRules(b), thousandTargets(b), &Config{}
	b.ReportAllocs()
	b.ResetTimer()
	fired := 0
	for n := 0; n < b.N; n++ {
		for _, rs := range s.EvaluateEach(targets, cfg) {
			for _, r := range rs {
				if r.Outcome == Fired {
					fired++
				}
			}
		}
	}
	if fired == 0 {
		b.Fatal("nothing fired: the benchmark measures nothing")
	}
}

// The same on one core, target after target: the CPU a diagnosis spends.
func BenchmarkEvaluate50Rules1000TargetsOneCore(b *testing.B) {
	s, targets, cfg := fiftyRules(b), thousandTargets(b), &Config{}
	b.ReportAllocs()
	b.ResetTimer()
	fired := 0
	for n := 0; n < b.N; n++ {
		for _, e := range targets {
			for _, r := range s.Evaluate(e, cfg) {
				if r.Outcome == Fired {
					fired++
				}
			}
		}
	}
	if fired == 0 {
		b.Fatal("nothing fired: the benchmark measures nothing")
	}
}
