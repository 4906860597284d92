package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"github.com/llmdoctor/llmdoctor/report"
)

// outputFlags are --format, --output and --color, checked against the
// report package's registry of renderers: the one place a command learns
// which formats exist. Bare --output slack (no path) posts to Slack, with
// the flags in slack.
type outputFlags struct {
	format  string
	outputs []string
	color   string
	slack   slackFlags
}

func (o *outputFlags) add(f *pflag.FlagSet, doc report.Document) {
	f.StringVar(&o.format, "format", "text", "output format on stdout: "+orList(report.Names(doc)))
	f.StringArrayVar(&o.outputs, "output", nil, "also write FORMAT=PATH, FORMAT one of "+strings.Join(report.Names(doc), ", ")+
		" (e.g. json="+doc.String()+".json); slack alone posts to Slack (docs/slack.md); repeatable")
	o.color = "auto"
	f.Var(choice{&o.color, []string{"auto", "always", "never"}}, "color", "colour: auto, always or never (NO_COLOR is honoured)")
	o.slack.add(f)
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
// --color allows, files never in colour.
func (o *outputFlags) write(stdout io.Writer, outs []output, render func(report.Renderer, io.Writer, report.Options) error) error {
	for _, out := range outs {
		if out.path == "" {
			if err := render(out.r, stdout, report.Options{Color: o.color, IsTerminal: isTerminal(stdout)}); err != nil {
				return err
			}
			continue
		}
		f, err := os.Create(out.path)
		if err != nil {
			return &exitError{2, fmt.Sprintf("--output: %v", err)}
		}
		err = render(out.r, f, report.Options{Color: "never"})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return &exitError{2, fmt.Sprintf("--output %s: %v", out.path, err)}
		}
	}
	return nil
}
