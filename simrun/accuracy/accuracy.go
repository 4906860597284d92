package accuracy

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
	"github.com/llmdoctor/llmdoctor/simrun"
)

// The accuracy set: scenarios drawn from one seed, each diagnosed through
// simrun and compared with the simulator's ground truth.
const (
	// Seed draws the set the rules are tuned on.
	Seed = 1
	// Count is how many scenarios each set draws.
	Count = 240
	// HeldOutSeed draws a second set whose misses are not looked at while
	// tuning rules, so its accuracy says how well the tuning generalises.
	HeldOutSeed = 2
	// accuracyMinFinished redraws a scenario whose window finishes fewer
	// requests: too few to say where their time went.
	accuracyMinFinished = 50
)

// Case is one random scenario, its ground truth and its diagnosis.
type Case struct {
	Index    int
	Scenario *sim.Scenario
	Truth    sim.GroundTruth
	Label    sim.TruthLabel
	Primary  advisor.Primary
	// Critical lists the rules of critical findings.
	Critical []string
	// Finished is the number of requests the diagnosis counted in its window.
	Finished float64
	// Skipped: the simulator cannot serve the scenario under the set's
	// names (a split prefill/decode deployment under SGLang's).
	Skipped bool
}

// Deciding is the target whose verdict is the deployment's: the only one,
// or of a split deployment's two sides the one with a finding of the
// highest severity, then the largest impact (nil: no target).
func Deciding(d *advisor.Diagnosis) *advisor.TargetReport {
	var best *advisor.TargetReport
	rank := func(t *advisor.TargetReport) (int, float64) {
		sev := 0
		for _, f := range t.Findings {
			if f.Rule == t.Primary.Rule {
				sev = map[string]int{"info": 1, "warning": 2, "critical": 3}[f.Severity]
			}
		}
		imp := 0.0
		if t.Primary.Impact != nil {
			imp = *t.Primary.Impact
		}
		return sev, imp
	}
	for i := range d.Targets {
		t := &d.Targets[i]
		if best == nil {
			best = t
			continue
		}
		s, x := rank(t)
		bs, bx := rank(best)
		if s > bs || s == bs && x > bx {
			best = t
		}
	}
	return best
}

// OK reports whether the verdict agrees with the ground truth.
func (c Case) OK() bool { return c.Label.Accepts(c.Primary.Bottleneck) }

// Scenario draws scenario i of a seed with its ground truth; it depends on
// nothing else, so one case can be reproduced alone.
func Scenario(seed int64, i int) (*sim.Scenario, sim.GroundTruth, error) {
	r := rand.New(rand.NewSource(seed*100003 + int64(i)))
	for {
		sc := sim.RandomScenario(r, i)
		sim.Speculate(sc, sim.SpeculationShare)
		sim.Route(sc, sim.RouterShare)
		sim.Disaggregate(sc, sim.DisaggregatedShare)
		gt, err := sim.WindowTruth(sc, simrun.Scrapes)
		if err != nil {
			return nil, gt, fmt.Errorf("%s: %w", sc.Name, err)
		}
		if gt.Finished >= accuracyMinFinished {
			return sc, gt, nil
		}
	}
}

// WriteScenario writes scenario i of the tuning set as a scenario file for
// llmdoctor demo --scenario, and returns its ground truth in words.
func WriteScenario(i int, path string) (string, error) {
	sc, gt, err := Scenario(Seed, i)
	if err != nil {
		return "", err
	}
	data, err := sc.YAML()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	l := gt.Label()
	return fmt.Sprintf("ground truth %s %v (%s)", l.Cause, l.Also, l.Why), nil
}

// Run draws n scenarios from seed, serves each with the given engine's
// metric names and diagnoses it through simrun, on two goroutines.
func Run(set *rules.Set, cfg *rules.Config, seed int64, n int, exposes string) ([]Case, error) {
	indexes := make([]int, n)
	for i := range indexes {
		indexes[i] = i
	}
	return RunIndexes(set, cfg, seed, indexes, exposes)
}

