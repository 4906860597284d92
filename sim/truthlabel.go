package sim

import (
	"fmt"
	"sort"
)

// Thresholds of a user-visible problem in each stage. A stage's share is of
// mean TTFT (queue, prefill, front) or of mean end-to-end (decode, stalls).
const (
	queueMin      = 0.05 // s of mean queue wait
	queueShare    = 0.3
	prefillShare  = 0.5
	prefillTTFT   = 0.2 // s of mean TTFT
	frontShare    = 0.3
	frontMin      = 0.02 // s of mean front time
	decodeShare   = 0.6
	decodeTPOT    = 0.1  // s of median TPOT
	decodeTarget  = 0.05 // s of median TPOT: the common interactive target
	stallsPerReq  = 0.2
	kvWaitShare   = 0.5  // of queue wait held by KV blocks
	kvPreemptions = 0.01 // preemptions per finished request
	coScheduled   = 0.5  // of prefill time spent on other requests' work
	boundShare    = 0.5  // of decode stream time for memory or overhead to be the bound
	// specCosts: speculation gave decoding streams their tokens slower than
	// the same steps would have without it (SpecGain below 1); within
	// specMargin of 1 it is too close to call against the stage's own cause.
	specCosts      = 1.0
	specMargin     = 0.1
	runnerUpMargin = 0.1 // a second problem this close to the first is also acceptable
	// borderMargin: a stage within this fraction of every threshold is a
	// problem or not depending on which requests a window counts (TTFT at
	// the first token, the rest at the finish), so both answers are right.
	borderMargin = 0.1
	// Behind a router, a queue wait this much of which one replica holds
	// is the router's doing: it sent that replica more than its share.
	routedShare = 0.6
	// A KV pull between prefill and decode instances holding this share
	// of TTFT, and at least transferMin, is the problem.
	transferShare = 0.3
	transferMin   = 0.1 // s of mean transfer
)

// Problem is one stage holding a user-visible share of latency.
type Problem struct {
	Stage string  // queue, prefill, front, decode, interference
	Share float64 // of mean TTFT or mean end-to-end
	Cause string  // in the bottleneck vocabulary
}

// TruthLabel is ground truth in the bottleneck vocabulary.
type TruthLabel struct {
	// Cause is the dominant cause, "none" when no stage has a problem.
	Cause string
	// Also are other verdicts a correct diagnosis may give.
	Also []string
	// Why says which rule decided, in one line.
	Why string
	// Problems are every stage with a problem, largest share first.
	Problems []Problem
	// Borderline: nothing is wrong, but a stage is within borderMargin of a
	// problem; its cause is also accepted.
	Borderline bool
}

// Accepts reports whether a verdict agrees with the ground truth.
func (l TruthLabel) Accepts(verdict string) bool {
	if verdict == l.Cause {
		return true
	}
	for _, a := range l.Also {
		if verdict == a {
			return true
		}
	}
	return false
}

// Label turns ground truth into the dominant cause: the stage problem with
// the largest share, mapped to what caused it.
func (g GroundTruth) Label() TruthLabel {
	l := g.label(1)
	if l.Cause != "none" || len(l.Also) > 0 {
		return l
	}
	if near := g.label(1 - borderMargin); near.Cause != "none" {
		l.Borderline = true
		l.Why = fmt.Sprintf("no problem, but %s is within %.0f%% of one", near.Problems[0].Stage, 100*borderMargin)
		for _, p := range near.Problems {
			if !l.Accepts(p.Cause) {
				l.Also = append(l.Also, p.Cause)
			}
		}
	}
	return l
}

