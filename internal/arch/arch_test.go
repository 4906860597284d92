package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

const module = "github.com/llmdoctor/llmdoctor/"

// allowed says which project packages each package may import; a prefix
// ending in "/" covers a tree. A package not listed may import nothing of
// the project. cmd/ (the front ends) may import anything.
var allowed = map[string][]string{
	"collectors/window": {"internal/"},
	"evidence":          {"internal/units"},
	"rules":             {"evidence", "internal/units", "internal/wrap"},
	// Writes docs/rules (go generate ./rules) with the engines the binary
	// registers.
	"rules/gendocs": {"rules", "collectors/sglang", "collectors/vllm"},
	"advisor":       {"evidence", "rules", "internal/units"},
	"report":        {"advisor", "compare", "whatif", "probe", "evidence", "rules", "internal/units", "internal/wrap", "report/chart", "view", "slackkit"},
	// What a person reads of a diagnosis, a checklist and a comparison,
	// decided once for every renderer.
	"view":    {"advisor", "compare", "probe", "evidence", "internal/units"},
	"compare": {"advisor", "evidence"},
	// After the advisor: a simulator calibrated to a diagnosis, replayed
	// through the same pipeline; it annotates the diagnosis's steps.
	"whatif":    {"advisor", "evidence", "rules", "sim", "simrun", "internal/units"},
	"diagnosis": {"collectors/", "evidence", "rules", "advisor", "internal/"},
	// The active probe: it sends requests, scrapes the engine meanwhile
	// and diagnoses each load through the pipeline.
	"probe": {"advisor", "collectors/requests", "collectors/scrape", "collectors/window", "diagnosis", "rules", "internal/redact"},
	// The probe held to servers whose timing is known, and the page it
	// generates.
	"probe/validation":     {"probe", "sim"},
	"probe/validation/gen": {"probe/validation"},
	// The seam: transports and the builder know kinds, never an engine.
	"collectors/engine": {"collectors/window", "evidence"},
	"collectors/scrape": {"collectors/engine", "collectors/window", "internal/"},
	"collectors/prom":   {"collectors/engine", "collectors/window", "internal/"},
	// Engines and exporters register catalogues.
	"collectors/vllm":   {"collectors/engine", "collectors/window"},
	"collectors/sglang": {"collectors/engine", "collectors/window"},
	"collectors/dcgm":   {"collectors/engine", "collectors/window", "evidence"},
	// Routers in front of the engines, attached to their targets as GPUs are.
	"collectors/router": {"collectors/engine", "collectors/window", "evidence"},
	// vLLM's own log format, read into vLLM's names.
	"collectors/logs":     {"collectors/engine", "collectors/vllm", "collectors/sglang", "collectors/window"},
	"collectors/requests": {"evidence"},
	// The built-in serving simulator: scenarios in, exposition out.
	"sim": {},
	// A scenario diagnosed through the real pipeline: the one harness of
	// the demo, the accuracy evaluation and whatif's replays.
	"simrun": {"advisor", "diagnosis", "rules", "sim"},
	// The evaluation against ground truth (the simulator's, an independent
	// simulator's, real cases') and the pages it generates.
	"simrun/accuracy":           {"advisor", "diagnosis", "evidence", "rules", "sim", "simrun"},
	"internal/testkit/promtest": {"internal/testkit"},
	"internal/testkit":          {},
	// Simulated windows as Prometheus data, for tests.
	"sim/simtest":              {"sim", "internal/"},
	"internal/testkit/expogen": {},
	"internal/arch":            {},
	"internal/redact":          {},
	"internal/units":           {},
	"internal/wrap":            {},
	// The example configuration config init writes, embedded.
	"examples": {},
	// SVG charts drawn in Go for the HTML report.
	"report/chart": {"internal/units"},
	// Headless Chromium for tests of the pages.
	"internal/testkit/browsertest": {"internal/testkit"},
	// The Slack kit: the mrkdwn escaper, Slack's limits and the one
	// poster. Below report, which renders with it: it knows neither where
	// a diagnosis came from nor the flags that chose the destination.
	"slackkit":                   {"internal/redact"},
	"internal/testkit/fakeslack": {},
	// The server: a front end like the CLI, on the same pipeline. It
	// implements serve/core's Host and wires its own front ends, which
	// import core, never serve.
	"serve":      {"advisor", "diagnosis", "report", "rules", "evidence", "collectors/", "slackkit", "internal/", "serve/"},
	"serve/core": {"advisor", "report", "slackkit"},
	// The Alertmanager receiver.
	"serve/alertmanager": {"advisor", "diagnosis", "report", "collectors/prom", "slackkit", "serve/core"},
	// The Slack app: the slash command and the buttons.
	"serve/slackapp": {"advisor", "diagnosis", "report", "collectors/prom", "slackkit", "serve/core"},
	// The watch: diagnoses on a schedule, posts what changed and held.
	"serve/watch": {"advisor", "diagnosis", "report", "collectors/prom", "slackkit", "internal/units", "serve/core"},
	// Fake diagnoses and pipeline for the watch's tests and serve's.
	"serve/watch/watchtest": {"advisor", "diagnosis", "evidence", "slackkit", "internal/testkit/fakeslack"},
}

