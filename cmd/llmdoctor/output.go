package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// printf writes a command's output. A write that fails (a closed pipe, a
// full disk) fails the command: its output would be cut short unseen.
func printf(w io.Writer, format string, a ...any) error {
	if _, err := fmt.Fprintf(w, format, a...); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	return nil
}

// note writes a line of progress or a note to stderr. Nothing can be done
// when stderr itself fails, and the command's output is unharmed, so its
// error is dropped here and only here.
func note(w io.Writer, format string, a ...any) {
	_, _ = fmt.Fprintf(w, format, a...)
}

// hide hides flags declared on f; a name not declared is a bug in this
// command's code, and fails every run of it at once.
func hide(f *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if err := f.MarkHidden(n); err != nil {
			panic(fmt.Errorf("hiding flag --%s: %w", n, err))
		}
	}
}
