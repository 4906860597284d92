package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/goccy/go-yaml"

	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/internal/units"
)

// Set is a loaded, compiled rule set.
type Set struct {
	Rules []*Rule
	byID  map[string]*Rule
}

// Get finds a rule by id.
func (s *Set) Get(id string) (*Rule, bool) { r, ok := s.byID[id]; return r, ok }

var idPattern = regexp.MustCompile(`^[a-z0-9-]+/[a-z0-9-]+$`)

// LoadFS loads every *.yaml rule file under root (fixture folders excluded).
// Files are parsed and compiled on every core (compiling the expressions is
// most of a command's start); rules and errors keep the files' order.
func LoadFS(fsys fs.FS, root string, builtIn bool) ([]*Rule, error) {
	type file struct {
		path string
		data []byte
		rule *Rule
		err  error
	}
	var files []*file
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasSuffix(p, ".tests") {
			return fs.SkipDir
		}
		if d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files = append(files, &file{path: p, data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	next := make(chan *file, len(files))
	for _, f := range files {
		next <- f
	}
	close(next)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for f := range next {
				f.rule, f.err = Parse(f.path, f.data)
			}
		})
	}
	wg.Wait()
	var out []*Rule
	var errs []error
	for _, f := range files {
		if f.err != nil {
			errs = append(errs, f.err)
			continue
		}
		f.rule.BuiltIn = builtIn
		out = append(out, f.rule)
	}
	return out, errors.Join(errs...)
}

// DuplicateError says two rules have one id.
type DuplicateError struct {
	ID string
	// Rule is the later of the two, Prev the earlier.
	Rule, Prev *Rule
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("%s:%d: rule %s: duplicate id (also in %s:%d)", e.Rule.File, e.Rule.Line, e.ID, e.Prev.File, e.Prev.Line)
}

// NewSet checks ids are unique (a *DuplicateError when not) and orders
// rules by id.
func NewSet(rs ...[]*Rule) (*Set, error) {
	s := &Set{byID: map[string]*Rule{}}
	for _, l := range rs {
		for _, r := range l {
			if prev, ok := s.byID[r.ID]; ok {
				return nil, &DuplicateError{ID: r.ID, Rule: r, Prev: prev}
			}
			s.byID[r.ID] = r
			s.Rules = append(s.Rules, r)
		}
	}
	sort.Slice(s.Rules, func(i, j int) bool { return s.Rules[i].ID < s.Rules[j].ID })
	return s, nil
}

// loadError carries file, line and rule id.
func loadError(file string, line int, id, format string, a ...any) error {
	where := file
	if line > 0 {
		where = fmt.Sprintf("%s:%d", file, line)
	}
	if id != "" {
		where += ": rule " + id
	}
	return fmt.Errorf("%s: %s", where, fmt.Sprintf(format, a...))
}

