// Command gen writes the validation section of docs/probe.md from the
// recorded probes; with -record it first probes the built-in simulator's
// cases live (a few minutes) and records them. llm-d-inference-sim's
// probes are recorded by probe/testdata/peer/record.sh.
package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmdoctor/llmdoctor/probe/validation"
)

func main() {
	record := flag.Bool("record", false, "probe the built-in simulator's cases live and record them first")
	root := flag.String("root", "../..", "the repository's root")
	flag.Parse()
	if err := run(*root, *record); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(root string, record bool) error {
	own := filepath.Join(root, "probe", "testdata", "own")
	if record {
		if err := os.MkdirAll(own, 0o755); err != nil {
			return err
		}
		for _, c := range validation.OwnCases {
			fmt.Fprintln(os.Stderr, "probing", c.Name)
			res, err := validation.ProbeOwn(context.Background(), c)
			if err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
			if err := write(filepath.Join(own, c.Name+".json.gz"), res); err != nil {
				return err
			}
		}
	}
	section, err := validation.Section(root)
	if err != nil {
		return err
	}
	path := filepath.Join(root, "docs", "probe.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := validation.Splice(string(doc), section)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

func write(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	z, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	enc := json.NewEncoder(z)
	if err := enc.Encode(v); err != nil {
		_ = f.Close() // the encode error is the one to report
		return err
	}
	if err := z.Close(); err != nil {
		_ = f.Close() // the gzip error is the one to report
		return err
	}
	return f.Close()
}