// RunIndexes is Run on the given scenarios of the seed's draw only: a
// sample that gives each case the verdict the whole run gives it.
func RunIndexes(set *rules.Set, cfg *rules.Config, seed int64, indexes []int, exposes string) ([]Case, error) {
	out := make([]Case, len(indexes))
	errs := make([]error, len(indexes))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				out[k], errs[k] = runCase(set, cfg, seed, indexes[k], exposes)
			}
		}()
	}
	for k := range indexes {
		next <- k
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func runCase(set *rules.Set, cfg *rules.Config, seed int64, i int, exposes string) (Case, error) {
	sc, gt, err := Scenario(seed, i)
	if err != nil {
		return Case{}, err
	}
	c := Case{Index: i, Scenario: sc, Truth: gt, Label: gt.Label(), Primary: advisor.Primary{Bottleneck: "unknown"}}
	if !sc.CanExpose(exposes) {
		c.Skipped = true
		return c, nil
	}
	sc.Exposes = exposes
	d, err := simrun.Diagnose(context.Background(), sc, simrun.Options{Rules: set, Config: cfg})
	if err != nil {
		return Case{}, fmt.Errorf("%s: %w", sc.Name, err)
	}
	if t := Deciding(d); t != nil {
		c.Primary = t.Primary
		for _, f := range t.Findings {
			if f.Severity == "critical" {
				c.Critical = append(c.Critical, f.Rule)
			}
		}
		// Requests finish where they are answered: the first target (a
		// split deployment's decode side).
		c.Finished = evidence.TreeNumber(d.Targets[0].Evidence, "service.finished")
	}
	return c, nil
}

// Page diagnoses the tuning set, the held-out set on vLLM's and SGLang's
// names, the independent simulator's windows and the real cases, and
// renders docs/accuracy.md.
func Page(set *rules.Set, cfg *rules.Config) (string, error) {
	cs, err := Run(set, cfg, Seed, Count, "vllm")
	if err != nil {
		return "", err
	}
	held, err := Run(set, cfg, HeldOutSeed, Count, "vllm")
	if err != nil {
		return "", err
	}
	sg, err := Run(set, cfg, HeldOutSeed, Count, "sglang")
	if err != nil {
		return "", err
	}
	return page(set, cfg, cs, held, sg)
}

// page renders docs/accuracy.md from the random sets already run.
func page(set *rules.Set, cfg *rules.Config, cs, held, sg []Case) (string, error) {
	builtin, err := builtinTruths()
	if err != nil {
		return "", err
	}
	real, err := TreeRealCases()
	if err != nil {
		return "", err
	}
	peers, err := TreePeerCases()
	if err != nil {
		return "", err
	}
	return Report(cs, held, sg, builtin) + "\n" + PeerSection(RunPeerCases(set, cfg, peers)) + "\n" +
		RealCasesSection(RunRealCases(set, cfg, real)), nil
}

// BuiltinTruth is a built-in scenario's ground truth beside what it expects.
type BuiltinTruth struct {
	Scenario *sim.Scenario
	Label    sim.TruthLabel
}

func builtinTruths() ([]BuiltinTruth, error) {
	all, err := sim.Scenarios()
	if err != nil {
		return nil, err
	}
	var out []BuiltinTruth
	for _, sc := range all {
		gt, err := sim.WindowTruth(sc, simrun.Scrapes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sc.Name, err)
		}
		out = append(out, BuiltinTruth{sc, gt.Label()})
	}
	return out, nil
}

// Column and row order of the confusion matrix.
var labelOrder = []string{"none", "queueing", "kv-capacity", "prefill", "prefill-interference", "prefix-cache", "speculation", "lora",
	"decode", "memory-bandwidth", "compute", "cpu-overhead", "client", "measurement", "errors", "imbalance", "unknown"}

