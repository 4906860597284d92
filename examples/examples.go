// Package examples holds the files the quick start and the tests read:
// 15-minute windows as vLLM prints them, and the commented configuration
// llmdoctor config init writes.
package examples

import _ "embed"

// Config is llmdoctor.yaml with every setting at its default, each
// explained, and an example of each commented out.
//
//go:embed llmdoctor.yaml
var Config []byte
