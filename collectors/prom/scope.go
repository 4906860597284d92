package prom

import (
	"context"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/collectors/engine"
	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// A selector names the engine's labels (model_name, namespace, instance),
// and the series of other families may lack them: dcgm-exporter's GPU
// gauges and vLLM's cache_config_info carry no model_name, and a matcher on
// a label a series lacks drops it. So each family gets the selector's
// matchers on the labels its series carry, and is joined for the labels it
// lacks: of its series, those are read that share an instance, a pod
// (within its namespace where both say one), a node or a host
// (dcgm-exporter's Hostname against the engine series' node or the host of
// their instance) with the engine series the whole selector matches, the
// first of these keys that links any. The join goes one way, from the
// engine series to the others; a value that engine series outside the
// selector share too (two models on one node) joins nothing, since its
// series cannot be told apart.

// Scope says how the selector reached one source's series.
type Scope struct {
	// Families names them: an engine (vllm) or exporter (dcgm), or one
	// engine family its other families do not share labels with
	// (vllm:cache_config_info).
	Families string
	// Matched are the selector's matchers applied as given; JoinedTo those
	// on labels the series lack, which they were joined to.
	Matched, JoinedTo []string
	// Through is the key of the join: instance, pod, node or host; "" when
	// no key linked them.
	Through string
	// Read reports whether any of their series were read.
	Read bool
	// Note says what was left out, and why.
	Note string
}

// Scopes says how the selector reached each source's series in the last
// Collect (nil without a selector).
func (c *Collector) Scopes() []Scope {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Scope(nil), c.scopes...)
}

// selector is what a family's queries are narrowed by: its own matchers
// and join where the selector does not reach it as given, else the
// selector.
func (c *Collector) selector(family string) string {
	if s, ok := c.scope[family]; ok {
		return s
	}
	return strings.TrimSpace(c.opt.Selector)
}

// familyOf is the family a discovered series name belongs to: a
// histogram's is found by its _bucket series.
func familyOf(name string) string {
	if base, ok := strings.CutSuffix(name, "_bucket"); ok {
		if m, known := engine.Known(base); known && m.Kind == engine.Histogram {
			return base
		}
	}
	return name
}

// sourceOf names a family's source in a scope: its exporter, else its
// engine, or the family itself when joined apart from its engine's other
// families.
func sourceOf(family string, joined bool) string {
	for _, x := range engine.Exporters() {
		for _, alt := range x.Gauges {
			if slices.Contains(alt, family) {
				return x.Name
			}
		}
	}
	if e := engine.Of(family); e != nil && !joined {
		return e.Name
	}
	return family
}

// joinKeys are the keys a join tries, in order.
var joinKeys = []string{"instance", "pod", "node", "host"}

// hostLabels are dcgm-exporter's host label: Hostname, hostname in 4.6 to
// 4.8.
var hostLabels = []string{"Hostname", "hostname"}

// nameLabel carries a series' name through an aggregation in a join's
// queries.
const nameLabel = "llmdoctor_name"

// joined is a family the selector does not reach as given.
type joined struct {
	name      string // as discovered (a histogram's _bucket)
	own, lack []string
	group     int
}

