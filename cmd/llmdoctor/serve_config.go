package main

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/spf13/pflag"
)

// serveFile is serve.yaml: each key is one of serve's flags without its
// dashes, its value what the flag takes (a list for a repeatable flag).
// It is decoded strictly: an unknown key, a key given twice or a value of
// the wrong type is an error naming its line. Each value given is then
// set on its flag, unless the flag was given on the command line (flags
// win), so that a key and its flag are read and checked alike.
// TestServeFileHasEveryFlag keeps the keys and the flags the same.
type serveFile struct {
	// Config is refused with its own words: a file cannot name another.
	Config *string `yaml:"config"`

	Prom          *string `yaml:"prom"`
	Window        *string `yaml:"window"`
	Step          *string `yaml:"step"`
	Selector      *string `yaml:"selector"`
	PromTokenFile *string `yaml:"prom-token-file"`
	PromUser      *string `yaml:"prom-user"`
	PromCA        *string `yaml:"prom-ca"`
	PromCert      *string `yaml:"prom-cert"`
	PromKey       *string `yaml:"prom-key"`
	PromInsecure  *bool   `yaml:"prom-insecure"`
	PromHeader    list    `yaml:"prom-header"`
	PromTimeout   *string `yaml:"prom-timeout"`
	PromParallel  *int    `yaml:"prom-parallel"`

	Listen         *string `yaml:"listen"`
	ExternalURL    *string `yaml:"external-url"`
	ReportHistory  *int    `yaml:"report-history"`
	MaxConcurrent  *int    `yaml:"max-concurrent"`
	RequestTimeout *string `yaml:"request-timeout"`
	GroupBy        list    `yaml:"group-by"`
	RulesConfig    *string `yaml:"rules-config"`
	Rules          list    `yaml:"rules"`

	SlackWebhookFile *string `yaml:"slack-webhook-file"`
	SlackTokenFile   *string `yaml:"slack-token-file"`
	SlackChannel     *string `yaml:"slack-channel"`
	SlackAPIURL      *string `yaml:"slack-api-url"`

	AlertmanagerTokenFile *string `yaml:"alertmanager-token-file"`
	AlertmanagerUser      *string `yaml:"alertmanager-user"`
	AlertmanagerLabel     list    `yaml:"alertmanager-label"`
	AlertmanagerLeadIn    *string `yaml:"alertmanager-lead-in"`

	SlackSigningSecretFile *string `yaml:"slack-signing-secret-file"`
	SlackAppTokenFile      *string `yaml:"slack-app-token-file"`
	SlackMaxBody           *int64  `yaml:"slack-max-body"`
	SlackResponseHosts     list    `yaml:"slack-response-hosts"`

	Watch         *bool   `yaml:"watch"`
	Every         *string `yaml:"every"`
	Hold          *int    `yaml:"hold"`
	StateFile     *string `yaml:"state-file"`
	WatchSelector *string `yaml:"watch-selector"`
}

// list is the value of a repeatable flag: one value, or a list of them.
type list []string

func (l *list) UnmarshalYAML(unmarshal func(any) error) error {
	var one string
	if err := unmarshal(&one); err == nil {
		*l = list{one}
		return nil
	}
	var many []string
	if err := unmarshal(&many); err != nil {
		return errors.New("want a value or a list of values")
	}
	*l = many
	return nil
}

// decodeServeFile reads serve.yaml strictly; lines maps each top-level
// key to its line, for errors found once the values are set on flags.
func decodeServeFile(data []byte) (sf serveFile, lines map[string]int, err error) {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return sf, nil, yamlError(err)
	}
	lines = map[string]int{}
	var body ast.Node
	if len(file.Docs) > 0 {
		body = file.Docs[0].Body
	}
	var values []*ast.MappingValueNode
	switch n := body.(type) {
	case nil:
		return sf, lines, nil
	case *ast.MappingNode:
		values = n.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{n}
	default:
		return sf, nil, fmt.Errorf("line %d: want settings as key: value", body.GetToken().Position.Line)
	}
	for _, v := range values {
		lines[v.Key.String()] = v.Key.GetToken().Position.Line
	}
	if err := yaml.NodeToValue(body, &sf, yaml.Strict()); err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			return sf, nil, yamlError(err)
		}
		// An error of a value's own type (list) says no line: the key
		// whose value alone fails to decode is the one.
		for _, v := range values {
			f, ok := fieldOf(v.Key.String())
			if !ok {
				continue
			}
			if verr := yaml.NodeToValue(v.Value, reflect.New(f.Type).Interface()); verr != nil {
				return sf, nil, fmt.Errorf("line %d: %s: %w", lines[v.Key.String()], v.Key.String(), verr)
			}
		}
		return sf, nil, yamlError(err)
	}
	return sf, lines, nil
}