// label decides with every threshold scaled by k (1: as written).
func (g GroundTruth) label(k float64) TruthLabel {
	if g.Finished == 0 || g.TTFT <= 0 || g.E2E <= 0 {
		return TruthLabel{Cause: "none", Why: "no request finished in the window"}
	}
	queueMin, queueShare, prefillShare, prefillTTFT := k*queueMin, k*queueShare, k*prefillShare, k*prefillTTFT
	frontShare, frontMin, decodeShare, decodeTPOT := k*frontShare, k*frontMin, k*decodeShare, k*decodeTPOT
	stallsPerReq := k * stallsPerReq
	// Split prefill and decode: the prefill instance's queue and prefill
	// are the deployment's (zero otherwise).
	q, p, f := (g.Queue+g.UpstreamQueue)/g.TTFT, (g.Prefill+g.UpstreamPrefill)/g.TTFT, g.Front/g.TTFT
	x := g.Transfer / g.TTFT
	d := g.Decode / g.E2E
	interference := g.StallsPerRequest >= stallsPerReq
	kvHeld := g.Queue > 0 && g.WaitKV/g.Queue >= kvWaitShare
	loraHeld := g.Queue > 0 && g.WaitLoRA/g.Queue >= kvWaitShare
	preempted := g.PreemptionsPerRequest >= kvPreemptions
	var ps []Problem
	if g.Transfer >= k*transferMin && x >= k*transferShare {
		ps = append(ps, Problem{"transfer", x, "kv-transfer"})
	}
	if g.Queue+g.UpstreamQueue >= queueMin && q >= queueShare {
		c := "queueing"
		switch {
		case kvHeld || preempted:
			c = "kv-capacity"
		case loraHeld:
			c = "lora"
		case g.Replicas > 1 && g.QueueTopShare >= routedShare:
			c = "routing"
		case interference:
			c = "prefill-interference"
		}
		ps = append(ps, Problem{"queue", q, c})
	}
	// Prefill spent mostly on other requests' prompts, with streams
	// stalling too: long prefills are holding everyone up.
	crowded := g.Prefill > 0 && 1-g.PrefillOwn/g.Prefill >= coScheduled && interference
	if p >= prefillShare && g.TTFT >= prefillTTFT {
		c := "prefill"
		if crowded {
			c = "prefill-interference"
		}
		ps = append(ps, Problem{"prefill", p, c})
	}
	if f >= frontShare && g.Front >= frontMin {
		ps = append(ps, Problem{"front", f, "cpu-overhead"})
	}
	// Slow only because of stalls: the prefills are the cause.
	stalled := interference && g.TPOTSteady < decodeTPOT
	costly := g.SpecGain > 0 && g.SpecGain < specCosts
	if d >= decodeShare && g.TPOTMedian >= decodeTPOT {
		c := "decode"
		switch {
		case stalled:
			c = "prefill-interference"
		case costly:
			c = "speculation"
		}
		ps = append(ps, Problem{"decode", d, c})
	}
	if interference {
		ps = append(ps, Problem{"interference", g.StallTime / g.E2E, "prefill-interference"})
	}
	if len(ps) == 0 {
		l := TruthLabel{Cause: "none", Why: "no stage holds a problem share"}
		if d >= decodeShare && g.TPOTMedian >= decodeTarget {
			// Slower than the interactive target, not yet slow: naming
			// decode's bound is fair too.
			l.Why = fmt.Sprintf("no problem; median TPOT %.0f ms is over the 50 ms target", 1000*g.TPOTMedian)
			l.Also = g.decodeCauses()
			if g.SpecGain > 0 && g.SpecGain < specCosts+specMargin {
				l.Also = append(l.Also, "speculation")
			}
		}
		return l
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Share > ps[j].Share })
	top := ps[0]
	l := TruthLabel{Cause: top.Cause, Problems: ps}
	also := func(c string) {
		if c != l.Cause && !l.Accepts(c) {
			l.Also = append(l.Also, c)
		}
	}
	switch top.Stage {
	case "queue":
		switch top.Cause {
		case "kv-capacity":
			if kvHeld {
				l.Why = fmt.Sprintf("queue %.0f%% of TTFT, KV blocks held admission %.0f%% of the wait", 100*q, 100*g.WaitKV/g.Queue)
			} else {
				// Preemptions alone: the cap or budget held the queue, so
				// raising them is also a fair first step.
				l.Why = fmt.Sprintf("queue %.0f%% of TTFT, %.2f preemptions per request", 100*q, g.PreemptionsPerRequest)
				also("queueing")
			}
		case "prefill-interference":
			l.Why = fmt.Sprintf("queue %.0f%% of TTFT behind long prefills, %.2f stalls per request", 100*q, g.StallsPerRequest)
			also("queueing")
		case "lora":
			l.Why = fmt.Sprintf("queue %.0f%% of TTFT, LoRA adapter slots held the head of the queue %.0f%% of the wait", 100*q, 100*g.WaitLoRA/g.Queue)
		case "routing":
			l.Why = fmt.Sprintf("queue %.0f%% of TTFT, %.0f%% of the wait on one of %d replicas behind the router", 100*q, 100*g.QueueTopShare, g.Replicas)
			also("queueing")
		default:
			l.Why = fmt.Sprintf("queue %.0f%% of TTFT, held by %s", 100*q, g.queueHold())
			if costly {
				// Speculation that costs more than it saves is capacity
				// lost: turning it off, or more replicas, both serve.
				l.Why += fmt.Sprintf("; speculation gives tokens %.2f× as fast as plain decoding would", g.SpecGain)
				also("speculation")
			}
		}
	case "prefill":
		if crowded {
			l.Why = fmt.Sprintf("prefill %.0f%% of TTFT %.2fs, %.0f%% of it other requests' prefills; %.2f stalls per request",
				100*p, g.TTFT, 100*(1-g.PrefillOwn/g.Prefill), g.StallsPerRequest)
			also("prefill")
		} else {
			l.Why = fmt.Sprintf("prefill %.0f%% of TTFT %.2fs", 100*p, g.TTFT)
		}
		if g.PrefixDefeated {
			also("prefix-cache")
		}
	case "front":
		l.Why = fmt.Sprintf("front %.0f%% of TTFT (%.0f ms)", 100*f, 1000*g.Front)
	case "decode":
		l.Why = fmt.Sprintf("decode %.0f%% of end-to-end, median TPOT %.0f ms", 100*d, 1000*g.TPOTMedian)
		if top.Cause == "speculation" {
			l.Why += fmt.Sprintf("; speculation gives tokens %.2f× as fast as plain decoding would", g.SpecGain)
			if g.SpecGain >= specCosts-specMargin {
				also("decode")
			}
		} else if stalled {
			l.Why += fmt.Sprintf(", %.0f ms without its %.2f stalls per request", 1000*g.TPOTSteady, g.StallsPerRequest)
			also("decode")
		} else {
			for _, c := range g.decodeCauses()[1:] {
				also(c)
			}
			if g.SpecGain > 0 && g.SpecGain < specCosts+specMargin {
				also("speculation")
			}
		}
	case "interference":
		l.Why = fmt.Sprintf("%.2f stalls per request, %.0f%% of end-to-end", g.StallsPerRequest, 100*top.Share)
	case "transfer":
		l.Why = fmt.Sprintf("the KV pull from the prefill instance %.0f%% of TTFT (%.0f ms)", 100*x, 1000*g.Transfer)
	}
	for _, x := range ps[1:] {
		if x.Share >= top.Share-runnerUpMargin {
			also(x.Cause)
		}
	}
	return l
}

