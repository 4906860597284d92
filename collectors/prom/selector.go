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
	i, n := 0, len(sel)
	space := func() {
		for i < n && (sel[i] == ' ' || sel[i] == '\t' || sel[i] == '\n') {
			i++
		}
	}
	for {
		space()
		if i == n {
			return ms, true
		}
		start := i
		for i < n && (sel[i] == '_' || sel[i] >= 'a' && sel[i] <= 'z' || sel[i] >= 'A' && sel[i] <= 'Z' || i > start && sel[i] >= '0' && sel[i] <= '9') {
			i++
		}
		if i == start {
			return nil, false
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
			return nil, false
		}
		i += len(m.Op)
		space()
		if i == n || (sel[i] != '"' && sel[i] != '\'' && sel[i] != '`') {
			return nil, false
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
			return nil, false
		}
		i++
		v, err := unquotePromQL(sel[qs:i])
		if err != nil {
			return nil, false
		}
		m.Value = v
		m.Text = m.Label + m.Op + strconv.Quote(v)
		ms = append(ms, m)
		space()
		if i == n {
			return ms, true
		}
		if sel[i] != ',' {
			return nil, false
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