func orderLabels(seen map[string]bool) []string {
	var out []string
	for _, l := range labelOrder {
		if seen[l] {
			out = append(out, l)
			delete(seen, l)
		}
	}
	var rest []string
	for l := range seen {
		rest = append(rest, l)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// accuracyOf is the share of cases whose verdict agrees with the ground truth.
// accuracyOf is the share of right verdicts among the cases served.
func accuracyOf(cs []Case) float64 {
	ok, n := 0, 0
	for _, c := range cs {
		if c.Skipped {
			continue
		}
		n++
		if c.OK() {
			ok++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(ok) / float64(n)
}

// criticalOnHealthy counts the cases whose ground truth is clearly none (not
// borderline), and those of them with a critical finding.
func criticalOnHealthy(cs []Case) (healthy, flagged int) {
	for _, c := range cs {
		if c.Label.Cause == "none" && !c.Label.Borderline && !c.Skipped {
			healthy++
			if len(c.Critical) > 0 {
				flagged++
			}
		}
	}
	return healthy, flagged
}

// Report renders the simulator part of docs/accuracy.md: the tuning set in
// full and the held-out sets' totals.
func Report(cs, held, sglang []Case, builtin []BuiltinTruth) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Accuracy against simulator ground truth\n\n")
	p("<!-- Generated by `go generate ./simrun/accuracy` (package simrun/accuracy); a test fails when it is stale. -->\n\n")
	p("%d scenarios drawn at random (seed %d) across models, GPUs, tensor parallelism, engine limits,\n", len(cs), Seed)
	p("chunked prefill, prefix reuse, prompt and output lengths, arrivals and load from light to overloaded.\n")
	p("Each is diagnosed end to end as `llmdoctor demo --scenario FILE` does it: the simulator serves its\n")
	p("metrics and the scrape collector reads the window (in process here, over HTTP in the demo: the same\n")
	p("diagnosis). The simulator also knows where every request's time went; that ground truth, turned\n")
	p("into a bottleneck as below, is what the verdict is compared with.\n\n")

	right := 0
	for _, c := range cs {
		if c.OK() {
			right++
		}
	}
	p("**Overall: %d of %d verdicts right (%.1f%%).**\n\n", right, len(cs), 100*accuracyOf(cs))
	hh, hf := criticalOnHealthy(held)
	p("The rules were tuned while reading this set's misses. A second set of %d (seed %d), whose misses\n", len(held), HeldOutSeed)
	p("are not read while tuning, says how far that generalises: **%.1f%% right there**, and %d of its\n", 100*accuracyOf(held), hf)
	p("%d scenarios whose ground truth is clearly `none` got a critical finding.\n\n", hh)
	// The split deployments the simulator serves under vLLM's names only.
	var served []Case
	same := 0
	for i, c := range sglang {
		if c.Skipped {
			continue
		}
		served = append(served, c)
		if i < len(held) && c.Primary.Bottleneck == held[i].Primary.Bottleneck {
			same++
		}
	}
	left := len(sglang) - len(served)
	sglang = served
	sh, sf := criticalOnHealthy(sglang)
	p("The held-out set served with SGLang's metric names (its families, labels and bucket bounds;\n")
	p("no decode-time or per-request TPOT histogram, no finish reasons) is **%.1f%% right**; %d of its\n", 100*accuracyOf(sglang), sf)
	p("%d clearly-`none` scenarios got a critical finding, and %d of %d verdicts are the ones vLLM's\n", sh, same, len(sglang))
	p("names give")
	if left > 0 {
		p(" (%d split prefill/decode deployments are left out: the simulator serves those under vLLM's names only)", left)
	}
	p(".\n\n")
	spec := func(cs []Case) (n, right, costly int) {
		for _, c := range cs {
			if c.Scenario.Engine.Speculative == nil {
				continue
			}
			n++
			if c.OK() {
				right++
			}
			if c.Truth.SpecGain < 1 {
				costly++
			}
		}
		return n, right, costly
	}
	sn, sr, sc := spec(cs)
	hn, hr, _ := spec(held)
	gn, gr, _ := spec(sglang)
	p("A fifth of the scenarios speculate (drawn from each scenario's own seed, the rest of it as drawn):\n")
	p("1 to 6 draft tokens, each accepted with a chance of 10%% to 90%%, drafting at 2%% to 15%% of a weight\n")
	p("read per token. %d of this set's %d speculating scenarios are right (%d of them speculate at a loss);\n", sr, sn, sc)
	p("%d of %d in the held-out set, %d of %d on SGLang's names.\n\n", hr, hn, gr, gn)
	subset := func(cs []Case, in func(*sim.Scenario) bool) (n, right int) {
		for _, c := range cs {
			if in(c.Scenario) {
				n++
				if c.OK() {
					right++
				}
			}
		}
		return n, right
	}
	routed := func(sc *sim.Scenario) bool { return sc.Router != nil }
	split := func(sc *sim.Scenario) bool { return sc.Engine.Disaggregated != nil }
	rn, rr := subset(cs, routed)
	hrn, hrr := subset(held, routed)
	grn, grr := subset(sglang, routed)
	p("A tenth are served by 2 or 3 replicas behind a router (each given the traffic drawn for one), picking by\n")
	p("prefix affinity (half of them), round robin or the shortest queue: %d of this set's %d are right; %d of %d in\n", rr, rn, hrr, hrn)
	p("the held-out set, %d of %d on SGLang's names. ", grr, grn)
	dn, dr := subset(cs, split)
	hdn, hdr := subset(held, split)
	gdn, gdr := subset(sglang, split)
	p("Another tenth run prefill and decode on separate instances with a KV link of 1 to\n")
	p("50 GB/s; the verdict is the side's with the gravest finding: %d of this set's %d are right, %d of %d in the\n", dr, dn, hdr, hdn)
	p("held-out set, %d of %d on SGLang's names.\n\n", gdr, gdn)

	p("## Ground truth\n\n")
	p("The simulator adds up, for the requests that finish inside the window the diagnosis reads, the\n")
	p("time each spent in front of the engine (API server), in the queue, in prefill and in decode; the\n")
	p("preemptions and stalls in the window; which limit held admission while requests waited; and\n")
	p("what bounded the steps decoding streams waited on. From those means:\n\n")
	for _, l := range sim.LabelRules() {
		p("- %s\n", l)
	}
	p("\nThe ground truth of the built-in scenarios, beside the verdict each is built to produce:\n\n")
	p("| scenario | expected | ground truth | also right | deciding numbers |\n|---|---|---|---|---|\n")
	for _, x := range builtin {
		want := x.Scenario.Expect
		if len(x.Scenario.Also) > 0 {
			want += " or " + strings.Join(x.Scenario.Also, " or ")
		}
		p("| `%s` | `%s` | `%s` | %s | %s |\n", x.Scenario.Name, want, x.Label.Cause, codeList(x.Label.Also), x.Label.Why)
	}

	truthSeen, verdictSeen := map[string]bool{}, map[string]bool{}
	matrix := map[[2]string]int{}
	for _, c := range cs {
		truthSeen[c.Label.Cause], verdictSeen[c.Primary.Bottleneck] = true, true
		matrix[[2]string{c.Label.Cause, c.Primary.Bottleneck}]++
	}
	rows, cols := orderLabels(truthSeen), orderLabels(verdictSeen)

	p("\n## Per ground-truth label\n\n")
	p("A verdict is right when it is the ground-truth cause or one of the causes also accepted for that\nscenario.\n\n")
	p("| ground truth | scenarios | right | accuracy |\n|---|---:|---:|---:|\n")
	for _, r := range rows {
		var sub []Case
		for _, c := range cs {
			if c.Label.Cause == r {
				sub = append(sub, c)
			}
		}
		ok := 0
		for _, c := range sub {
			if c.OK() {
				ok++
			}
		}
		p("| `%s` | %d | %d | %.0f%% |\n", r, len(sub), ok, 100*accuracyOf(sub))
	}

	p("\n## Confusion matrix\n\n")
	p("Rows are the ground truth, columns the verdict. Off the diagonal is not always wrong: a verdict\nthe scenario also accepts counts as right above.\n\n")
	p("| truth \\ verdict |")
	for _, c := range cols {
		p(" `%s` |", c)
	}
	p("\n|---|")
	for range cols {
		p("---:|")
	}
	p("\n")
	for _, r := range rows {
		p("| `%s` |", r)
		for _, c := range cols {
			if n := matrix[[2]string{r, c}]; n > 0 {
				p(" %d |", n)
			} else {
				p(" · |")
			}
		}
		p("\n")
	}

	p("\n## Critical findings where nothing is wrong\n\n")
	healthy, flagged, borderline, borderFlagged := 0, 0, 0, 0
	ruleCount := map[string]int{}
	for _, c := range cs {
		if c.Label.Cause != "none" {
			continue
		}
		if c.Label.Borderline {
			borderline++
			if len(c.Critical) > 0 {
				borderFlagged++
			}
			continue
		}
		healthy++
		if len(c.Critical) > 0 {
			flagged++
		}
		for _, r := range c.Critical {
			ruleCount[r]++
		}
	}
	p("Of %d scenarios whose ground truth is `none` with a borderline stage (within 10%% of a problem), %d\n", borderline, borderFlagged)
	p("got a critical finding. Of the %d clearly `none`, %d got at least one critical finding", healthy, flagged)
	if len(ruleCount) == 0 {
		p(".\n")
	} else {
		var rs []string
		for r := range ruleCount {
			rs = append(rs, r)
		}
		sort.Slice(rs, func(i, j int) bool {
			return ruleCount[rs[i]] > ruleCount[rs[j]] || ruleCount[rs[i]] == ruleCount[rs[j]] && rs[i] < rs[j]
		})
		var parts []string
		for _, r := range rs {
			parts = append(parts, fmt.Sprintf("`%s` %d", r, ruleCount[r]))
		}
		p(": %s.\n", strings.Join(parts, ", "))
	}

	p("\n## Misses\n\n")
	kinds := map[string]int{}
	for _, c := range cs {
		if !c.OK() {
			rule := c.Primary.Rule
			if rule == "" {
				rule = "no rule"
			}
			kinds[fmt.Sprintf("`%s` → `%s` (%s)", c.Label.Cause, c.Primary.Bottleneck, rule)]++
		}
	}
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		return kinds[ks[i]] > kinds[ks[j]] || kinds[ks[i]] == kinds[ks[j]] && ks[i] < ks[j]
	})
	p("| ground truth → verdict (deciding rule) | scenarios |\n|---|---:|\n")
	for _, k := range ks {
		p("| %s | %d |\n", k, kinds[k])
	}
	p("\nTo reproduce one, write its scenario file and run the demo on it:\n\n")
	p("```\ngo run ./simrun/accuracy/gen -draw 17 -o /tmp/random-017.yaml\n")
	p("go run ./cmd/llmdoctor demo --scenario /tmp/random-017.yaml\n```\n\n")
	p("| # | scenario | ground truth | verdict (rule) | ground-truth numbers |\n|---|---|---|---|---|\n")
	for _, c := range cs {
		if c.OK() {
			continue
		}
		truth := "`" + c.Label.Cause + "`"
		if len(c.Label.Also) > 0 {
			truth += " (or " + codeList(c.Label.Also) + ")"
		}
		verdict := "`" + c.Primary.Bottleneck + "`"
		if c.Primary.Rule != "" {
			verdict += " (`" + c.Primary.Rule + "`)"
		}
		p("| %d | %s | %s: %s | %s | %s |\n", c.Index, scenarioLine(c.Scenario), truth, c.Label.Why, verdict, truthLine(c.Truth))
	}
	return b.String()
}

func codeList(xs []string) string {
	if len(xs) == 0 {
		return "—"
	}
	return "`" + strings.Join(xs, "`, `") + "`"
}

// scenarioLine is a scenario's parameters in one line.
func scenarioLine(sc *sim.Scenario) string {
	e, w := sc.Engine, sc.Workload
	var parts []string
	add := func(format string, a ...any) { parts = append(parts, fmt.Sprintf(format, a...)) }
	add("%s", sc.Setup())
	chunked := "unchunked"
	if e.ChunkedPrefill {
		chunked = "chunked"
	}
	add("seqs %d, budget %d %s", e.MaxNumSeqs, e.MaxNumBatchedTokens, chunked)
	mem := fmt.Sprintf("mem %.2f", e.GPUMemoryUtilization)
	if e.KVCacheDTypeBytes == 1 {
		mem += " fp8 KV"
	}
	add("%s", mem)
	if sp := e.Speculative; sp != nil {
		add("speculating %d at %.0f%% each, drafts %.0f%%", sp.Tokens, 100*sp.Acceptance, 100*sp.DraftCost)
	}
	arrival := fmt.Sprintf("%g/s", w.Rate)
	if w.Arrival == "bursty" {
		arrival += fmt.Sprintf(" bursty %g", w.BurstShape)
	}
	add("%s", arrival)
	add("prompt %s, output %s", lengthLine(w.Prompt), lengthLine(w.Output))
	if w.Prefix.Tokens > 0 && w.Prefix.Groups > 0 {
		px := fmt.Sprintf("prefix %d×%d", w.Prefix.Groups, w.Prefix.Tokens)
		if w.UniquePrefix {
			px += " unique"
		}
		if !e.PrefixCaching {
			px += ", caching off"
		}
		add("%s", px)
	}
	front := fmt.Sprintf("front %s", e.Front)
	if e.FrontPerKToken > 0 {
		front += fmt.Sprintf("+%s/k", e.FrontPerKToken)
	}
	add("%s, step %s", front, e.StepOverhead)
	add("window %s", sc.Duration)
	return strings.Join(parts, " · ")
}

func lengthLine(l sim.Length) string {
	switch l.Dist {
	case "fixed":
		return fmt.Sprintf("%d", l.Value)
	case "mix":
		var parts []string
		for _, x := range l.Parts {
			parts = append(parts, fmt.Sprintf("%.0f%% %s", 100*x.Weight, lengthLine(x.Length)))
		}
		return strings.Join(parts, " + ")
	}
	return fmt.Sprintf("~%.0f", l.Mean)
}

// truthLine is the ground truth's key numbers in one line.
func truthLine(g sim.GroundTruth) string {
	ms := func(s float64) string { return shortDuration(s) }
	line := fmt.Sprintf("TTFT %s = front %s + queue %s + prefill %s; E2E %s; TPOT p50 %s (%s without stalls)",
		ms(g.TTFT), ms(g.Front), ms(g.Queue), ms(g.Prefill), ms(g.E2E), ms(g.TPOTMedian), ms(g.TPOTSteady))
	if g.Queue > 0 {
		line += fmt.Sprintf("; queue held by seqs %.0f%%, tokens %.0f%%, KV %.0f%%",
			100*g.WaitSeqs/g.Queue, 100*g.WaitTokens/g.Queue, 100*g.WaitKV/g.Queue)
	}
	if g.Prefill > 0 {
		line += fmt.Sprintf("; own prefill %.0f%%", 100*g.PrefillOwn/g.Prefill)
	}
	line += fmt.Sprintf("; %.2f stalls taking %s, %.2f preemptions per request; decode steps memory %.0f%%, compute %.0f%%, overhead %.0f%%",
		g.StallsPerRequest, ms(g.StallTime), g.PreemptionsPerRequest, 100*g.DecodeMemory, 100*g.DecodeCompute, 100*g.DecodeOverhead)
	if g.SpecGain > 0 {
		line += fmt.Sprintf("; speculation %.2f× as fast as plain decoding", g.SpecGain)
	}
	return line
}

func shortDuration(s float64) string {
	switch {
	case s >= 10:
		return fmt.Sprintf("%.0fs", s)
	case s >= 1:
		return fmt.Sprintf("%.1fs", s)
	}
	return fmt.Sprintf("%.0fms", 1000*s)
}