// fieldOf is serveFile's field of a key.
func fieldOf(key string) (reflect.StructField, bool) {
	ty := reflect.TypeFor[serveFile]()
	for i := 0; i < ty.NumField(); i++ {
		if ty.Field(i).Tag.Get("yaml") == key {
			return ty.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// yamlError is a decoding error in one line: where, and what, in this
// file's terms.
func yamlError(err error) error {
	var (
		ye yaml.Error
		ue *yaml.UnknownFieldError
		te *yaml.TypeError
	)
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		return errors.New(strings.Join(strings.Fields(err.Error()), " "))
	}
	line := ye.GetToken().Position.Line
	switch {
	case errors.As(err, &ue):
		return fmt.Errorf("line %d: unknown key %q: keys are serve's flag names without the dashes (llmdoctor serve --help)", line, ye.GetToken().Value)
	case errors.As(err, &te) && te.StructFieldName != nil:
		want := "one value"
		switch te.DstType.Kind() {
		case reflect.Slice:
			want = "a value or a list of values"
		case reflect.Bool:
			want = "true or false"
		case reflect.Int, reflect.Int64:
			want = "a whole number"
		}
		key := *te.StructFieldName
		if i := strings.LastIndexByte(key, '.'); i >= 0 {
			key = key[i+1:]
		}
		if f, ok := reflect.TypeFor[serveFile]().FieldByName(key); ok {
			key = f.Tag.Get("yaml")
		}
		return fmt.Errorf("line %d: %s takes %s", line, key, want)
	}
	return fmt.Errorf("line %d: %s", line, strings.Join(strings.Fields(ye.GetMessage()), " "))
}

// settings are the file's values as their flags take them, by flag name:
// one each, or one per element of a list.
func (sf *serveFile) settings() map[string][]string {
	out := map[string][]string{}
	v := reflect.ValueOf(sf).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Tag.Get("yaml")
		switch x := v.Field(i); {
		case x.Kind() == reflect.Slice && !x.IsNil():
			out[name] = x.Interface().(list)
		case x.Kind() == reflect.Pointer && !x.IsNil():
			switch e := x.Elem(); e.Kind() {
			case reflect.String:
				out[name] = []string{e.String()}
			case reflect.Bool:
				out[name] = []string{strconv.FormatBool(e.Bool())}
			case reflect.Int, reflect.Int64:
				out[name] = []string{strconv.FormatInt(e.Int(), 10)}
			}
		}
	}
	return out
}

// applyConfig reads serve.yaml (serveFile) and sets each value it gives
// on its flag, unless the flag was given on the command line.
func (o *serveOpts) applyConfig(f *pflag.FlagSet) error {
	name := o.configFile
	if name == "-" {
		name = stdinName
	}
	data, err := o.in.read(o.configFile)
	if err != nil {
		return usageErr("--config: %v", err)
	}
	sf, lines, err := decodeServeFile(data)
	if err != nil {
		return usageErr("%s: %v", name, err)
	}
	if sf.Config != nil {
		return usageErr("%s: line %d: config cannot be set in the file", name, lines["config"])
	}
	set := sf.settings()
	// In the file's order, so that the first bad line is the one named.
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(lines[a], lines[b]), cmp.Compare(a, b)) })
	for _, key := range keys {
		if f.Changed(key) {
			continue
		}
		fl := f.Lookup(key)
		if fl == nil {
			return usageErr("%s: line %d: %s is no flag of serve", name, lines[key], key)
		}
		// The first value replaces a list's default; the next add to it.
		for _, v := range set[key] {
			if err := f.Set(key, v); err != nil {
				return usageErr("%s: line %d: %s: %v", name, lines[key], key, err)
			}
		}
	}
	return nil
}