// Parse reads, validates and compiles one rule file.
func Parse(file string, data []byte) (*Rule, error) {
	var spec Spec
	if err := yaml.UnmarshalWithOptions(data, &spec, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %s", file, strings.Join(strings.Fields(yaml.FormatError(err, false, false)), " "))
	}
	lines := keyLines(data)
	r := &Rule{Spec: spec, File: file, Line: lines["id"]}
	r.paramNames = slices.Sorted(maps.Keys(spec.Params))
	for _, p := range r.paramNames {
		r.paramVals = append(r.paramVals, spec.Params[p])
	}
	fail := func(key, format string, a ...any) error {
		return loadError(file, lines[key], spec.ID, format, a...)
	}
	if spec.ID == "" {
		return nil, fail("", "no id")
	}
	if !idPattern.MatchString(spec.ID) {
		return nil, fail("id", "id must be area/name in lower case with dashes")
	}
	if spec.Title == "" {
		return nil, fail("id", "no title")
	}
	if !slices.Contains(Layers, spec.Layer) {
		return nil, fail("layer", "layer %q is not one of %s", spec.Layer, strings.Join(Layers, ", "))
	}
	if !slices.Contains(Bottlenecks, spec.Bottleneck) {
		return nil, fail("bottleneck", "bottleneck %q is not one of %s", spec.Bottleneck, strings.Join(Bottlenecks, ", "))
	}
	for _, b := range spec.Explains {
		if !slices.Contains(Bottlenecks, b) || b == "none" {
			return nil, fail("explains", "explains %q, which is not a bottleneck", b)
		}
		if b == spec.Bottleneck {
			return nil, fail("explains", "a rule cannot explain its own bottleneck")
		}
	}
	for b, cond := range spec.ExplainsIf {
		if !slices.Contains(Bottlenecks, b) || b == "none" || b == spec.Bottleneck || slices.Contains(spec.Explains, b) {
			return nil, fail("explains_if", "explains_if %q: want another bottleneck, not already under explains", b)
		}
		prog, err := r.compile(cond, expr.AsBool())
		if err != nil {
			return nil, fail("explains_if", "explains_if %s: %s", b, oneLine(err))
		}
		reads := map[string]bool{}
		if err := r.walk(prog.prog.Node(), reads); err != nil {
			return nil, fail("explains_if", "explains_if %s: %v", b, err)
		}
		if r.explainsIf == nil {
			r.explainsIf = map[string]bound{}
		}
		r.explainsIf[b] = newBound(prog, fieldsOf(reads), cond)
	}
	r.explainsOrder = slices.Sorted(maps.Keys(r.explainsIf))
	for _, n := range spec.Needs {
		if _, ok := NeedSources[n]; !ok {
			return nil, fail("needs", "needs %q: want dcgm or requests", n)
		}
		r.needs = append(r.needs, mustSlot(NeedSources[n].Present))
		r.needGaps = append(r.needGaps, &Notes{Missing: []Missing{{Path: n, Why: "absent", How: NeedSources[n].How}}})
	}
	if spec.Stage != "" && !slices.Contains(Stages, spec.Stage) {
		return nil, fail("stage", "stage %q is not one of %s", spec.Stage, strings.Join(Stages, ", "))
	}
	if r.Stage == "" {
		r.Stage = DefaultStages[spec.Bottleneck]
	}
	if r.Stage != "" {
		f, _ := evidence.Lookup("stage.share." + r.Stage)
		m, _ := evidence.Lookup("stage.share_max." + r.Stage)
		r.share, r.shareMax = &f, &m
		r.shareAt, r.shareMaxAt = mustSlot(f.Path), mustSlot(m.Path)
	}
	sev, err := ParseSeverity(spec.Severity)
	if err != nil {
		return nil, fail("severity", "%v", err)
	}
	r.Sev = sev
	if spec.When == "" {
		return nil, fail("id", "no when condition")
	}
	if spec.Says == "" {
		return nil, fail("id", "no says message")
	}
	for i, s := range spec.Next {
		if s.Do == "" || !slices.Contains(Costs, s.Cost) {
			return nil, fail("next", "next step %d needs do and a cost of %s", i+1, strings.Join(Costs, ", "))
		}
		c, err := checkStep(s)
		if err != nil {
			return nil, fail("next", "next step %d: %v", i+1, err)
		}
		r.stepIf = append(r.stepIf, c)
		if _, ok := Changes[s.Whatif]; s.Whatif != "" && !ok {
			return nil, fail("next", "next step %d: whatif %q is not one of %s", i+1, s.Whatif,
				strings.Join(slices.Sorted(maps.Keys(Changes)), ", "))
		}
	}
	if err := checkSteps(spec.Next); err != nil {
		return nil, fail("next", "%v", err)
	}
	for p := range spec.Params {
		if strings.TrimSpace(spec.Thresholds[p]) == "" {
			return nil, fail("params", "param %s has no justification under thresholds", p)
		}
	}
	for p := range spec.Thresholds {
		if _, ok := spec.Params[p]; !ok {
			return nil, fail("thresholds", "thresholds names %s, which is not a param", p)
		}
	}

	if spec.Applies != "" {
		if r.applies, r.appliesReads, err = r.condition(spec.Applies); err != nil {
			return nil, fail("applies", "applies: %v", err)
		}
		r.appliesIn = inputsOf(r.appliesReads)
	}
	if spec.SkipIf != "" {
		if r.skipIf, r.skipIfReads, err = r.condition(spec.SkipIf); err != nil {
			return nil, fail("skip_if", "skip_if: %v", err)
		}
		r.skipIfIn = inputsOf(r.skipIfReads)
	}
	reads := map[string]bool{}
	r.when, err = r.compile(spec.When, expr.AsBool())
	if err != nil {
		return nil, fail("when", "when: %s", oneLine(err))
	}
	if err := r.walk(r.when.prog.Node(), reads); err != nil {
		return nil, fail("when", "when: %v", err)
	}
	r.shares = map[string]bool{}
	shareParams(r.when.prog.Node(), r.shares)
	if spec.Plain != "" {
		var reads []evidence.Field
		if r.plain, reads, err = r.condition(spec.Plain); err != nil {
			return nil, fail("plain", "plain: %v", err)
		}
		r.plainIn = inputsOf(reads)
	}
	if spec.Impact != "" {
		r.impact, err = r.compile(spec.Impact, expr.AsFloat64())
		if err != nil {
			return nil, fail("impact", "impact: %s", oneLine(err))
		}
		if err := r.walk(r.impact.prog.Node(), reads); err != nil {
			return nil, fail("impact", "impact: %v", err)
		}
	}
	if r.conjuncts, err = r.compileConjuncts(spec.When); err != nil {
		return nil, fail("when", "when: %v", err)
	}
	for i, b := range spec.Bound {
		cb, err := r.compileBound(b)
		if err != nil {
			return nil, fail("bound", "bound %d: %v", i+1, err)
		}
		r.bounds = append(r.bounds, cb)
	}
	r.says, err = template.New(spec.ID).Funcs(templateFuncs).Option("missingkey=error").Parse(spec.Says)
	if err != nil {
		return nil, fail("says", "says: %s", oneLine(err))
	}
	if err := r.templateReads(r.says, reads, true); err != nil {
		return nil, fail("says", "says: %v", err)
	}
	for p := range reads {
		f, _ := evidence.Lookup(p)
		r.reads = append(r.reads, f)
	}
	sort.Slice(r.reads, func(i, j int) bool { return r.reads[i].Path < r.reads[j].Path })
	r.in = inputsOf(r.reads)
	r.msg = msgCompiler{r: r, text: true, verdict: r.usesVerdict}.compileMessage(r.says)
	if err := r.tryTemplate(); err != nil {
		return nil, fail("says", "says: %s", oneLine(err))
	}
	if spec.OK != "" {
		r.ok, err = template.New(spec.ID + "/ok").Funcs(templateFuncs).Parse(spec.OK)
		if err != nil {
			return nil, fail("ok", "ok: %s", oneLine(err))
		}
		okReads := map[string]bool{}
		if err := r.templateReads(r.ok, okReads, false); err != nil {
			return nil, fail("ok", "ok: %v", err)
		}
		r.okReads = fieldsOf(okReads)
		r.okIn = inputsOf(r.okReads)
	}
	return r, nil
}

