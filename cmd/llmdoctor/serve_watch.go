package main

import (
	"github.com/spf13/pflag"

	// Imported as server: robust_secrets_test.go declares a func serve in
	// this package.
	server "github.com/llmdoctor/llmdoctor/serve"
)

// addWatchFlags declares the flags of watch-and-post on serve's flag set,
// filling c. serve.go calls it before the flags are parsed (serve.yaml
// keys are the flag names) and passes c as serve.Config.Watch on every
// run: registerWatch runs the watch when --watch is given, and refuses
// the other watch flags without it. --every and --hold default to zero
// here, the server's defaults then apply, so that a value given without
// --watch can be told from the default and refused.
func addWatchFlags(f *pflag.FlagSet, c *server.WatchConfig) {
	f.BoolVar(&c.Enabled, "watch", false, "diagnose every target every --every and post to Slack when a verdict changes and the change held for --hold runs")
	f.DurationVar(&c.Every, "every", 0, "with --watch: how often to diagnose every target (default 5m)")
	f.IntVar(&c.Hold, "hold", 0, "with --watch: consecutive runs a change must be seen in before it is posted; 1 posts at once (default 2)")
	f.StringVar(&c.StateFile, "state-file", "", "with --watch: file keeping what was posted, so that a restart does not post it again (without it every start is a cold start)")
	f.StringVar(&c.Selector, "watch-selector", "", `with --watch: label matchers added to --selector for the watch's diagnoses only, e.g. namespace="prod"`)
}
