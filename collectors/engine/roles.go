package engine

import (
	"maps"
	"slices"

	"github.com/llmdoctor/llmdoctor/collectors/window"
)

// RoleLabel is the label the builder gives each series of a deployment that
// runs prefill and decode on separate instances, its value "prefill" or
// "decode": such a target is diagnosed one side at a time, as each side is
// sized and tuned on its own.
const RoleLabel = "role"

// Roles a series' instance may have.
const (
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// roles finds the role of each replica of the engine's series in w, by the
// replica label, from what it did: a decode instance pulled KV
// (KVTransferTime observed), a prefill instance gave every request one
// token (the proxy asks it for max_tokens 1) and pulled nothing. It returns
// nil unless both roles are present among replicas of one set of group
// label values, or where the series are not the replicas' own (a source
// that summed them).
func (eng *Engine) roles(w *window.Window, group []string) map[string]string {
	if len(eng.Members) == 0 {
		return nil
	}
	replica := eng.Members[0]
	if w.Members != nil && !slices.Contains(group, replica) {
		return nil // the source summed the replicas: see SummedRoles
	}
	type acc struct{ pulled, gen, done float64 }
	by := map[string]*acc{}
	at := func(l window.Labels) *acc {
		k := l[replica]
		if by[k] == nil {
			by[k] = &acc{}
		}
		return by[k]
	}
	transfer, _ := eng.ByKey(KVTransferTime)
	for _, n := range transfer.Names {
		for _, h := range w.Histograms[n] {
			at(h.Labels).pulled += h.Count
		}
	}
	gen, _ := eng.ByKey(GenerationLen)
	for _, n := range gen.Names {
		for _, h := range w.Histograms[n] {
			a := at(h.Labels)
			a.gen += h.Sum
			a.done += h.Count
		}
	}
	out := map[string]string{}
	for k, a := range by {
		switch {
		case k == "":
		case a.pulled > 0:
			out[k] = RoleDecode
		case a.done >= 1 && a.gen <= 1.05*a.done:
			out[k] = RolePrefill
		}
	}
	vals := slices.Collect(maps.Values(out))
	if !slices.Contains(vals, RolePrefill) || !slices.Contains(vals, RoleDecode) {
		return nil
	}
	return out
}

// SummedRoles reports whether a source that sums a target's replicas
// (Prometheus) summed prefill and decode instances into one of the
// engine's targets: KV was pulled, yet TTFT counted many more requests than
// pulls (a prefill instance observes every request once more). Their
// latencies cannot be added: read again per replica (ReplicaLabel).
func SummedRoles(w *window.Window, group []string) bool {
	if w.Members == nil {
		return false
	}
	for _, eng := range Engines() {
		if len(eng.Members) == 0 || slices.Contains(group, eng.Members[0]) || !eng.Has(w) {
			continue
		}
		transfer, _ := eng.ByKey(KVTransferTime)
		ttft, _ := eng.ByKey(TTFT)
		for _, tn := range transfer.Names {
			for _, h := range w.Histograms[tn] {
				if h.Count <= 0 || h.Labels[RoleLabel] != "" {
					continue
				}
				for _, n := range ttft.Names {
					for _, t := range w.Histograms[n] {
						if sameTarget(t.Labels, h.Labels, group) && t.Count >= 1.5*h.Count {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

func sameTarget(a, b window.Labels, group []string) bool {
	for _, g := range group {
		if a[g] != b[g] {
			return false
		}
	}
	return true
}

// ReplicaLabel is the label that tells an engine's replicas apart ("" when
// it has none).
func ReplicaLabel(name string) string {
	if eng, ok := Lookup(name); ok && len(eng.Members) > 0 {
		return eng.Members[0]
	}
	return ""
}

// labelledRoles reports whether the engine's series carry its role label
// with prefill or decode as the value (SGLang's engine_type).
func (eng *Engine) labelledRoles(w *window.Window) bool {
	if eng.RoleLabel == "" {
		return false
	}
	for _, m := range eng.Catalogue {
		for _, n := range m.Names {
			for _, h := range w.Histograms[n] {
				if v := h.Labels[eng.RoleLabel]; v == RolePrefill || v == RoleDecode {
					return true
				}
			}
			for _, g := range w.Gauges[n] {
				if v := g.Labels[eng.RoleLabel]; v == RolePrefill || v == RoleDecode {
					return true
				}
			}
		}
	}
	return false
}

// withRoles returns w with each series of a replica in roles labelled with
// its role. w itself is not changed.
func withRoles(w *window.Window, replica string, roles map[string]string) *window.Window {
	return relabelRoles(w, func(l window.Labels) string { return roles[l[replica]] })
}

// withRoleLabel returns w with each series whose label says prefill or
// decode labelled with that role. w itself is not changed.
func withRoleLabel(w *window.Window, label string) *window.Window {
	return relabelRoles(w, func(l window.Labels) string {
		if v := l[label]; v == RolePrefill || v == RoleDecode {
			return v
		}
		return ""
	})
}

// relabelRoles labels each series with the role roleOf gives it ("": none).
func relabelRoles(w *window.Window, roleOf func(window.Labels) string) *window.Window {
	out := *w
	relabel := func(l window.Labels) window.Labels {
		r := roleOf(l)
		if r == "" {
			return l
		}
		c := maps.Clone(l)
		c[RoleLabel] = r
		return c
	}
	out.Counters = relabelled(w.Counters, func(c *window.Counter) *window.Labels { return &c.Labels }, relabel)
	out.Gauges = relabelled(w.Gauges, func(g *window.Gauge) *window.Labels { return &g.Labels }, relabel)
	out.Histograms = relabelled(w.Histograms, func(h *window.Histogram) *window.Labels { return &h.Labels }, relabel)
	return &out
}

// relabelled copies one kind's series with their labels relabelled.
func relabelled[S any](in map[string][]S, labels func(*S) *window.Labels, relabel func(window.Labels) window.Labels) map[string][]S {
	out := make(map[string][]S, len(in))
	for n, ss := range in {
		c := slices.Clone(ss)
		for i := range c {
			l := labels(&c[i])
			*l = relabel(*l)
		}
		out[n] = c
	}
	return out
}
