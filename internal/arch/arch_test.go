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
	"advisor":           {"evidence", "rules", "internal/units"},
	"report":            {"advisor", "compare", "whatif", "evidence", "rules", "internal/units", "internal/wrap", "report/chart"},
	"compare":           {"advisor", "evidence"},
	// After the advisor: a simulator calibrated to a diagnosis, replayed
	// through the same pipeline; it annotates the diagnosis's steps.
	"whatif":    {"advisor", "diagnosis", "evidence", "rules", "sim", "internal/units"},
	"diagnosis": {"collectors/", "evidence", "rules", "advisor", "internal/"},
	// The seam: transports and the builder know kinds, never an engine.
	"collectors/engine": {"collectors/window", "evidence"},
	"collectors/scrape": {"collectors/engine", "collectors/window", "internal/"},
	"collectors/prom":   {"collectors/engine", "collectors/window", "internal/"},
	// Engines and exporters register catalogues.
	"collectors/vllm":   {"collectors/engine", "collectors/window"},
	"collectors/sglang": {"collectors/engine", "collectors/window"},
	"collectors/dcgm":   {"collectors/engine", "collectors/window", "evidence"},
	// vLLM's own log format, read into vLLM's names.
	"collectors/logs":     {"collectors/engine", "collectors/vllm", "collectors/sglang", "collectors/window"},
	"collectors/requests": {"evidence"},
	// The built-in serving simulator: scenarios in, exposition out.
	"sim":                       {},
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
	// Posting what report rendered: it knows neither where a diagnosis
	// came from nor the flags that chose the destination.
	"slackkit":                   {"report", "internal/redact"},
	"internal/testkit/fakeslack": {},
	// The server: a front end like the CLI, on the same pipeline.
	"serve": {"advisor", "diagnosis", "report", "rules", "evidence", "collectors/", "slackkit", "internal/"},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// graph lists each non-test package of the module with its project imports.
func graph(t *testing.T) map[string][]string {
	cmd := exec.Command("go", "list", "-json", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	g := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		g[name] = []string{}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				g[name] = append(g[name], strings.TrimPrefix(imp, module))
			}
		}
	}
	return g
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

// The import graph in docs/architecture.md is generated from go list.
func TestArchitectureDocGraph(t *testing.T) {
	g := graph(t)
	names := make([]string, 0, len(g))
	for n := range g {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(begin + "\n\n```\n")
	for _, n := range names {
		imps := append([]string{}, g[n]...)
		sort.Strings(imps)
		if len(imps) == 0 {
			fmt.Fprintf(&b, "%s\n", n)
			continue
		}
		fmt.Fprintf(&b, "%s → %s\n", n, strings.Join(imps, ", "))
	}
	b.WriteString("```\n\n" + end)
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
	t.Errorf("the import graph in docs/architecture.md is stale: run go test ./internal/arch -update")
}