type pkg struct {
	ImportPath string
	Doc        string
	Imports    []string
}

// graph lists each non-test package of the module with its project imports.
func graph(t *testing.T) map[string][]string {
	g, _ := graphDocs(t)
	return g
}

// graphDocs is graph with each package's doc synopsis.
func graphDocs(t *testing.T) (map[string][]string, map[string]string) {
	cmd := exec.Command("go", "list", "-json", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	g := map[string][]string{}
	docs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		g[name] = []string{}
		docs[name] = p.Doc
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				g[name] = append(g[name], strings.TrimPrefix(imp, module))
			}
		}
	}
	return g, docs
}

func permitted(from, to string) bool {
	if strings.HasPrefix(from, "cmd/") {
		return true
	}
	rules, ok := allowed[from]
	if !ok {
		// Subpackages inherit their parent's allowance (internal/testkit/expogen/write).
		for p := from; strings.Contains(p, "/"); {
			p = p[:strings.LastIndex(p, "/")]
			if r, ok := allowed[p]; ok {
				rules = append(append([]string{}, r...), p)
				break
			}
		}
	}
	for _, r := range rules {
		if to == r || (strings.HasSuffix(r, "/") && strings.HasPrefix(to, r)) {
			return true
		}
	}
	return false
}

func TestImportsFlowOneWay(t *testing.T) {
	g := graph(t)
	for from, imps := range g {
		// internal/ holds leaf helpers and test kits only.
		for _, to := range imps {
			if strings.HasPrefix(from, "internal/") && !strings.HasPrefix(to, "internal/") {
				t.Errorf("%s imports %s: a package under internal/ imports nothing of the project outside it", from, to)
			}
		}
		if _, ok := allowed[from]; !ok && !strings.HasPrefix(from, "cmd/") && !strings.Contains(from, "/") {
			t.Errorf("%s is not placed in a layer: add it to allowed in internal/arch", from)
		}
		for _, to := range imps {
			if !permitted(from, to) {
				t.Errorf("%s imports %s, against the flow (see docs/architecture.md)", from, to)
			}
		}
	}
}

// The checker itself must catch an import against the flow.
func TestPermittedRefusesBackEdges(t *testing.T) {
	for _, e := range [][2]string{{"evidence", "rules"}, {"rules", "advisor"}, {"advisor", "report"},
		{"collectors/scrape", "collectors/vllm"}, {"collectors/prom", "collectors/sglang"}, {"report", "collectors/engine"},
		{"collectors/vllm", "rules"}, {"sim", "collectors/vllm"}} {
		if permitted(e[0], e[1]) {
			t.Errorf("%s → %s was permitted", e[0], e[1])
		}
	}
	if !permitted("rules", "evidence") || !permitted("cmd/llmdoctor", "report") || !permitted("internal/testkit/expogen/write", "internal/testkit/expogen") {
		t.Error("a forward edge was refused")
	}
}

const begin, end = "<!-- import graph: begin -->", "<!-- import graph: end -->"

// flowOrder lists packages so that each comes after every package it
// imports (ties by name): the order data flows through the project.
func flowOrder(g map[string][]string) []string {
	rank := map[string]int{}
	var depth func(string) int
	depth = func(n string) int {
		if r, ok := rank[n]; ok {
			return r
		}
		rank[n] = 0 // a cycle would be caught by the flow test
		r := 0
		for _, to := range g[n] {
			r = max(r, depth(to)+1)
		}
		rank[n] = r
		return r
	}
	names := make([]string, 0, len(g))
	for n := range g {
		depth(n)
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := names[i], names[j]
		// Front ends and test support after the product they drive.
		if ka, kb := kind(a), kind(b); ka != kb {
			return ka < kb
		}
		if rank[a] != rank[b] {
			return rank[a] < rank[b]
		}
		return a < b
	})
	return names
}

// kind sorts the product first, then its front ends, then helpers and
// test support.
func kind(n string) int {
	switch {
	case strings.HasPrefix(n, "internal/"), strings.HasSuffix(n, "test"):
		return 2
	case strings.HasPrefix(n, "cmd/"):
		return 1
	}
	return 0
}

// The package table in docs/architecture.md is generated from go list: each
// package, in the order data flows, with its job (its doc comment's first
// sentence) and what of the project it imports.
func TestArchitectureDocGraph(t *testing.T) {
	g, docs := graphDocs(t)
	var b strings.Builder
	b.WriteString(begin + "\n\n| package | its job | imports |\n|---|---|---|\n")
	for _, n := range flowOrder(g) {
		if docs[n] == "" {
			t.Errorf("%s has no package doc comment: say its job in one sentence", n)
		}
		imps := append([]string{}, g[n]...)
		sort.Strings(imps)
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", n, strings.ReplaceAll(docs[n], "|", "\\|"), strings.Join(imps, ", "))
	}
	b.WriteString("\n" + end)
	path := filepath.Join("..", "..", "docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %s … %s markers", path, begin, end)
	}
	fresh := string(doc[:i]) + b.String() + string(doc[j+len(end):])
	if fresh == string(doc) {
		return
	}
	if *testkit.Update {
		if err := os.WriteFile(path, []byte(fresh), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the package table in docs/architecture.md is stale: run go test ./internal/arch -update")
}
