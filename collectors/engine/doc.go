package engine

import (
	"fmt"
	"sort"
	"strings"
)

// Doc renders the registered engines' catalogues as the page
// docs/engines.md: what llmdoctor reads from each engine, under which names,
// and which flag each knob is.
func Doc() string {
	var b strings.Builder
	b.WriteString("# Serving engines\n\n")
	b.WriteString("<!-- Generated from the engines' catalogues by `go test ./collectors/engine -update`; edit the catalogue. -->\n\n")
	b.WriteString("llmdoctor finds the engine from the metric names a target exposes; `--engine` reads one only.\n")
	b.WriteString("Rules read the same evidence whichever engine filled it; where an engine has no metric for a\n")
	b.WriteString("field, its gaps say what the engine offers instead.\n")
	for _, e := range Engines() {
		fmt.Fprintf(&b, "\n## %s (`%s`)\n\n", e.Title, e.Name)
		fmt.Fprintf(&b, "Replicas and ranks: a target's members are split by `%s`.", strings.Join(e.Members, "`, `"))
		if len(e.Copies) > 0 {
			fmt.Fprintf(&b, " Series that differ only in `%s` are copies of one number and are read once.", strings.Join(e.Copies, "`, `"))
		}
		b.WriteString("\n\n| what | names, newest first | kind | unit | meaning | to get it |\n|---|---|---|---|---|---|\n")
		for _, m := range e.Catalogue {
			names := "`" + strings.Join(m.Names, "`<br>`") + "`"
			if len(m.Match) > 0 {
				var sel []string
				for i := 0; i+1 < len(m.Match); i += 2 {
					sel = append(sel, fmt.Sprintf("%s=%q", m.Match[i], m.Match[i+1]))
				}
				names += "<br>where `" + strings.Join(sel, ", ") + "`"
			}
			if len(m.Exclude) > 0 {
				var sel []string
				for i := 0; i+1 < len(m.Exclude); i += 2 {
					sel = append(sel, fmt.Sprintf("%s=%q", m.Exclude[i], m.Exclude[i+1]))
				}
				names += "<br>without `" + strings.Join(sel, ", ") + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", m.Key, names, m.Kind, m.Unit, cell(m.Meaning), cell(m.Obtain))
		}
		b.WriteString("\n| knob (as rules name it) | flag |\n|---|---|\n")
		knobs := make([]string, 0, len(e.Knobs))
		for k := range e.Knobs {
			knobs = append(knobs, k)
		}
		sort.Strings(knobs)
		for _, k := range knobs {
			f := e.Knobs[k]
			if f == "" {
				f = "none"
			}
			fmt.Fprintf(&b, "| `{%s}` | %s |\n", k, cell(f))
		}
	}
	b.WriteString("\n## Adding an engine\n\n")
	b.WriteString("An engine is one package under `collectors/` that registers an `engine.Engine` in its `init`:\n")
	b.WriteString("its catalogue under the canonical keys, member and copy labels, how its users obtain each\n")
	b.WriteString("evidence field, and its flag for each knob. Add its tests beside it (a test fails without\n")
	b.WriteString("them), blank-import it in `diagnosis/engines.go`, teach the simulator its names, and\n")
	b.WriteString("regenerate this page. See `docs/architecture.md`.\n")
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