// scopeNames narrows the families discovered within the selector (names)
// to the ones read, and decides each family's matchers: the selector as
// given where its series carry every label it names, else its own matchers
// and a join. A selector that is not a list of label matchers is applied
// as given.
func (c *Collector) scopeNames(ctx context.Context, start, end time.Time, names map[string]bool) (map[string]bool, error) {
	c.scope = map[string]string{}
	c.mu.Lock()
	c.scopes = nil
	c.mu.Unlock()
	sel := strings.TrimSpace(c.opt.Selector)
	if sel == "" {
		return names, nil
	}
	ms, ok := ParseSelector(sel)
	if !ok || len(ms) == 0 {
		c.note("the selector is not a list of label matchers (name=\"value\", …), so it was added to every query as given: series without its labels (GPU exporters, info metrics) were left out")
		return names, nil
	}
	if !slices.ContainsFunc(slices.Collect(maps.Keys(names)), func(n string) bool { return engine.Of(familyOf(n)) != nil }) {
		return names, nil // no engine within the selector: NoMetrics follows
	}
	all, err := c.labelValues(ctx, familiesMatch(""), start, end, "listing metric names")
	if err != nil {
		return nil, err
	}
	carry := map[string]map[string]bool{}
	for _, m := range ms {
		if _, done := carry[m.Label]; done {
			continue
		}
		if carry[m.Label], err = c.labelValues(ctx, familiesMatch(m.Label+`!=""`), start, end, "listing which metrics carry "+m.Label); err != nil {
			return nil, err
		}
	}
	// A matcher on a label no engine series carries (Hostname, gpu) is
	// not the engine's: every family gets it as given.
	engineLabel := map[string]bool{}
	for l, ns := range carry {
		for n := range ns {
			engineLabel[l] = engineLabel[l] || engine.Of(familyOf(n)) != nil
		}
	}
	out := map[string]bool{}
	for n := range names {
		if !all[n] {
			out[n] = true // listed within the selector, not without: read as given
		}
	}
	var js []*joined
	for _, n := range slices.Sorted(maps.Keys(all)) {
		j := &joined{name: n}
		for _, m := range ms {
			if carry[m.Label][n] || !engineLabel[m.Label] {
				j.own = append(j.own, m.Text)
			} else {
				j.lack = append(j.lack, m.Text)
			}
		}
		switch {
		case len(j.lack) == 0 && names[n]:
			out[n] = true
		case len(j.lack) > 0:
			js = append(js, j)
		}
	}
	var scopes []Scope
	seen := map[string]bool{}
	for _, n := range slices.Sorted(maps.Keys(out)) {
		if src := sourceOf(familyOf(n), false); !seen[src] {
			seen[src] = true
			s := Scope{Families: src, Read: true}
			for _, m := range ms {
				s.Matched = append(s.Matched, m.Text)
			}
			scopes = append(scopes, s)
		}
	}
	if len(js) > 0 {
		more, err := c.join(ctx, ms, out, js)
		if err != nil {
			return nil, err
		}
		scopes = append(scopes, more...)
	}
	c.mu.Lock()
	c.scopes = scopes
	c.mu.Unlock()
	return out, nil
}

