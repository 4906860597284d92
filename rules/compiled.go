package rules

import (
	"reflect"
	"strings"
	"unsafe"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// slot is where a number sits in evidence.Values: a diagnosis of a thousand
// targets reads each field so often that Values.Get's reflection would cost
// more than every rule's condition together.
type slot uintptr

// noSlot marks a field that has no count or samples to check.
const noSlot = ^slot(0)

var valuesType = reflect.TypeOf(evidence.Values{})

// slotOf finds a catalogue path in Values by the expr names of its fields.
func slotOf(path string) (slot, bool) {
	t, off := valuesType, uintptr(0)
	for _, name := range strings.Split(path, ".") {
		if t.Kind() != reflect.Struct {
			return 0, false
		}
		found := false
		for i := 0; i < t.NumField(); i++ {
			if sf := t.Field(i); sf.Tag.Get("expr") == name {
				t, off, found = sf.Type, off+sf.Offset, true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	return slot(off), t.Kind() == reflect.Float64
}

func mustSlot(path string) slot {
	s, ok := slotOf(path)
	if !ok {
		panic("rules: " + path + " is not a number in evidence.Values")
	}
	return s
}

func (s slot) get(v *evidence.Values) float64 {
	return *(*float64)(unsafe.Add(unsafe.Pointer(v), uintptr(s)))
}

// input is one field a rule reads, with the slots that decide whether it
// may be judged: its gauge's sample count and its distribution's count.
type input struct {
	// What scan reads first, together in one cache line.
	at, samples, count slot
	// Numbers for node, Series and Dist, the same for the same name within
	// one list of inputs: missing marks them checked.
	nodeID, seriesID, distID int32
	// node is the distribution, gauge or scalar the field belongs to.
	node string
	evidence.Field
}

func inputsOf(fs []evidence.Field) []input {
	out := make([]input, len(fs))
	ids := map[string]int32{}
	id := func(name string) int32 {
		if _, ok := ids[name]; !ok {
			ids[name] = int32(len(ids))
		}
		return ids[name]
	}
	for i, f := range fs {
		in := input{Field: f, node: evidence.Node(f.Path), at: mustSlot(f.Path), samples: noSlot, count: noSlot}
		in.nodeID, in.seriesID, in.distID = id(in.node), id(f.Series), id(f.Dist)
		if f.Series != "" {
			in.samples = mustSlot(f.Series + ".samples")
		}
		if f.Dist != "" && f.Path != f.Dist+".count" {
			in.count = mustSlot(f.Dist + ".count")
		}
		out[i] = in
	}
	return out
}

// frame is what compiled expressions and messages read: one target's
// values, the params of the rule being run (in paramNames order) and the
// verdict of the other rules.
type frame struct {
	v       *evidence.Values
	params  []float64
	verdict *Verdict
	text    map[string]string
}

type (
	numFn  func(*frame) float64
	boolFn func(*frame) bool
)

// expression is a compiled condition or impact. Where it uses only numbers,
// arithmetic, comparisons and logic it runs as Go closures, exactly as the
// expr VM would compute it; anything else runs on the VM.
type expression struct {
	prog *vm.Program
	test boolFn
	num  numFn
}

// closures compiles the expression's checked tree, if it can.
func (x *expression) closures(r *Rule) {
	node := x.prog.Node()
	switch {
	case node.Type() == nil:
	case node.Type().Kind() == reflect.Bool:
		x.test = r.boolOf(node)
	case numeric(node):
		x.num = r.numOf(node)
	}
}

// paramIndex is where a param sits in a frame's params.
func (r *Rule) paramIndex(name string) int {
	for i, p := range r.paramNames {
		if p == name {
			return i
		}
	}
	return -1
}

func numeric(n ast.Node) bool {
	t := n.Type()
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Float64, reflect.Int:
		return true
	}
	return false
}

// exactInt: an integer constant that float64 holds exactly, so that integer
// and float arithmetic agree on it.
func exactInt(i int) bool { return i >= -1<<53 && i <= 1<<53 }

// numOf compiles a numeric node; nil when it cannot.
func (r *Rule) numOf(n ast.Node) numFn {
	switch n := n.(type) {
	case *ast.FloatNode:
		c := n.Value
		return func(*frame) float64 { return c }
	case *ast.IntegerNode:
		if !exactInt(n.Value) {
			return nil
		}
		c := float64(n.Value)
		return func(*frame) float64 { return c }
	case *ast.ConstantNode:
		switch v := n.Value.(type) {
		case float64:
			return func(*frame) float64 { return v }
		case int:
			if exactInt(v) {
				c := float64(v)
				return func(*frame) float64 { return c }
			}
		}
		return nil
	case *ast.MemberNode:
		return r.memberOf(n)
	case *ast.UnaryNode:
		x := r.numOf(n.Node)
		if x == nil || !numeric(n.Node) {
			return nil
		}
		switch n.Operator {
		case "-":
			return func(f *frame) float64 { return -x(f) }
		case "+":
			return x
		}
	case *ast.BinaryNode:
		if !numeric(n.Left) || !numeric(n.Right) {
			return nil
		}
		// Integer arithmetic (both sides int) is left to the VM.
		if n.Operator != "/" && n.Left.Type().Kind() == reflect.Int && n.Right.Type().Kind() == reflect.Int {
			return nil
		}
		a, b := r.numOf(n.Left), r.numOf(n.Right)
		if a == nil || b == nil {
			return nil
		}
		switch n.Operator {
		case "+":
			return func(f *frame) float64 { return a(f) + b(f) }
		case "-":
			return func(f *frame) float64 { return a(f) - b(f) }
		case "*":
			return func(f *frame) float64 { return a(f) * b(f) }
		case "/":
			return func(f *frame) float64 { return a(f) / b(f) }
		}
	case *ast.ConditionalNode:
		c, a, b := r.boolOf(n.Cond), r.numOf(n.Exp1), r.numOf(n.Exp2)
		if c == nil || a == nil || b == nil || !numeric(n.Exp1) || !numeric(n.Exp2) {
			return nil
		}
		return func(f *frame) float64 {
			if c(f) {
				return a(f)
			}
			return b(f)
		}
	}
	return nil
}

// memberOf compiles a read of an evidence field, a param or the verdict.
func (r *Rule) memberOf(n *ast.MemberNode) numFn {
	if n.Optional || n.Method {
		return nil
	}
	chain, ok := memberChain(n)
	if !ok {
		return nil
	}
	switch chain[0] {
	case "params":
		i := r.paramIndex(chain[1])
		if len(chain) != 2 || i < 0 {
			return nil
		}
		return func(f *frame) float64 { return f.params[i] }
	case "verdict":
		if len(chain) != 2 {
			return nil
		}
		if get, ok := verdictByName[chain[1]]; ok {
			return func(f *frame) float64 { return get(*f.verdict) }
		}
		return nil
	}
	at, ok := slotOf(strings.Join(chain, "."))
	if !ok {
		return nil
	}
	return func(f *frame) float64 { return at.get(f.v) }
}

// boolOf compiles a boolean node; nil when it cannot.
func (r *Rule) boolOf(n ast.Node) boolFn {
	switch n := n.(type) {
	case *ast.BoolNode:
		c := n.Value
		return func(*frame) bool { return c }
	case *ast.UnaryNode:
		if n.Operator != "!" && n.Operator != "not" {
			return nil
		}
		if x := r.boolOf(n.Node); x != nil {
			return func(f *frame) bool { return !x(f) }
		}
	case *ast.ConditionalNode:
		c, a, b := r.boolOf(n.Cond), r.boolOf(n.Exp1), r.boolOf(n.Exp2)
		if c == nil || a == nil || b == nil {
			return nil
		}
		return func(f *frame) bool {
			if c(f) {
				return a(f)
			}
			return b(f)
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "&&", "and", "||", "or":
			a, b := r.boolOf(n.Left), r.boolOf(n.Right)
			if a == nil || b == nil {
				return nil
			}
			if n.Operator == "&&" || n.Operator == "and" {
				return func(f *frame) bool { return a(f) && b(f) }
			}
			return func(f *frame) bool { return a(f) || b(f) }
		}
		if !numeric(n.Left) || !numeric(n.Right) {
			return nil
		}
		a, b := r.numOf(n.Left), r.numOf(n.Right)
		if a == nil || b == nil {
			return nil
		}
		switch n.Operator {
		case "<":
			return func(f *frame) bool { return a(f) < b(f) }
		case "<=":
			return func(f *frame) bool { return a(f) <= b(f) }
		case ">":
			return func(f *frame) bool { return a(f) > b(f) }
		case ">=":
			return func(f *frame) bool { return a(f) >= b(f) }
		case "==":
			return func(f *frame) bool { return a(f) == b(f) }
		case "!=":
			return func(f *frame) bool { return a(f) != b(f) }
		}
	}
	return nil
}
