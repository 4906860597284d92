package rules

import (
	"embed"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
)

//go:embed builtin checklist
var builtinFS embed.FS

// BuiltinFS is the embedded rule tree (rule files and their fixture folders).
var BuiltinFS = builtinFS

// embedded parses an embedded rule tree once per process: the files never
// change, a loaded rule is never modified (configuration applies when rules
// are evaluated), and parsing YAML is most of what loading costs.
func embedded(root string) func() ([]*Rule, error) {
	load := sync.OnceValues(func() ([]*Rule, error) { return LoadFS(builtinFS, root, true) })
	return func() ([]*Rule, error) {
		rs, err := load()
		return slices.Clone(rs), err
	}
}

var (
	builtinRules     = embedded("builtin")
	checklistRules   = embedded("checklist")
	measurementRules = embedded("builtin/measurement")
)

// Builtin loads the rules shipped with llmdoctor.
func Builtin() ([]*Rule, error) { return builtinRules() }

// ChecklistItems loads the pre-launch checklist: rules whose firing means the
// item fails.
func ChecklistItems() (*Set, error) {
	rs, err := checklistRules()
	if err != nil {
		return nil, err
	}
	// The measurement rules (benchmark hygiene) are checklist items too.
	hygiene, err := measurementRules()
	if err != nil {
		return nil, err
	}
	return NewSet(rs, hygiene)
}

// Load returns the built-in rules plus the rules in each user directory.
func Load(dirs ...string) (*Set, error) {
	b, err := Builtin()
	if err != nil {
		return nil, err
	}
	all := [][]*Rule{b}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			return nil, fmt.Errorf("rules directory: %w", err)
		}
		u, err := LoadFS(os.DirFS(d), ".", false)
		for _, r := range u {
			r.File = d + "/" + r.File
		}
		if err != nil {
			return nil, prefixFiles(err, d)
		}
		all = append(all, u)
	}
	return NewSet(all...)
}

func prefixFiles(err error, dir string) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = dir + "/" + l
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
}

// LoadConfig reads llmdoctor.yaml.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := ParseConfig(path, data)
	if c != nil {
		c.File = path
	}
	return c, err
}

// ParseConfig reads llmdoctor.yaml from data; name labels its errors.
func ParseConfig(name string, data []byte) (*Config, error) {
	// Knobs left out stay NaN through decoding, so that an explicit 0 can be
	// told from an absent key and refused.
	c := Config{MinSamples: math.NaN(), MinGaugeSamples: math.NaN(), MinShare: math.NaN()}
	// An empty or comment-only file is all defaults (the decoder would
	// zero the knobs and refuse them).
	var doc any
	if err := yaml.Unmarshal(data, &doc); err == nil && doc == nil {
		return &Config{}, nil
	}
	if err := yaml.UnmarshalWithOptions(data, &c, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.Join(strings.Fields(yaml.FormatError(err, false, false)), " "))
	}
	c.src = data
	if c.SLO != (SLO{}) {
		c.SLOFrom = name
	}
	for _, k := range c.knobs() {
		if math.IsNaN(*k.v) {
			*k.v = 0
		} else if *k.v == 0 {
			return nil, &ConfigError{File: name, Key: k.key, Kind: BadValue, Problem: "0 is out of range: want " + k.want}
		}
	}
	return &c, nil
}
