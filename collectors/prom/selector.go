package prom

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Matcher is one label matcher of a selector: Text is its canonical form
// (name op "value"), Value the value unquoted.
type Matcher struct {
	Label, Op, Value, Text string
}

// ParseSelector splits a selector (label matchers, comma-separated, no
// metric name or braces) into its matchers; ok is false when it is not
// such a list (then nothing is known of it).
func ParseSelector(sel string) (ms []Matcher, ok bool) {
	ms, err := ParseMatchers(sel)
	return ms, err == nil
}

// SelectorError is a selector that is not a list of label matchers; its
// text says what is wrong and shows the form wanted.
type SelectorError struct {
	Selector string
	// Why is what is wrong, without the selector.
	Why string
}

func (e *SelectorError) Error() string { return fmt.Sprintf("%q: %s", e.Selector, e.Why) }

// ParseMatchers reads a selector: a comma-separated list of PromQL label
// matchers (name op "value", op one of = != =~ !~, the value quoted with
// ", ' or `, a trailing comma allowed), the form a selector is added to
// every query in; anything else could change the queries' meaning and is
// a *SelectorError.
func ParseMatchers(sel string) ([]Matcher, error) {
	var ms []Matcher
	i, n := 0, len(sel)
	fail := func(format string, a ...any) ([]Matcher, error) {
		return nil, &SelectorError{Selector: sel, Why: fmt.Sprintf(format, a...)}
	}
	space := func() {
		for i < n && (sel[i] == ' ' || sel[i] == '\t' || sel[i] == '\n') {
			i++
		}
	}
	for {
		space()
		if i == n {
			return ms, nil
		}
		start := i
		for i < n && (sel[i] == '_' || sel[i] >= 'a' && sel[i] <= 'z' || sel[i] >= 'A' && sel[i] <= 'Z' || i > start && sel[i] >= '0' && sel[i] <= '9') {
			i++
		}
		if i == start {
			return fail(`want label matchers like namespace="prod",model_name=~"llama.*"`)
		}
		m := Matcher{Label: sel[start:i]}
		space()
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(sel[i:], op) {
				m.Op = op
				break
			}
		}
		if m.Op == "" {
			return fail("label %s needs an operator (=, !=, =~ or !~) and a quoted value", m.Label)
		}
		i += len(m.Op)
		space()
		if i == n || (sel[i] != '"' && sel[i] != '\'' && sel[i] != '`') {
			return fail("the value of %s must be quoted", m.Label)
		}
		q, qs := sel[i], i
		i++
		for i < n && sel[i] != q {
			if sel[i] == '\\' && q != '`' {
				i++
			}
			i++
		}
		if i >= n {
			return fail("a quoted value is not closed")
		}
		i++
		v, err := unquotePromQL(sel[qs:i])
		if err != nil {
			return fail("the value of %s is not a valid string: %s", m.Label, sel[qs:i])
		}
		if m.Op == "=~" || m.Op == "!~" {
			if _, err := regexp.Compile("^(?:" + v + ")$"); err != nil {
				return fail("the value of %s is not a regular expression: %v", m.Label, err)
			}
		}
		m.Value = v
		m.Text = m.Label + m.Op + strconv.Quote(v)
		ms = append(ms, m)
		space()
		if i == n {
			return ms, nil
		}
		if sel[i] != ',' {
			return fail("matchers are separated by commas")
		}
		i++
	}
}

// unquotePromQL reads a PromQL string literal: "…" and '…' with Go's
// escapes, `…` raw.
func unquotePromQL(s string) (string, error) {
	if len(s) < 2 {
		return "", fmt.Errorf("not a string: %s", s)
	}
	body := s[1 : len(s)-1]
	switch s[0] {
	case '`':
		return body, nil
	case '\'':
		// As a double-quoted string: \' is ', a bare " is escaped.
		var b strings.Builder
		for i := 0; i < len(body); i++ {
			switch {
			case body[i] == '\\' && i+1 < len(body) && body[i+1] == '\'':
				b.WriteByte('\'')
				i++
			case body[i] == '\\' && i+1 < len(body):
				b.WriteString(body[i : i+2])
				i++
			case body[i] == '"':
				b.WriteString(`\"`)
			default:
				b.WriteByte(body[i])
			}
		}
		return strconv.Unquote(`"` + b.String() + `"`)
	}
	return strconv.Unquote(s)
}

// Matches says whether the matcher accepts a label's value.
func (m Matcher) Matches(v string) bool {
	switch m.Op {
	case "=":
		return v == m.Value
	case "!=":
		return v != m.Value
	}
	re, err := regexp.Compile("^(?:" + m.Value + ")$")
	if err != nil {
		return false
	}
	return re.MatchString(v) == (m.Op == "=~")
}
