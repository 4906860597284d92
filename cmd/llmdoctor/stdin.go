package main

import (
	"errors"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
)

// stdinName is how input read from "-" is named in reports and errors.
const stdinName = "stdin"

// stdinUse is a file flag and the paths it was given.
type stdinUse struct {
	flag  string
	paths []string
}

// oneStdin refuses a run in which standard input is asked for twice: the
// first reader would leave nothing for the second.
func oneStdin(uses ...stdinUse) error {
	var readers []string
	for _, u := range uses {
		for _, p := range u.paths {
			if p == "-" {
				readers = append(readers, u.flag)
			}
		}
	}
	if len(readers) < 2 {
		return nil
	}
	var flags []string
	for _, f := range readers {
		if len(flags) == 0 || flags[len(flags)-1] != f {
			flags = append(flags, f)
		}
	}
	if len(flags) == 1 {
		return usageErr("%s - is given %d times, but standard input can be read only once: give all but one a file", flags[0], len(readers))
	}
	list, all := strings.Join(flags[:len(flags)-1], ", ")+" and "+flags[len(flags)-1], "all"
	if len(flags) == 2 {
		all = "both"
	}
	return usageErr("%s %s read standard input (-), which can be read only once: give all but one of them a file", list, all)
}

// stdinUses lists the file flags of diagnose and checklist. TLS files are
// refused as "-": they are PEM files read by the TLS setup, not a stream.
func (o *diagnoseOpts) stdinUses() error {
	for _, f := range []struct{ flag, path string }{{"--prom-ca", o.prom.ca}, {"--prom-cert", o.prom.cert}, {"--prom-key", o.prom.key}} {
		if f.path == "-" {
			return usageErr("%s does not read standard input: give the PEM file's path", f.flag)
		}
	}
	return oneStdin(append([]stdinUse{
		{"--config", []string{o.configPath}},
		{"--prom-token-file", []string{o.prom.tokenFile}},
		{"--snapshot", o.snapshots},
		{"--log", []string{o.logFile}},
		{"--bench", o.benchFiles},
		{"--requests", o.requestFiles},
	}, o.out.slack.stdinUses()...)...)
}

// input is standard input for one run: what "-" reads. A flag whose file
// is read whole (the config, the bearer token, a scenario) reads it through
// read, once per run, so that a flag read twice (the bearer token: once to
// know what to mask, once to send) sees it both times. The pipeline streams
// it instead (Sources.Stdin): oneStdin has made sure only one flag asks.
// (A snapshot "-" is the one exception: collectors/scrape reads it from the
// process's own os.Stdin, so in-process runs with another reader have it
// refused by the pipeline.)
type input struct {
	r    io.Reader
	once sync.Once
	data []byte
	err  error
}

func newInput(r io.Reader) *input { return &input{r: r} }

// reader is the stream itself, for the pipeline; nil when the run has none.
func (in *input) reader() io.Reader {
	if in == nil {
		return nil
	}
	return in.r
}

// read reads a small file whole, or standard input for "-".
func (in *input) read(path string) ([]byte, error) {
	if path != "-" {
		return os.ReadFile(path)
	}
	if in == nil || in.r == nil {
		return nil, errors.New("no standard input")
	}
	in.once.Do(func() { in.data, in.err = io.ReadAll(in.r) })
	return in.data, in.err
}

// loadRulesFlag is loadRules for a user's --config, where "-" reads the
// configuration from standard input (loadRules takes "-" as no config).
func loadRulesFlag(in *input, configPath string, dirs []string) (*rules.Set, *rules.Config, error) {
	if configPath != "-" {
		return loadRules(configPath, dirs)
	}
	set, _, err := loadRules("-", dirs)
	if err != nil {
		return nil, nil, err
	}
	data, err := in.read("-")
	if err != nil {
		return nil, nil, usageErr("--config -: %w", err)
	}
	cfg, err := rules.ParseConfig(stdinName, data)
	if err != nil {
		return nil, nil, configError(stdinName, err)
	}
	if err := validateConfig(stdinName, cfg, set); err != nil {
		return nil, nil, err
	}
	return set, cfg, nil
}

// loadScenario is sim.Load, with "-" reading a scenario file from
// standard input.
func loadScenario(in *input, nameOrFile string) (*sim.Scenario, error) {
	if nameOrFile != "-" {
		return sim.Load(nameOrFile)
	}
	data, err := in.read("-")
	if err != nil {
		return nil, err
	}
	return sim.ParseScenario(stdinName, data)
}
