package simrun

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
)

func builtin(t *testing.T) Options {
	t.Helper()
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	return Options{Rules: set, Config: &rules.Config{}}
}

func load(t *testing.T, name, engine string) *sim.Scenario {
	t.Helper()
	sc, err := sim.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	sc.Exposes = engine
	return sc
}

func accepts(sc *sim.Scenario, got string) bool {
	return got == sc.Expect || slices.Contains(sc.Also, got)
}

// loopbackAddr is where the loopback scrape served; in process, the
// simulator has no address.
var loopbackAddr = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

func asJSON(t *testing.T, d *advisor.Diagnosis) string {
	t.Helper()
	b, err := json.MarshalIndent(d, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return loopbackAddr.ReplaceAllString(string(b), "simulator")
}

// The loopback scrape over TCP and the in-process one give the same
// diagnosis, to the last number and note, on both engines' names.
func TestLoopbackAgreesInProcess(t *testing.T) {
	o := builtin(t)
	for _, c := range []struct{ name, engine string }{
		{"queue-bound", "vllm"}, {"kv-capacity", "vllm"}, {"decode-bound", "sglang"},
	} {
		sc := load(t, c.name, c.engine)
		in, err := Diagnose(context.Background(), sc, o)
		if err != nil {
			t.Fatal(err)
		}
		lo := o
		lo.Loopback = true
		tcp, err := Diagnose(context.Background(), sc, lo)
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Targets) != 1 || !accepts(sc, in.Targets[0].Primary.Bottleneck) {
			t.Fatalf("%s on %s names: %d targets, want its expected verdict %s", c.name, c.engine, len(in.Targets), sc.Expect)
		}
		if !strings.HasPrefix(in.Notes[0], "simulated scenario "+c.name+": ") {
			t.Errorf("%s: first note %q does not name the scenario", c.name, in.Notes[0])
		}
		if len(in.Sources) != 2 || !strings.HasSuffix(in.Sources[1].URL, "/dcgm/metrics") {
			t.Errorf("%s: sources %+v, want the engine and its GPU exporter", c.name, in.Sources)
		}
		if a, b := asJSON(t, in), asJSON(t, tcp); a != b {
			t.Errorf("%s on %s names: the loopback scrape's diagnosis differs from the in-process one:\n%s\n---\n%s", c.name, c.engine, a, b)
		}
	}
}

// A scenario with a fitted step cost (a whatif calibration) models no GPU:
// only the engine is scraped, and the window is still diagnosed.
func TestFittedCostServesNoGPU(t *testing.T) {
	sc := load(t, "queue-bound", "vllm")
	sc.Engine.GPUBlocks = 4096
	sc.Engine.Cost = &sim.StepCost{Fixed: 0.002, Memory: 0.010, PerToken: 1e-5, PerContext: 1e-7}
	d, err := Diagnose(context.Background(), sc, builtin(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Sources) != 1 || strings.Contains(d.Sources[0].URL, "dcgm") {
		t.Errorf("sources %+v, want the engine alone", d.Sources)
	}
	if len(d.Targets) != 1 {
		t.Fatalf("%d targets", len(d.Targets))
	}
}

// A scenario the simulator cannot run is an error, not a panic.
func TestBadScenario(t *testing.T) {
	sc := load(t, "queue-bound", "vllm")
	sc.Exposes = "tgi"
	_, err := Diagnose(context.Background(), sc, Options{})
	if err == nil || !strings.Contains(err.Error(), `exposes "tgi"`) {
		t.Errorf("a scenario exposing an unknown engine's names: %v", err)
	}
}

// The demo end to end: simulator warm-up, 31 scrapes, diagnosis; over
// loopback TCP as the demo does it and in process as the harnesses do.
func BenchmarkDiagnose(b *testing.B) {
	set, err := rules.Load()
	if err != nil {
		b.Fatal(err)
	}
	sc, err := sim.Load("queue-bound")
	if err != nil {
		b.Fatal(err)
	}
	for _, loopback := range []bool{true, false} {
		name := "in-process"
		if loopback {
			name = "loopback"
		}
		b.Run(name, func(b *testing.B) {
			o := Options{Rules: set, Config: &rules.Config{}, Loopback: loopback}
			for i := 0; i < b.N; i++ {
				if _, err := Diagnose(context.Background(), sc, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
