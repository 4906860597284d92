// Package report renders a diagnosis. Renderers read the diagnosis and never
// change what it says.
package report

import (
	"encoding/json"
	"io"

	"github.com/llmdoctor/llmdoctor/advisor"
)

// JSON writes the diagnosis in its contract form (schema llmdoctor.diagnosis/v1).
func JSON(w io.Writer, d *advisor.Diagnosis) error { return writeJSON(w, d) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