// compileConjuncts splits a condition at its top-level "and"s; each part
// that can be judged alone bounds the whole.
func (r *Rule) compileConjuncts(src string) ([]bound, error) {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, err
	}
	var parts []ast.Node
	var split func(n ast.Node)
	split = func(n ast.Node) {
		if b, ok := n.(*ast.BinaryNode); ok && (b.Operator == "&&" || b.Operator == "and") {
			split(b.Left)
			split(b.Right)
			return
		}
		parts = append(parts, n)
	}
	split(tree.Node)
	if len(parts) < 2 {
		return nil, nil
	}
	var out []bound
	for _, n := range parts {
		text := n.String()
		prog, err := r.compile(text, expr.AsBool())
		if err != nil {
			return nil, fmt.Errorf("part %q: %s", text, oneLine(err))
		}
		reads := map[string]bool{}
		if err := r.walk(prog.prog.Node(), reads); err != nil {
			return nil, err
		}
		b := newBound(prog, fieldsOf(reads), strings.Join(strings.Fields(text), " "))
		b.params = paramNames(prog.prog.Node())
		out = append(out, b)
	}
	return out, nil
}

func (r *Rule) compileBound(b BoundSpec) (bound, error) {
	if b.If == "" || b.Says == "" {
		return bound{}, fmt.Errorf("needs if and says")
	}
	prog, err := r.compile(b.If, expr.AsBool())
	if err != nil {
		return bound{}, fmt.Errorf("if: %s", oneLine(err))
	}
	reads := map[string]bool{}
	if err := r.walk(prog.prog.Node(), reads); err != nil {
		return bound{}, fmt.Errorf("if: %w", err)
	}
	t, err := template.New(r.ID + "/bound").Funcs(templateFuncs).Option("missingkey=error").Parse(b.Says)
	if err != nil {
		return bound{}, fmt.Errorf("says: %s", oneLine(err))
	}
	// The reason may cite only what the bound's condition reads.
	tr := map[string]bool{}
	if err := (&Rule{Spec: r.Spec}).templateReads(t, tr, true); err != nil {
		return bound{}, fmt.Errorf("says: %w", err)
	}
	for p := range tr {
		if !reads[p] {
			return bound{}, fmt.Errorf("says reads %s, which its condition does not", p)
		}
	}
	cb := newBound(prog, fieldsOf(reads), b.If)
	cb.says = t
	cb.msg = msgCompiler{r: r}.compileMessage(t)
	probe := evidence.New(evidence.Target{}).Values
	for _, f := range cb.reads {
		probe.Set(f, 1)
	}
	if _, err := cb.render(&probe, r.Params); err != nil {
		return bound{}, fmt.Errorf("says: %s", oneLine(err))
	}
	return cb, nil
}