// join finds, for each family the selector does not reach as given, the
// series that share a key with the engine series matching the selector,
// adds the families with any to out, and says how each source was joined.
// Two rounds of instant queries: the keys of the engine series, then those
// of other engine series sharing them and the families' series carrying
// them.
func (c *Collector) join(ctx context.Context, ms []Matcher, out map[string]bool, js []*joined) ([]Scope, error) {
	// The engine series read as given anchor the join: gauges and counters
	// (few series), else whatever the engine has.
	var anchor, every []string
	for n := range out {
		fam := familyOf(n)
		if engine.Of(fam) == nil {
			continue
		}
		every = append(every, n)
		if m, _ := engine.Known(fam); m.Kind == engine.Gauge || m.Kind == engine.Counter {
			anchor = append(anchor, n)
		}
	}
	if len(anchor) == 0 {
		anchor = every
	}
	sort.Strings(anchor)
	set := map[string]bool{"instance": true, "pod": true, "namespace": true, "node": true}
	for _, m := range ms {
		if m.Label != "__name__" {
			set[m.Label] = true
		}
	}
	by := strings.Join(slices.Sorted(maps.Keys(set)), ", ")
	win := c.rng()
	names := alternatives(anchor)
	tuples := func(extra string) string {
		return fmt.Sprintf("group by (%s) (last_over_time({__name__=~%q,%s}[%s]))", by, names, extra, win)
	}
	got := &answers{by: map[string][]answer{}}
	if err := c.fetch(ctx, batch{branches: []branch{{tuples(strings.TrimSpace(c.opt.Selector)), "join", "selected"}}}, got); err != nil {
		return nil, err
	}
	selected := labelsOf(got.by["join selected"])
	keys := keyValues(selected)

	// Round two: engine series outside the selector that share a key,
	// whether each family has series within its own matchers, and its
	// series that share a key.
	var br []branch
	for _, k := range []string{"instance", "pod", "node"} {
		if len(keys[k]) > 0 {
			br = append(br, branch{tuples(k + "=~" + quoteAlt(keys[k], "", "")), "join", "others"})
		}
	}
	if hosts := keys["host"]; len(hosts) > 0 {
		br = append(br, branch{tuples("instance=~" + quoteAlt(hosts, "(?i)", "(?::[0-9]+)?")), "join", "others"},
			branch{tuples("node=~" + quoteAlt(hosts, "(?i)", "")), "join", "others"})
	}
	groups := map[string]int{}
	var members [][]*joined
	for _, j := range js {
		k := strings.Join(j.own, ",")
		g, ok := groups[k]
		if !ok {
			g = len(members)
			groups[k] = g
			members = append(members, nil)
		}
		j.group = g
		members[g] = append(members[g], j)
	}
	for g, mem := range members {
		var ns []string
		for _, j := range mem {
			ns = append(ns, j.name)
		}
		match := fmt.Sprintf("{__name__=~%q", alternatives(ns))
		for _, o := range mem[0].own {
			match += "," + o
		}
		series := func(by, extra string) string {
			return fmt.Sprintf("label_replace(group by (%s) (last_over_time(%s%s}[%s])), %q, \"$1\", \"__name__\", \"(.*)\")", by, match, extra, win, nameLabel)
		}
		part := func(k string) string { return fmt.Sprintf("%d %s", g, k) }
		br = append(br, branch{series("__name__", ""), "join", part("present")})
		for _, k := range []string{"instance", "pod", "node"} {
			if len(keys[k]) == 0 {
				continue
			}
			by := "__name__, " + k
			if k == "pod" {
				by += ", namespace"
			}
			br = append(br, branch{series(by, ","+k+"=~"+quoteAlt(keys[k], "", "")), "join", part(k)})
		}
		if hosts := keys["host"]; len(hosts) > 0 {
			for _, h := range hostLabels {
				br = append(br, branch{series("__name__, "+h, ","+h+"=~"+quoteAlt(hosts, "(?i)", "")), "join", part("host")})
			}
		}
	}
	if err := c.fetch(ctx, batch{branches: br}, got); err != nil {
		return nil, err
	}
	in := map[string]bool{}
	for _, l := range selected {
		in[l.Key()] = true
	}
	var others []window.Labels
	for _, l := range labelsOf(got.by["join others"]) {
		if !in[l.Key()] {
			others = append(others, l)
		}
	}

	type result struct {
		through string
		kept    []window.Labels
		shared  []string // key values engine series outside the selector share
	}
	var scopes []Scope
	res := map[string]*result{}
	for _, j := range js {
		present := false
		for _, a := range got.by[fmt.Sprintf("join %d present", j.group)] {
			present = present || a.labels[nameLabel] == j.name
		}
		if !present {
			continue // none of its series is in the window
		}
		r := &result{}
		res[j.name] = r
		for _, k := range joinKeys {
			sharedSet := map[string]bool{}
			for _, a := range got.by[fmt.Sprintf("join %d %s", j.group, k)] {
				l := a.labels
				if l[nameLabel] != j.name || !linked(k, l, selected) {
					continue
				}
				r.through = k
				if linked(k, l, others) {
					sharedSet[keyOf(k, l)] = true
				} else {
					r.kept = append(r.kept, l)
				}
			}
			if r.through != "" {
				r.shared = slices.Sorted(maps.Keys(sharedSet))
				break
			}
		}
		if m := joinMatcher(r.through, r.kept); m != "" {
			c.scope[familyOf(j.name)] = strings.Join(append(append([]string{}, j.own...), m), ",")
			out[j.name] = true
		}
	}
	// One scope per source and outcome, in the order of the families.
	said := map[string]bool{}
	for _, j := range js {
		r, ok := res[j.name]
		if !ok {
			continue
		}
		s := Scope{Families: sourceOf(familyOf(j.name), true), Matched: j.own, JoinedTo: j.lack, Through: r.through, Read: len(r.kept) > 0}
		switch {
		case r.through == "":
			s.Note = fmt.Sprintf("its series share no instance, pod, node or host with the engine series matching %s", strings.Join(j.lack, ","))
		case len(r.shared) > 0:
			what := "the series"
			if !s.Read {
				what = "every series"
			}
			s.Note = fmt.Sprintf("%s of %s %s left out: engine series outside the selector share it", what, r.through, listed(r.shared))
		}
		k := fmt.Sprintf("%s|%v|%v|%s|%v|%s", s.Families, s.Matched, s.JoinedTo, s.Through, s.Read, s.Note)
		if !said[k] {
			said[k] = true
			scopes = append(scopes, s)
		}
	}
	return scopes, nil
}

