package rules

import "github.com/llmdoctor/llmdoctor/evidence"

// Env is what a rule's expressions see.
type Env struct {
	Cond     evidence.Cond      `expr:"cond"`
	Stage    evidence.Stage     `expr:"stage"`
	Service  evidence.Service   `expr:"service"`
	Resource evidence.Resource  `expr:"resource"`
	Verdict  Verdict            `expr:"verdict"`
	Params   map[string]float64 `expr:"params"`
}

// Verdict summarises the other rules' findings for rules that judge the whole
// diagnosis (no single bottleneck, for example). Only rules that do not read
// verdict count.
type Verdict struct {
	Critical    float64 `expr:"critical"`
	Warning     float64 `expr:"warning"`
	Info        float64 `expr:"info"`
	Bottlenecks float64 `expr:"bottlenecks"`
	// TopImpact is the largest share of latency any finding accounts for.
	TopImpact float64 `expr:"top_impact"`
}

func newEnv(v *evidence.Values) *Env {
	return &Env{Cond: v.Cond, Stage: v.Stage, Service: v.Service, Resource: v.Resource}
}

var verdictByName = map[string]func(Verdict) float64{
	"critical":    func(v Verdict) float64 { return v.Critical },
	"warning":     func(v Verdict) float64 { return v.Warning },
	"info":        func(v Verdict) float64 { return v.Info },
	"bottlenecks": func(v Verdict) float64 { return v.Bottlenecks },
	"top_impact":  func(v Verdict) float64 { return v.TopImpact },
}

// verdictKeys are the paths a result cites verdict fields by.
var verdictKeys = func() map[string]string {
	m := map[string]string{}
	for k := range verdictByName {
		m[k] = "verdict." + k
	}
	return m
}()

func verdictField(name string) bool { _, ok := verdictByName[name]; return ok }

func verdictNames() []string {
	return []string{"critical", "warning", "info", "bottlenecks", "top_impact"}
}

func (v Verdict) fields() map[string]any {
	m := map[string]any{}
	for k, f := range verdictByName {
		m[k] = f(v)
	}
	return m
}