// render writes the bound's reason; a conjunct says its own condition is
// false, with the values it read.
func (b bound) render(v *evidence.Values, params map[string]float64) (string, error) {
	if b.says == nil {
		return string(b.isFalse(nil, v, params)), nil
	}
	data := v.TreeOf(b.reads)
	pm := map[string]any{}
	for k, x := range params {
		pm[k] = x
	}
	data["params"] = pm
	var sb bytes.Buffer
	if err := b.says.Execute(&sb, data); err != nil {
		return "", err
	}
	return strings.Join(strings.Fields(sb.String()), " "), nil
}

// isFalse appends a conjunct's reason to buf: its condition is false, with
// the values it read.
func (b *bound) isFalse(buf []byte, v *evidence.Values, params map[string]float64) []byte {
	buf = append(append(buf, b.src...), " is false ("...)
	for i, f := range b.in {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = append(append(append(buf, f.Path...), " = "...), units.Number(f.at.get(v))...)
	}
	for i, p := range b.params {
		if i > 0 || len(b.in) > 0 {
			buf = append(buf, ", "...)
		}
		buf = append(append(append(buf, "params."...), p...), " = "...)
		buf = append(buf, units.Number(params[p])...)
	}
	return append(buf, ')')
}

// paramNames lists the params an expression reads, sorted.
func paramNames(node ast.Node) []string {
	v := &readVisitor{}
	ast.Walk(&node, v)
	chains, _ := v.result()
	var out []string
	for _, c := range chains {
		if len(c) == 2 && c[0] == "params" && !slices.Contains(out, c[1]) {
			out = append(out, c[1])
		}
	}
	sort.Strings(out)
	return out
}

// condition compiles a boolean condition of the rule (applies, plain) and
// finds the evidence it reads, sorted.
func (r *Rule) condition(src string) (*expression, []evidence.Field, error) {
	x, err := r.compile(src, expr.AsBool())
	if err != nil {
		return nil, nil, errors.New(oneLine(err))
	}
	reads := map[string]bool{}
	if err := r.walk(x.prog.Node(), reads); err != nil {
		return nil, nil, err
	}
	return x, fieldsOf(reads), nil
}

