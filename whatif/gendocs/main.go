// Command gendocs runs whatif's validation and writes docs/whatif.md:
//
//	go run ./whatif/gendocs docs/whatif.md
//
// go generate ./whatif runs it; it simulates a few hundred windows and
// takes minutes.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/whatif"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: gendocs FILE")
	}
	set, err := rules.Load()
	if err != nil {
		return err
	}
	page, err := whatif.Page(context.Background(), whatif.Options{Rules: set, Config: &rules.Config{}})
	if err != nil {
		return err
	}
	return os.WriteFile(args[0], []byte(page), 0o644)
}
