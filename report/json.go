// Package report renders a diagnosis or a checklist. Renderers print what
// package view decided (verdict, severity, order, first screen, gaps, the
// checklist's gate) and decide none of it again; each format registers
// itself by name (see Renderer).
package report

import (
	"encoding/json"
	"io"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/probe"
)

func init() { Register(jsonRenderer{}) }

// jsonRenderer writes the JSON contracts scripts rely on.
type jsonRenderer struct{}

func (jsonRenderer) Name() string { return "json" }
func (jsonRenderer) Describe() string {
	return "the JSON contract scripts rely on (schemas llmdoctor.diagnosis/v1, llmdoctor.checklist/v1 and llmdoctor.probe/v1)"
}
func (jsonRenderer) Renders(Document) bool                                        { return true }
func (jsonRenderer) Diagnosis(w io.Writer, d *advisor.Diagnosis, _ Options) error { return JSON(w, d) }
func (jsonRenderer) Probe(w io.Writer, r *probe.Result, _ Options) error          { return ProbeJSON(w, r) }

func (jsonRenderer) Checklist(w io.Writer, c *advisor.Checklist, _ Options) error {
	return ChecklistJSON(w, c)
}

// JSON writes the diagnosis in its contract form (schema llmdoctor.diagnosis/v1).
func JSON(w io.Writer, d *advisor.Diagnosis) error { return writeJSON(w, d) }

// ChecklistJSON writes the checklist contract (schema llmdoctor.checklist/v1).
func ChecklistJSON(w io.Writer, c *advisor.Checklist) error { return writeJSON(w, c) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