// labelsOf lists answers' labels.
func labelsOf(as []answer) []window.Labels {
	out := make([]window.Labels, 0, len(as))
	for _, a := range as {
		out = append(out, a.labels)
	}
	return out
}

// keyValues gathers the values of each join key over engine series; a
// host is a node or the host of an instance, lower-cased.
func keyValues(ls []window.Labels) map[string][]string {
	set := map[string]map[string]bool{}
	add := func(k, v string) {
		if v == "" {
			return
		}
		if set[k] == nil {
			set[k] = map[string]bool{}
		}
		set[k][v] = true
	}
	for _, l := range ls {
		add("instance", l["instance"])
		add("pod", l["pod"])
		add("node", l["node"])
		add("host", strings.ToLower(l["node"]))
		add("host", hostOf(l["instance"]))
	}
	out := map[string][]string{}
	for k, vs := range set {
		out[k] = slices.Sorted(maps.Keys(vs))
	}
	return out
}

// linked reports whether a series shares key k with any engine series of
// ls.
func linked(k string, l window.Labels, ls []window.Labels) bool {
	for _, e := range ls {
		switch k {
		case "instance", "node":
			if l[k] != "" && l[k] == e[k] {
				return true
			}
		case "pod":
			if l["pod"] != "" && l["pod"] == e["pod"] && (l["namespace"] == "" || e["namespace"] == "" || l["namespace"] == e["namespace"]) {
				return true
			}
		case "host":
			h := hostName(l)
			if h != "" && (h == strings.ToLower(e["node"]) || h == hostOf(e["instance"])) {
				return true
			}
		}
	}
	return false
}

// keyOf is a series' value of key k, as a note names it.
func keyOf(k string, l window.Labels) string {
	switch k {
	case "pod":
		if l["namespace"] != "" {
			return l["namespace"] + "/" + l["pod"]
		}
	case "host":
		return hostName(l)
	}
	return l[k]
}

func hostName(l window.Labels) string {
	for _, h := range hostLabels {
		if v := l[h]; v != "" {
			return strings.ToLower(v)
		}
	}
	return ""
}

// joinMatcher selects the kept series by their key: their instances,
// pods (and namespaces, where every one says its own), nodes or hosts.
func joinMatcher(k string, kept []window.Labels) string {
	if len(kept) == 0 {
		return ""
	}
	vals := func(label string) []string {
		set := map[string]bool{}
		for _, l := range kept {
			set[l[label]] = true
		}
		return slices.Sorted(maps.Keys(set))
	}
	switch k {
	case "pod":
		m := "pod=~" + quoteAlt(vals("pod"), "", "")
		if ns := vals("namespace"); !slices.Contains(ns, "") {
			m += ",namespace=~" + quoteAlt(ns, "", "")
		}
		return m
	case "host":
		// The label most of the kept series carry: an exporter upgraded
		// within the window (Hostname to hostname) is read on one side.
		label, most := "", 0
		for _, h := range hostLabels {
			n := 0
			for _, l := range kept {
				if l[h] != "" {
					n++
				}
			}
			if n > most {
				label, most = h, n
			}
		}
		var vs []string
		for _, v := range vals(label) {
			if v != "" {
				vs = append(vs, v)
			}
		}
		return label + "=~" + quoteAlt(vs, "", "")
	}
	return k + "=~" + quoteAlt(vals(k), "", "")
}

// quoteAlt is a regular expression matching any of vals, after flags
// ((?i) for hosts) and followed by tail, quoted for PromQL.
func quoteAlt(vals []string, flags, tail string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = regexp.QuoteMeta(v)
	}
	re := flags + "(?:" + strings.Join(q, "|") + ")" + tail
	return fmt.Sprintf("%q", re)
}

// alternatives is a regular expression matching any of names.
func alternatives(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(q, "|")
}

// hostOf is an instance's host, lower-cased: "node-a:8000" is "node-a".
func hostOf(inst string) string {
	if h, _, err := net.SplitHostPort(inst); err == nil {
		inst = h
	}
	return strings.ToLower(inst)
}

// listed names up to three values, and how many more.
func listed(vs []string) string {
	if len(vs) <= 3 {
		return strings.Join(vs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(vs[:3], ", "), len(vs)-3)
}

func (c *Collector) note(n string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, n)
}
