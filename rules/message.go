package rules

import (
	"fmt"
	"math"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode"
	"unicode/utf8"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// A message compiled from its template's parse tree to closures: text,
// fields, params, the verdict, .text by index, the formatting funcs,
// comparisons and if/else. text/template's reflection and the maps it reads
// would cost a thousand targets' findings more than evaluating every rule.
// Anything else (and any value text/template would refuse) makes the caller
// execute the template itself, so every message is the one text/template
// writes.
type message func(f *frame, b []byte) ([]byte, bool)

type valKind uint8

const (
	kFloat valKind = iota + 1
	kInt
	kString
	kBool
)

// tval is a template value of one of the kinds a compiled message handles.
type tval struct {
	k valKind
	f float64
	i int
	s string
	b bool
}

// num reads a value as the funcs' num does: NaN unless it is a number.
func (v tval) num() float64 {
	switch v.k {
	case kFloat:
		return v.f
	case kInt:
		return float64(v.i)
	}
	return math.NaN()
}

type valFn func(*frame) (tval, bool)

// msgCompiler compiles one rule's templates: fired says read .text and the
// verdict, a bound's reason neither.
type msgCompiler struct {
	r             *Rule
	text, verdict bool
}

// compileMessage returns nil when the template uses anything it does not
// handle.
func (c msgCompiler) compileMessage(t *template.Template) message {
	if t == nil || t.Tree == nil {
		return nil
	}
	return c.list(t.Tree.Root)
}

func (c msgCompiler) list(l *parse.ListNode) message {
	if l == nil {
		return func(_ *frame, b []byte) ([]byte, bool) { return b, true }
	}
	var parts []message
	for _, n := range l.Nodes {
		m := c.node(n)
		if m == nil {
			return nil
		}
		parts = append(parts, m)
	}
	return func(f *frame, b []byte) ([]byte, bool) {
		ok := true
		for _, m := range parts {
			if b, ok = m(f, b); !ok {
				return b, false
			}
		}
		return b, true
	}
}

func (c msgCompiler) node(n parse.Node) message {
	switch n := n.(type) {
	case *parse.TextNode:
		text := n.Text
		return func(_ *frame, b []byte) ([]byte, bool) { return append(b, text...), true }
	case *parse.ActionNode:
		v := c.pipe(n.Pipe)
		if v == nil {
			return nil
		}
		return func(f *frame, b []byte) ([]byte, bool) {
			x, ok := v(f)
			if !ok {
				return b, false
			}
			switch x.k {
			case kString:
				return append(b, x.s...), true
			case kFloat:
				return fmt.Append(b, x.f), true
			case kInt:
				return fmt.Append(b, x.i), true
			case kBool:
				return fmt.Append(b, x.b), true
			}
			return b, false
		}
	case *parse.IfNode:
		cond, then, els := c.pipe(n.Pipe), c.list(n.List), c.list(n.ElseList)
		if cond == nil || then == nil || els == nil {
			return nil
		}
		return func(f *frame, b []byte) ([]byte, bool) {
			x, ok := cond(f)
			if !ok {
				return b, false
			}
			var truth bool
			switch x.k {
			case kBool:
				truth = x.b
			case kFloat:
				truth = x.f != 0
			case kInt:
				truth = x.i != 0
			case kString:
				truth = len(x.s) > 0
			default:
				return b, false
			}
			if truth {
				return then(f, b)
			}
			return els(f, b)
		}
	}
	return nil
}

// pipe compiles a pipeline: each command's value is the last argument of
// the next, which must then be a function.
func (c msgCompiler) pipe(p *parse.PipeNode) valFn {
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) == 0 {
		return nil
	}
	var v valFn
	for i, cmd := range p.Cmds {
		if i > 0 {
			if _, ok := cmd.Args[0].(*parse.IdentifierNode); !ok {
				return nil
			}
		}
		if v = c.command(cmd, v); v == nil {
			return nil
		}
	}
	return v
}

func (c msgCompiler) command(cmd *parse.CommandNode, final valFn) valFn {
	switch first := cmd.Args[0].(type) {
	case *parse.IdentifierNode:
		if first.Ident == "index" {
			if final != nil || len(cmd.Args) != 3 {
				return nil
			}
			return c.index(cmd.Args[1], cmd.Args[2])
		}
		args := make([]valFn, 0, len(cmd.Args))
		for _, a := range cmd.Args[1:] {
			v := c.arg(a)
			if v == nil {
				return nil
			}
			args = append(args, v)
		}
		if final != nil {
			args = append(args, final)
		}
		return call(first.Ident, args)
	case *parse.FieldNode, *parse.PipeNode:
		if len(cmd.Args) != 1 || final != nil {
			return nil
		}
		return c.arg(first)
	}
	return nil
}

// arg compiles an argument: a field, a number or a parenthesized pipeline.
func (c msgCompiler) arg(n parse.Node) valFn {
	switch n := n.(type) {
	case *parse.FieldNode:
		return c.field(n.Ident)
	case *parse.PipeNode:
		return c.pipe(n)
	case *parse.NumberNode:
		// As text/template's ideal constants: a float where the text has a
		// point or an exponent, else an int.
		text := strings.TrimLeft(n.Text, "+-")
		if n.IsComplex || strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X") || strings.HasPrefix(text, "'") {
			return nil
		}
		if n.IsFloat && strings.ContainsAny(text, ".eEpP") {
			x := tval{k: kFloat, f: n.Float64}
			return func(*frame) (tval, bool) { return x, true }
		}
		if n.IsInt && int64(int(n.Int64)) == n.Int64 && strings.Trim(text, "0123456789_") == "" {
			x := tval{k: kInt, i: int(n.Int64)}
			return func(*frame) (tval, bool) { return x, true }
		}
	}
	return nil
}

