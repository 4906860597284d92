// Command gendocs writes the rule catalogue and one page per built-in rule
// and checklist item into a directory, as docs/rules holds them:
//
//	go run ./rules/gendocs docs/rules
//
// go generate ./rules runs it.
package main

import (
	"fmt"
	"os"

	"github.com/llmdoctor/llmdoctor/rules"

	// Rule pages say how each registered engine's users obtain a field:
	// the engines the binary registers.
	_ "github.com/llmdoctor/llmdoctor/collectors/sglang"
	_ "github.com/llmdoctor/llmdoctor/collectors/vllm"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: gendocs DIR")
	}
	set, err := rules.Load()
	if err != nil {
		return err
	}
	checklist, err := rules.ChecklistItems()
	if err != nil {
		return err
	}
	return rules.WriteDocs(set, checklist, args[0])
}
