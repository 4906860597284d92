package rules

import (
	"github.com/expr-lang/expr/ast"

	"github.com/llmdoctor/llmdoctor/evidence"
)

// shareParams adds to shares the params an expression compares directly
// with a share (evidence.Share): kv_full in resource.kv_usage.mean >=
// params.kv_full. Such a param is a share too, and a value above 1 would
// make its rule fire never (or always).
func shareParams(node ast.Node, shares map[string]bool) {
	v := &comparisons{}
	ast.Walk(&node, v)
	for _, b := range v.found {
		l, lok := b.Left.(*ast.MemberNode)
		r, rok := b.Right.(*ast.MemberNode)
		if !lok || !rok {
			continue
		}
		lc, lok := memberChain(l)
		rc, rok := memberChain(r)
		if !lok || !rok {
			continue
		}
		for _, pair := range [][2][]string{{lc, rc}, {rc, lc}} {
			param, field := pair[0], pair[1]
			if len(param) == 2 && param[0] == "params" && field[0] != "params" && evidence.Share(joinChain(field)) {
				shares[param[1]] = true
			}
		}
	}
}

type comparisons struct{ found []*ast.BinaryNode }

func (v *comparisons) Visit(node *ast.Node) {
	if b, ok := (*node).(*ast.BinaryNode); ok {
		switch b.Operator {
		case "<", "<=", ">", ">=":
			v.found = append(v.found, b)
		}
	}
}

func joinChain(c []string) string {
	s := c[0]
	for _, p := range c[1:] {
		s += "." + p
	}
	return s
}