func fieldsOf(reads map[string]bool) []evidence.Field {
	out := make([]evidence.Field, 0, len(reads))
	for p := range reads {
		f, _ := evidence.Lookup(p)
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// RenderOK renders a passing item's message from whatever evidence exists.
func (r *Rule) RenderOK(v *evidence.Values) string {
	if r.ok == nil {
		return ""
	}
	var b bytes.Buffer
	data := v.Tree()
	data["params"] = r.Params
	if err := r.ok.Execute(&b, data); err != nil {
		return ""
	}
	return strings.ReplaceAll(strings.Join(strings.Fields(b.String()), " "), "<no value>", "n/a")
}

// compile compiles an expression of r; r's params must be known.
func (r *Rule) compile(src string, opts ...expr.Option) (*expression, error) {
	opts = append(opts, expr.Env(Env{}), expr.DisableBuiltin("now"), expr.DisableBuiltin("date"),
		expr.MaxNodes(2000))
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, err
	}
	x := &expression{prog: prog}
	x.closures(r)
	return x, nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// walk collects the evidence paths an expression reads and checks params.
func (r *Rule) walk(node ast.Node, reads map[string]bool) error {
	v := &readVisitor{}
	ast.Walk(&node, v)
	chains, bare := v.result()
	for _, chain := range chains {
		switch chain[0] {
		case "params":
			if len(chain) != 2 {
				return fmt.Errorf("params are read as params.NAME")
			}
			if _, ok := r.Params[chain[1]]; !ok {
				return fmt.Errorf("params.%s is not declared under params", chain[1])
			}
		case "verdict":
			if len(chain) != 2 || !verdictField(chain[1]) {
				return fmt.Errorf("verdict is read as verdict.NAME with NAME one of %s", strings.Join(verdictNames(), ", "))
			}
			r.usesVerdict = true
			r.addVerdictRead(chain[1])
		default:
			p := strings.Join(chain, ".")
			if _, ok := evidence.Lookup(p); !ok {
				return fmt.Errorf("%s is a group, not a number: read one of its fields", p)
			}
			reads[p] = true
		}
	}
	for _, id := range bare {
		if id == "params" || id == "verdict" || slices.Contains(Layers, id) {
			return fmt.Errorf("%s is a group, not a number: read one of its fields", id)
		}
	}
	return nil
}

// readVisitor records member chains (stage.ttft.p99) and bare identifiers.
// ast.Walk visits children before parents, so inner links of a chain are
// only known once the walk is done; see outermost.
type readVisitor struct {
	members []*ast.MemberNode
	idents  []*ast.IdentifierNode
}

func (v *readVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.MemberNode:
		v.members = append(v.members, n)
	case *ast.IdentifierNode:
		v.idents = append(v.idents, n)
	}
}

// result returns the outermost chains and the identifiers used alone.
func (v *readVisitor) result() (chains [][]string, bare []string) {
	inner := map[ast.Node]bool{}
	for _, m := range v.members {
		inner[m.Node] = true
	}
	for _, m := range v.members {
		if inner[m] {
			continue
		}
		if c, ok := memberChain(m); ok {
			chains = append(chains, c)
		}
	}
	for _, id := range v.idents {
		if !inner[id] {
			bare = append(bare, id.Value)
		}
	}
	return chains, bare
}

// memberChain flattens a.b.c into [a b c].
func memberChain(n *ast.MemberNode) ([]string, bool) {
	prop, ok := n.Property.(*ast.StringNode)
	if !ok {
		return nil, false
	}
	switch x := n.Node.(type) {
	case *ast.IdentifierNode:
		return []string{x.Value, prop.Value}, true
	case *ast.MemberNode:
		c, ok := memberChain(x)
		if !ok {
			return nil, false
		}
		return append(c, prop.Value), true
	}
	return nil, false
}

// templateReads adds the evidence fields a message template reads to reads
// and checks its params. A finding's message (fired) may also read .text and
// the verdict fields its condition reads; a passing message (ok) is rendered
// from evidence and params alone.
func (r *Rule) templateReads(t *template.Template, reads map[string]bool, fired bool) error {
	var visit func(parse.Node) error
	visit = func(n parse.Node) error {
		switch x := n.(type) {
		case *parse.ListNode:
			if x == nil {
				return nil
			}
			for _, c := range x.Nodes {
				if err := visit(c); err != nil {
					return err
				}
			}
		case *parse.ActionNode:
			return visit(x.Pipe)
		case *parse.IfNode:
			for _, c := range []parse.Node{x.Pipe, x.List, x.ElseList} {
				if err := visit(c); err != nil {
					return err
				}
			}
		case *parse.PipeNode:
			if x == nil {
				return nil
			}
			for _, c := range x.Cmds {
				if err := visit(c); err != nil {
					return err
				}
			}
		case *parse.CommandNode:
			for _, a := range x.Args {
				if err := visit(a); err != nil {
					return err
				}
			}
		case *parse.FieldNode:
			chain := x.Ident
			switch {
			case chain[0] == "params":
				if len(chain) != 2 || !hasKey(r.Params, chain[1]) {
					return fmt.Errorf(".%s is not a declared param", strings.Join(chain, "."))
				}
			case !fired && (chain[0] == "text" || chain[0] == "verdict"):
				return fmt.Errorf(".%s: a passing message reads evidence fields and params only", strings.Join(chain, "."))
			case chain[0] == "text":
				if len(chain) != 1 {
					return fmt.Errorf(".text is read as (index .text \"NAME\")")
				}
			case chain[0] == "verdict":
				if len(chain) != 2 || !verdictField(chain[1]) || !r.usesVerdict {
					return fmt.Errorf(".%s: the message may read verdict fields the condition reads", strings.Join(chain, "."))
				}
				r.addVerdictRead(chain[1])
			default:
				p := strings.Join(chain, ".")
				if _, ok := evidence.Lookup(p); !ok {
					return fmt.Errorf(".%s is not an evidence field", p)
				}
				reads[p] = true
			}
		}
		return nil
	}
	return visit(t.Root)
}

func hasKey(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

// tryTemplate renders the message once with every read field set, so that a
// template error shows at load, not when the rule first fires.
func (r *Rule) tryTemplate() error {
	v := evidence.New(evidence.Target{}).Values
	for _, f := range r.reads {
		v.Set(f, 1)
	}
	text := map[string]string{}
	for k := range evidence.TextFields {
		text[k] = "?"
	}
	_, err := r.render(&v, text, r.Params, Verdict{})
	return err
}

func (r *Rule) render(v *evidence.Values, text map[string]string, params map[string]float64, vd Verdict) (string, error) {
	// The template reads only fields in r.reads (checked at load).
	data := v.TreeOf(r.reads)
	t := map[string]string{}
	for k := range evidence.TextFields {
		t[k] = "an unnamed instance"
	}
	for k, x := range text {
		if x != "" {
			t[k] = x
		}
	}
	data["text"] = t
	pm := map[string]any{}
	for k, x := range params {
		pm[k] = x
	}
	data["params"] = pm
	if r.usesVerdict {
		data["verdict"] = vd.fields()
	}
	var b bytes.Buffer
	if err := r.says.Execute(&b, data); err != nil {
		return "", err
	}
	return strings.Join(strings.Fields(b.String()), " "), nil
}

// keyLines maps top-level keys to their line numbers.
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	for i, l := range strings.Split(string(data), "\n") {
		if l == "" || l[0] == ' ' || l[0] == '#' || l[0] == '\t' {
			continue
		}
		if k, _, ok := strings.Cut(l, ":"); ok {
			out[strings.TrimSpace(k)] = i + 1
		}
	}
	return out
}