// field reads a param, a verdict field or an evidence field; an absent
// evidence field is no value (missingkey=error), so the template runs.
func (c msgCompiler) field(chain []string) valFn {
	switch chain[0] {
	case "params":
		i := c.r.paramIndex(chain[1])
		if len(chain) != 2 || i < 0 {
			return nil
		}
		return func(f *frame) (tval, bool) { return tval{k: kFloat, f: f.params[i]}, true }
	case "verdict":
		get, ok := verdictByName[chain[len(chain)-1]]
		if !c.verdict || len(chain) != 2 || !ok {
			return nil
		}
		return func(f *frame) (tval, bool) { return tval{k: kFloat, f: get(*f.verdict)}, true }
	case "text":
		return nil
	}
	at, ok := slotOf(strings.Join(chain, "."))
	if !ok {
		return nil
	}
	return func(f *frame) (tval, bool) {
		x := at.get(f.v)
		return tval{k: kFloat, f: x}, evidence.Present(x)
	}
}

// index reads .text by name: the target's own name where it has one, else
// the words every text field defaults to.
func (c msgCompiler) index(m, key parse.Node) valFn {
	fn, ok := m.(*parse.FieldNode)
	name, isStr := key.(*parse.StringNode)
	if !c.text || !ok || !isStr || len(fn.Ident) != 1 || fn.Ident[0] != "text" {
		return nil
	}
	k := name.Text
	_, known := evidence.TextFields[k]
	return func(f *frame) (tval, bool) {
		if x := f.text[k]; x != "" {
			return tval{k: kString, s: x}, true
		}
		if known {
			return tval{k: kString, s: unnamedText}, true
		}
		return tval{k: kString}, true
	}
}

// call compiles a func of templateFuncs or a comparison builtin.
func call(name string, args []valFn) valFn {
	if fn, ok := oneNumber[name]; ok && len(args) == 1 {
		a := args[0]
		return func(f *frame) (tval, bool) {
			x, ok := a(f)
			return tval{k: kString, s: fn(x.num())}, ok
		}
	}
	if len(args) != 2 {
		return nil
	}
	a, b := args[0], args[1]
	if fn, ok := twoNumbers[name]; ok {
		return func(f *frame) (tval, bool) {
			x, ok1 := a(f)
			y, ok2 := b(f)
			return tval{k: kString, s: fn(x.num(), y.num())}, ok1 && ok2
		}
	}
	switch name {
	case "sub":
		return func(f *frame) (tval, bool) {
			x, ok1 := a(f)
			y, ok2 := b(f)
			return tval{k: kFloat, f: sub(x.num(), y.num())}, ok1 && ok2
		}
	case "atleast":
		return func(f *frame) (tval, bool) {
			x, ok1 := a(f)
			y, ok2 := b(f)
			return tval{k: kBool, b: atleast(x.num(), y.num())}, ok1 && ok2
		}
	case "lt", "le", "gt", "ge", "eq", "ne":
		return compare(name, a, b)
	}
	return nil
}

// compare is text/template's lt, le, gt, ge, eq and ne on two numbers of
// one kind; other kinds are left to text/template.
func compare(name string, a, b valFn) valFn {
	return func(f *frame) (tval, bool) {
		x, ok1 := a(f)
		y, ok2 := b(f)
		if !ok1 || !ok2 || x.k != y.k || (x.k != kFloat && x.k != kInt) {
			return tval{}, false
		}
		p, q := x.num(), y.num()
		lt, eq := p < q, p == q
		var v bool
		switch name {
		case "lt":
			v = lt
		case "le":
			v = lt || eq
		case "gt":
			v = !(lt || eq)
		case "ge":
			v = !lt
		case "eq":
			v = eq
		case "ne":
			v = !eq
		}
		return tval{k: kBool, b: v}, true
	}
}

// unnamedText is what a message says for a text field the target lacks.
const unnamedText = "an unnamed instance"

// collapse is strings.Join(strings.Fields(string(b)), " "), done in
// place: b is scratch.
func collapse(b []byte) string {
	// Most messages are tidy but for the newline a folded YAML string ends
	// with.
	t := b
	for len(t) > 0 && t[len(t)-1] < utf8.RuneSelf && asciiSpace[t[len(t)-1]] {
		t = t[:len(t)-1]
	}
	if tidy(t) {
		return string(t)
	}
	w := 0
	space := false
	for i := 0; i < len(b); {
		c, n := b[i], 1
		isSpace := false
		if c < utf8.RuneSelf {
			isSpace = asciiSpace[c]
		} else {
			var r rune
			r, n = utf8.DecodeRune(b[i:])
			isSpace = unicode.IsSpace(r)
		}
		if isSpace {
			space = true
			i += n
			continue
		}
		if space && w > 0 {
			b[w] = ' '
			w++
		}
		space = false
		w += copy(b[w:], b[i:i+n])
		i += n
	}
	return string(b[:w])
}

// tidy reports whether b has single spaces between words and no other
// space, none at either end: then collapse leaves it as it is.
func tidy(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == ' ':
			if i == 0 || i == len(b)-1 || b[i-1] == ' ' {
				return false
			}
			i++
		case c < utf8.RuneSelf:
			if asciiSpace[c] {
				return false
			}
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if unicode.IsSpace(r) {
				return false
			}
			i += n
		}
	}
	return true
}

var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}