// decodeCauses are decode and what bounds its steps, when one part does.
func (g GroundTruth) decodeCauses() []string {
	out := []string{"decode"}
	if g.DecodeMemory >= boundShare {
		out = append(out, "memory-bandwidth")
	}
	if g.DecodeOverhead >= boundShare {
		out = append(out, "cpu-overhead")
	}
	return out
}

// queueHold names what held admission for most of the queue wait.
func (g GroundTruth) queueHold() string {
	best, name := g.WaitStep, "steps under way"
	for _, x := range []struct {
		v float64
		n string
	}{{g.WaitSeqs, "the max_num_seqs cap"}, {g.WaitTokens, "the token budget"}, {g.WaitKV, "KV blocks"}, {g.WaitLoRA, "LoRA adapter slots"}} {
		if x.v > best {
			best, name = x.v, x.n
		}
	}
	return name
}

// LabelRules says how Label decides, one line each, for the docs.
func LabelRules() []string {
	pct := func(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }
	ms := func(x float64) string { return fmt.Sprintf("%.0f ms", 1000*x) }
	return []string{
		"Shares: queue, prefill and front (API server) of mean TTFT (TTFT = front + queue + prefill); " +
			"decode of mean end-to-end; stall time of mean end-to-end.",
		fmt.Sprintf("A stall is a decode stream frozen by a step longer than %.1f s whose prefill work is most of it "+
			"(a slow decode-only step is decode's problem, not interference).", stallStep),
		"A stage has a user-visible problem when: " +
			fmt.Sprintf("**queue** mean ≥ %s and share ≥ %s; ", ms(queueMin), pct(queueShare)) +
			fmt.Sprintf("**prefill** share ≥ %s and mean TTFT ≥ %s; ", pct(prefillShare), ms(prefillTTFT)) +
			fmt.Sprintf("**front** share ≥ %s and mean ≥ %s; ", pct(frontShare), ms(frontMin)) +
			fmt.Sprintf("**decode** share ≥ %s and median TPOT ≥ %s; ", pct(decodeShare), ms(decodeTPOT)) +
			fmt.Sprintf("**interference** ≥ %.1f stalls per finished request.", stallsPerReq),
		"No problem: `none`. Otherwise the problem with the largest share wins, mapped to its cause:",
		fmt.Sprintf("queue → `kv-capacity` when free KV blocks held admission for ≥ %s of the queue wait or preemptions "+
			"are ≥ %s of finished requests (preemptions alone also accept `queueing`); else `lora` when every LoRA adapter slot "+
			"held the head of the queue for as much of the wait; else `prefill-interference` "+
			"when the interference problem holds too (also `queueing`); else `queueing`.", pct(kvWaitShare), pct(kvPreemptions)),
		fmt.Sprintf("prefill → `prefill`; but `prefill-interference` (also `prefill`) when ≥ %s of the prefill time went "+
			"to other requests' prompts in the same steps and the interference problem holds. "+
			"Also `prefix-cache` when the workload's shared prefix, ≥ 25%% of the prompt, cannot be reused "+
			"(a per-request string early in it, or prefix caching off).", pct(coScheduled)),
		"front → `cpu-overhead`.",
		fmt.Sprintf("decode → `decode`; also `memory-bandwidth` when ≥ %s of decoding streams' step time went to "+
			"weight and KV reads, `cpu-overhead` when ≥ %s went to fixed step overhead. But `prefill-interference` "+
			"(also `decode`) when the interference problem holds and the median TPOT without the stalls' time is "+
			"under %s.", pct(boundShare), pct(boundShare), ms(decodeTPOT)),
		"interference → `prefill-interference`.",
		fmt.Sprintf("Under speculative decoding the simulator also prices each step without it (every decode computing and keeping one token, "+
			"no drafting): the gain is how many times faster streams got their tokens than those steps would have given them. "+
			"A decode problem with a gain under %.0f → `speculation` (also `decode` within %.0f%% of it); a queue held by the "+
			"cap or the budget with a gain under %.0f also accepts `speculation`; a decode problem, or a decode over the 50 ms target, "+
			"with a gain under %.1f also accepts `speculation`.", specCosts, 100*specMargin, specCosts, specCosts+specMargin),
		fmt.Sprintf("Prefill and decode on separate instances: TTFT counts from the client's request, the prefill instance's queue "+
			"and prefill count as queue and prefill, and a **transfer** problem (the decode instance's pull of the prompt's KV) is "+
			"a share ≥ %s and a mean ≥ %s → `kv-transfer`.", pct(transferShare), ms(transferMin)),
		fmt.Sprintf("Replicas behind a router: a queue problem of which one replica holds ≥ %s of the wait → `routing` (also `queueing`), "+
			"checked after `kv-capacity` and `lora`.", pct(routedShare)),
		fmt.Sprintf("A second problem whose share is within %.0f points of the winner's is also accepted.", 100*runnerUpMargin),
		fmt.Sprintf("No problem but decode ≥ %s of end-to-end with median TPOT ≥ %s (the common interactive target): "+
			"`none`, also `decode` and its bound as above.", pct(decodeShare), ms(decodeTarget)),
		fmt.Sprintf("No problem, but one with every threshold %.0f%% looser (borderline): `none`, also that problem's cause. "+
			"Near a threshold, which requests a window counts (TTFT at the first token, the rest at the finish) decides it.",
			100*borderMargin),
	}
}
