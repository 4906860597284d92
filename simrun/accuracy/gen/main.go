// Command gen writes the pages package accuracy generates, or one scenario
// of the accuracy set as a file for llmdoctor demo --scenario:
//
//	go run ./simrun/accuracy/gen -scenarios docs/scenarios.md -accuracy docs/accuracy.md
//	go run ./simrun/accuracy/gen -draw 17 -o /tmp/random-017.yaml
//
// go generate ./simrun/accuracy runs the first; the accuracy page diagnoses
// three sets of 240 scenarios and takes a few minutes.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/simrun/accuracy"
)

func main() {
	var (
		scenarios = flag.String("scenarios", "", "write the scenario → verdict page (docs/scenarios.md) to this file")
		page      = flag.String("accuracy", "", "write the accuracy page (docs/accuracy.md) to this file")
		draw      = flag.Int("draw", -1, "write scenario N of the accuracy set as a scenario file (with -o)")
		out       = flag.String("o", "", "the scenario file -draw writes")
	)
	flag.Parse()
	if err := run(*scenarios, *page, *draw, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(scenarios, page string, draw int, out string) error {
	if flag.NArg() > 0 || scenarios == "" && page == "" && draw < 0 {
		return fmt.Errorf("usage: gen [-scenarios FILE] [-accuracy FILE] [-draw N -o FILE]")
	}
	if draw >= 0 {
		if out == "" {
			return fmt.Errorf("-draw %d needs -o FILE", draw)
		}
		truth, err := accuracy.WriteScenario(draw, out)
		if err != nil {
			return err
		}
		fmt.Printf("wrote %s: %s\n", out, truth)
		if scenarios == "" && page == "" {
			return nil
		}
	}
	set, err := rules.Load()
	if err != nil {
		return err
	}
	cfg := &rules.Config{}
	for _, x := range []struct {
		path string
		make func(*rules.Set, *rules.Config) (string, error)
	}{{scenarios, accuracy.ScenariosPage}, {page, accuracy.Page}} {
		if x.path == "" {
			continue
		}
		s, err := x.make(set, cfg)
		if err != nil {
			return err
		}
		if err := os.WriteFile(x.path, []byte(s), 0o644); err != nil {
			return err
		}
	}
	return nil
}
