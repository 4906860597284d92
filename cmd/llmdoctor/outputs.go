package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/report"
)

// outputFlags are --format, --output, --color and --width, checked against the
// report package's registry of renderers: the one place a command learns
// which formats exist. Bare --output slack (no path) posts to Slack, with
// the flags in slack.
type outputFlags struct {
	format  string
	outputs []string
	color   string
	width   widthFlag
	details bool
	slack   slackFlags
}

func (o *outputFlags) add(f *pflag.FlagSet, doc report.Document) {
	f.StringVar(&o.format, "format", "text", "output format on stdout: "+orList(report.Names(doc)))
	f.StringArrayVar(&o.outputs, "output", nil, "also write FORMAT=PATH, FORMAT one of "+strings.Join(report.Names(doc), ", ")+
		" (e.g. json="+doc.String()+".json); slack alone posts to Slack (docs/slack.md); repeatable")
	o.color = "auto"
	f.Var(choice{&o.color, []string{"auto", "always", "never"}}, "color", "colour: auto, always or never (NO_COLOR is honoured)")
	f.Var(&o.width, "width", fmt.Sprintf("columns of the text report: %d or more, wider taken as %d (default the terminal's width, else 80)", minWidth, maxWidth))
	switch doc {
	case report.DiagnosisDoc:
		f.BoolVarP(&o.details, "details", "v", false, "the whole text report: every finding with its evidence, sources and docs, every check that could not run, the curves (a text --output file always has it)")
	case report.ProbeDoc:
		f.BoolVarP(&o.details, "details", "v", false, "the whole text report: the diagnosis's every finding with its evidence and sources (a text --output file always has it)")
	default:
		f.BoolVarP(&o.details, "details", "v", false, "the whole text checklist: every item with its message, and what each unchecked one needs (a text --output file always has it)")
	}
	o.slack.add(f)
}

// The text report's width: narrower than minWidth the report cannot be
// laid out (--width refuses it; a narrower terminal gets minWidth), wider
// than maxWidth lines are too long to read (both are taken as maxWidth).
const minWidth, maxWidth = 60, 200

// widthFlag is --width: 0 until given.
type widthFlag struct{ n int }

func (w *widthFlag) String() string {
	if w.n == 0 {
		return ""
	}
	return strconv.Itoa(w.n)
}

func (w *widthFlag) Type() string { return "columns" }

func (w *widthFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < minWidth {
		return fmt.Errorf("want a width of %d columns or more", minWidth)
	}
	w.n = min(n, maxWidth)
	return nil
}

// textWidth is the width of the report on stdout: --width when given,
// else the terminal's (kept within minWidth..maxWidth) when stdout is one,
// else 80.
func (o *outputFlags) textWidth(stdout io.Writer) int { return o.width.columns(stdout) }

// columns is the width given, else the terminal's, else 80.
func (w widthFlag) columns(stdout io.Writer) int {
	if w.n > 0 {
		return w.n
	}
	if f, ok := stdout.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		if cols, _, err := term.GetSize(f.Fd()); err == nil && cols > 0 {
			return min(max(cols, minWidth), maxWidth)
		}
	}
	return 80
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// output is one report to write: stdout when path is empty.
type output struct {
	r    report.Renderer
	path string
}

// parse checks --format and every --output against the renderers that
// write doc, before anything is read.
func (o *outputFlags) parse(doc report.Document) ([]output, error) {
	names := report.Names(doc)
	lookup := func(name string) (report.Renderer, bool) {
		r, ok := report.Lookup(name)
		return r, ok && r.Renders(doc)
	}
	r, ok := lookup(o.format)
	if !ok {
		return nil, usageErr("--format %q: want %s", o.format, strings.Join(names, ", "))
	}
	outs := []output{{r: r}}
	o.slack.post = false
	for _, x := range o.outputs {
		if x == slackPost {
			o.slack.post = true
			continue
		}
		name, path, ok := strings.Cut(x, "=")
		r, known := lookup(name)
		if !ok || !known || path == "" {
			return nil, usageErr("--output %q: want FORMAT=PATH with FORMAT one of %s", x, strings.Join(names, ", "))
		}
		outs = append(outs, output{r, path})
	}
	return outs, o.slack.check()
}

// isTerminal says whether w is a terminal: an *os.File that is one.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// write renders every output: stdout in colour when it is a terminal and
// --color allows, as wide as textWidth, in full with --details; files never
// in colour, as wide as --width or 80, always in full.
func (o *outputFlags) write(stdout io.Writer, outs []output, render func(report.Renderer, io.Writer, report.Options) error) error {
	for _, out := range outs {
		if out.path == "" {
			if err := render(out.r, stdout, report.Options{Color: o.color, IsTerminal: isTerminal(stdout), Width: o.textWidth(stdout), Details: o.details}); err != nil {
				return err
			}
			continue
		}
		f, err := os.Create(out.path)
		if err != nil {
			return usageErr("--output: %w", err)
		}
		// A file is the record, not a first screen: whole.
		err = render(out.r, f, report.Options{Color: "never", Width: o.width.n, Details: true})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return usageErr("--output %s: %w", out.path, err)
		}
	}
	return nil
}
