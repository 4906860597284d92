package report

import (
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/probe"
)

// Document is what a renderer is asked to write.
type Document int

// Documents.
const (
	// DiagnosisDoc is an advisor.Diagnosis (diagnose, demo).
	DiagnosisDoc Document = iota + 1
	// ChecklistDoc is an advisor.Checklist (checklist).
	ChecklistDoc
	// ProbeDoc is a probe.Result (probe).
	ProbeDoc
)

func (d Document) String() string {
	switch d {
	case DiagnosisDoc:
		return "diagnosis"
	case ChecklistDoc:
		return "checklist"
	case ProbeDoc:
		return "probe"
	}
	return fmt.Sprintf("document %d", int(d))
}

// Options control rendering; renderers that have no use for one ignore it.
type Options struct {
	// Color: auto (terminal and NO_COLOR unset), always or never.
	Color string
	// Width of a text report; 80 when zero.
	Width int
	// Details: a text diagnosis in full (every finding with its evidence,
	// sources and docs, every gap, the curves); else its first screen.
	Details bool
	// IsTerminal tells auto whether the writer is a terminal.
	IsTerminal bool
	// Nav are links an HTML page shows above the report (serve's pages).
	Nav []Link
	// Refresh reloads an HTML page every so many seconds; 0 never.
	Refresh int
	// TargetName names the one target of an HTML page in its heading and
	// title instead of its labels (serve: a run narrowed by a selector).
	TargetName string
}

// Renderer writes diagnoses, checklists or both in one format. Each lives
// in a file of its own in this package and registers itself from init, so
// that a new format is one file and its test.
type Renderer interface {
	// Name is what --format and --output NAME=PATH call it.
	Name() string
	// Describe says in a line what the format is for.
	Describe() string
	// Renders reports whether the renderer writes doc; the method for a
	// document it does not write returns *UnsupportedError.
	Renders(doc Document) bool
	Diagnosis(w io.Writer, d *advisor.Diagnosis, o Options) error
	Checklist(w io.Writer, c *advisor.Checklist, o Options) error
	Probe(w io.Writer, r *probe.Result, o Options) error
}

// UnsupportedError is a renderer asked for a document it does not write.
type UnsupportedError struct {
	Renderer string
	Document Document
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("the %s format does not render a %s", e.Renderer, e.Document)
}

var (
	mu        sync.RWMutex
	renderers = map[string]Renderer{}
)

// Register adds a renderer. Registering a name twice is a programming
// error and panics.
func Register(r Renderer) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := renderers[r.Name()]; dup {
		panic("report: renderer " + r.Name() + " registered twice")
	}
	renderers[r.Name()] = r
}

// Lookup returns the renderer registered under name.
func Lookup(name string) (Renderer, bool) {
	mu.RLock()
	defer mu.RUnlock()
	r, ok := renderers[name]
	return r, ok
}

// All returns every registered renderer in Names order.
func All() []Renderer {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Renderer, 0, len(renderers))
	for _, r := range renderers {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i].Name(), out[j].Name()) })
	return out
}

// Names lists the renderers that write doc: text and json first (the
// default and the contract), then the rest in alphabetical order.
func Names(doc Document) []string {
	var out []string
	for _, r := range All() {
		if r.Renders(doc) {
			out = append(out, r.Name())
		}
	}
	return out
}

// first are the formats every document has, listed ahead of the rest.
var first = map[string]int{"text": 1, "json": 2}

func less(a, b string) bool {
	ra, rb := first[a], first[b]
	switch {
	case ra != 0 && rb != 0:
		return ra < rb
	case ra != 0 || rb != 0:
		return ra != 0
	}
	return a < b
}
