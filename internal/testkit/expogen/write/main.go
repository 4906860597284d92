// Command write regenerates the example snapshots under examples/.
//
//	go run ./internal/testkit/expogen/write examples
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmdoctor/llmdoctor/internal/testkit/expogen"
)

func main() {
	dir := "examples"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	for rel, content := range expogen.Files() {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
