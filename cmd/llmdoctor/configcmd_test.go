package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/llmdoctor/llmdoctor/examples"
	"github.com/llmdoctor/llmdoctor/rules"
)

// The file config init writes names every setting, each at its default,
// and its examples, uncommented, are a valid configuration.
func TestExampleConfig(t *testing.T) {
	text := string(examples.Config)
	cfg, err := rules.ParseConfig("llmdoctor.yaml", examples.Config)
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := validateConfig("llmdoctor.yaml", cfg, set); err != nil {
		t.Fatal(err)
	}
	if cfg.MinSamples != rules.DefaultMinSamples || cfg.MinGaugeSamples != rules.DefaultMinGaugeSamples || cfg.MinShare != rules.DefaultMinShare {
		t.Errorf("defaults: min_samples %v, min_gauge_samples %v, min_share %v", cfg.MinSamples, cfg.MinGaugeSamples, cfg.MinShare)
	}
	if len(cfg.Models)+len(cfg.GPUs)+len(cfg.Rules)+len(cfg.Suppress) != 0 {
		t.Errorf("the file as written sets something: %+v", cfg)
	}
	typ := reflect.TypeOf(rules.Config{})
	for i := range typ.NumField() {
		key := strings.Split(typ.Field(i).Tag.Get("yaml"), ",")[0]
		if key == "" || key == "-" {
			continue
		}
		if !regexp.MustCompile(`(?m)^` + key + `:`).MatchString(text) {
			t.Errorf("llmdoctor.yaml does not name %s", key)
		}
		if !regexp.MustCompile(`(?m)^# .*\n` + key + `:`).MatchString(text) {
			t.Errorf("%s has no comment above it", key)
		}
	}
	// Uncommented: "models: {}" and the "#  " lines under it become a block.
	taken := regexp.MustCompile(`(?m)^([a-z_]+): (\{\}|\[\])$`).ReplaceAllString(text, "$1:")
	taken = regexp.MustCompile(`(?m)^#  `).ReplaceAllString(taken, "   ")
	withExamples, err := rules.ParseConfig("examples", []byte(taken))
	if err != nil {
		t.Fatalf("%v\n%s", err, taken)
	}
	if err := validateConfig("examples", withExamples, set); err != nil {
		t.Fatalf("%v\n%s", err, taken)
	}
	if len(withExamples.Models) == 0 || len(withExamples.GPUs) == 0 || len(withExamples.Rules) != 3 || len(withExamples.Suppress) != 1 {
		t.Errorf("examples read as %+v", withExamples)
	}
}

// A diagnosis with the file config init writes is the diagnosis without
// one, but for naming the file.
func TestExampleConfigChangesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "llmdoctor.yaml")
	if code, _, errOut := runCLI(t, "config", "init", path); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range []string{"queueing", "kv-capacity", "decode"} {
		read := func(args ...string) map[string]any {
			code, out, errOut := runCLI(t, append(append([]string{"diagnose", "--format", "json"}, args...), example(name)...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
		with, without := read("--config", path), read("--config", os.DevNull)
		if with["config"] != path {
			t.Errorf("%s: config %v, want %s", name, with["config"], path)
		}
		delete(with, "config")
		delete(without, "config")
		if !reflect.DeepEqual(with, without) {
			t.Errorf("%s: the default configuration changed the diagnosis", name)
		}
	}
}
