package sim

import (
	"math"
	"time"
)

// stallStep is the step length past which a decode stream counts as stalled.
const stallStep = 0.5

// holdReason is what stopped the scheduler admitting the head of the queue.
type holdReason int

const (
	holdNone   holdReason = iota // nothing waited after admission
	holdSeqs                     // max_num_seqs running already
	holdTokens                   // the step's token budget was spent
	holdKV                       // no free KV blocks for the next request
	holdLoRA                     // every LoRA adapter slot held by another adapter
	holdReasons
)

// requestTruth is what one request went through, for the ground truth.
type requestTruth struct {
	// Its first wait in the queue split by what held it (holdNone: an
	// engine step was already under way when it arrived).
	clock, by [holdReasons]float64 // clock: Engine.holdClock when it joined the queue
	// prefillOwn is the part of its prefill steps spent on its own tokens.
	prefillOwn float64
	// Stalls: frozen while decoding behind prefill work.
	stalls    int
	stallTime float64
	// Disaggregated decode instance: the KV pull, and the time before
	// the hand-over (upstream), of it the prefill instance's front end
	// (counted as front), queue and prefill.
	transfer, upstream, upFront, upQueue, upPrefill float64
}

// truthAccumulator sums what requests finishing after MarkTruth went through.
type truthAccumulator struct {
	start                                    float64
	n                                        int
	front, queue, prefill, decode, ttft, e2e float64
	prefillOwn, prompt, output               float64
	wait                                     [holdReasons]float64
	tpot, tpotSteady                         logHistogram
	preemptions, stalls                      int
	stallTime                                float64
	// Decode stream-seconds (step time × streams decoding in it) by what
	// bounded the step; mixed counts steps that also carried prefill work.
	decodeMem, decodeCmp, decodeComm, decodeOverhead, decodeMixed, decodeAll float64
	// Under speculative decoding: decode stream-seconds and tokens kept,
	// and what the same steps would have taken and given without it.
	specTime, specTokens, plainTime, plainTokens float64
	transfer, upstream, upQueue, upPrefill       float64
	// Queue wait by replica behind a router.
	replicaQueue []float64
}

// GroundTruth is what the simulator knows about the requests that finished
// in a window: where their time went and which limits held them.
type GroundTruth struct {
	Start, End float64 // virtual seconds
	Finished   int
	// Means over finished requests, seconds. TTFT = Front + Queue + Prefill.
	Front, Queue, Prefill, Decode, TTFT, E2E float64
	// PrefillOwn is the part of Prefill spent on the request's own tokens;
	// the rest went to other requests' work in the same steps.
	PrefillOwn     float64
	Prompt, Output float64 // mean tokens
	// TPOTMedian is over requests with more than one output token;
	// TPOTSteady the same without the time their stalls took.
	TPOTMedian, TPOTSteady float64
	// Preemptions in the window, per finished request.
	PreemptionsPerRequest float64
	// Stalls: a decode stream frozen for more than 0.5 s by a step whose
	// prefill work is most of its time. StallTime is their mean seconds per request.
	StallsPerRequest, StallTime float64
	// Mean queue seconds per request by what held admission: the
	// max_num_seqs cap, the token budget, free KV blocks, or an engine step
	// already under way when the request arrived.
	WaitSeqs, WaitTokens, WaitKV, WaitStep float64
	// WaitLoRA is the mean queue seconds the head of the queue waited for
	// a LoRA adapter slot.
	WaitLoRA float64
	// Shares of decode stream time in steps bounded by weight and KV reads,
	// by FLOPs, by all-reduces, and by fixed CPU step overhead; Mixed is the
	// share in steps that also carried prefill work (included in the four).
	DecodeMemory, DecodeCompute, DecodeComm, DecodeOverhead, DecodeMixed float64
	// PrefixDefeated: the workload shares a system prompt that the server
	// cannot reuse (a per-request string early in it, or prefix caching off).
	PrefixDefeated bool
	// SpecGain is, under speculative decoding, how many times faster a
	// decoding stream got its tokens than the same steps would have given
	// them without it (below 1: speculation cost more than it saved); 0
	// without speculative decoding.
	SpecGain float64
	// Disaggregated prefill and decode: Upstream is the mean time before
	// the decode instance had the request (the prefill instance's queue
	// UpstreamQueue and prefill UpstreamPrefill, and the hand-over), and
	// Transfer the mean pull of its KV. TTFT and E2E then count from the
	// client's request: TTFT = Upstream + Front + Queue + Transfer + Prefill.
	Upstream, UpstreamQueue, UpstreamPrefill, Transfer float64
	// Behind a router: how many replicas, and the share of all queue
	// wait the replica with the most of it holds.
	Replicas      int
	QueueTopShare float64
}

// WindowTruth runs a scenario the way a step-mode Server serves it to a
// scraper that takes scrapes+1 samples Duration/scrapes apart after the
// warm-up, and returns the ground truth of the window between the first
// sample and the last.
func WindowTruth(sc *Scenario, scrapes int) (GroundTruth, error) {
	e, err := New(sc, false)
	if err != nil {
		return GroundTruth{}, err
	}
	e.AdvanceTo(sc.Warmup.Seconds())
	e.MarkTruth()
	// The same virtual instants as Server.serve, summed the same way.
	at, step := sc.Warmup.Seconds(), (sc.Duration / time.Duration(scrapes)).Seconds()
	for k := 0; k < scrapes; k++ {
		at += step
		e.AdvanceTo(at)
	}
	return e.Truth(), nil
}

// MarkTruth starts a ground-truth window at the current virtual time.
func (e *Engine) MarkTruth() {
	e.truth = &truthAccumulator{start: e.now}
	// Every replica behind a router adds to one account.
	for _, x := range e.Replicas()[1:] {
		x.truth = e.truth
	}
}

// Truth reports the window since MarkTruth (zero when it was not called).
func (e *Engine) Truth() GroundTruth {
	a := e.truth
	if a == nil {
		return GroundTruth{}
	}
	g := GroundTruth{Start: a.start, End: e.now, Finished: a.n}
	w := e.sc.Workload
	if n := float64(a.n); n > 0 {
		g.Front, g.Queue, g.Prefill, g.Decode = a.front/n, a.queue/n, a.prefill/n, a.decode/n
		g.TTFT, g.E2E, g.Prompt, g.Output = a.ttft/n, a.e2e/n, a.prompt/n, a.output/n
		g.PrefillOwn = a.prefillOwn / n
		g.WaitStep, g.WaitSeqs = a.wait[holdNone]/n, a.wait[holdSeqs]/n
		g.WaitTokens, g.WaitKV = a.wait[holdTokens]/n, a.wait[holdKV]/n
		g.WaitLoRA = a.wait[holdLoRA] / n
		g.Transfer, g.Upstream = a.transfer/n, a.upstream/n
		g.UpstreamQueue, g.UpstreamPrefill = a.upQueue/n, a.upPrefill/n
		if g.Replicas = len(e.Replicas()); g.Replicas > 1 {
			var top, all float64
			for _, q := range a.replicaQueue {
				top, all = math.Max(top, q), all+q
			}
			if all > 0 {
				g.QueueTopShare = top / all
			}
		}
		g.PreemptionsPerRequest = float64(a.preemptions) / n
		g.StallsPerRequest, g.StallTime = float64(a.stalls)/n, a.stallTime/n
		g.TPOTMedian, g.TPOTSteady = a.tpot.quantile(0.5), a.tpotSteady.quantile(0.5)
		if w.Prefix.Tokens > 0 && (w.UniquePrefix || w.Prefix.Groups > 0 && !e.sc.Engine.PrefixCaching) {
			// Only when the shared part is a real share of the prompt.
			g.PrefixDefeated = float64(w.Prefix.Tokens) >= 0.25*g.Prompt
		}
	}
	if a.specTime > 0 && a.specTokens > 0 && a.plainTokens > 0 {
		g.SpecGain = (a.plainTime / a.plainTokens) / (a.specTime / a.specTokens)
	}
	if t := a.decodeAll; t > 0 {
		g.DecodeMemory, g.DecodeCompute, g.DecodeComm = a.decodeMem/t, a.decodeCmp/t, a.decodeComm/t
		g.DecodeOverhead, g.DecodeMixed = a.decodeOverhead/t, a.decodeMixed/t
	}
	return g
}

// joinWaiting notes when a request enters the queue; the time since it was
// handed to the engine went by in a step already under way.
func (e *Engine) joinWaiting(r *request) {
	r.truth.clock = e.holdClock
	r.truth.by[holdNone] = e.now - r.enqueued
}

// admitted closes a request's first wait. FCFS: every waiting request is held
// by what holds the head, so one clock per reason covers them all.
func (e *Engine) admitted(r *request) {
	for k := holdSeqs; k < holdReasons; k++ {
		r.truth.by[k] = e.holdClock[k] - r.truth.clock[k]
	}
}

// holdFor runs the clock of whatever holds the queue for dt seconds.
func (e *Engine) holdFor(dt float64) {
	if len(e.waiting) > 0 && e.hold != holdNone {
		e.holdClock[e.hold] += dt
	}
}

// observeStep counts what a step did to the decode streams: which part of
// the step's price they waited on, and whether prefill work stalled them.
func (e *Engine) observeStep(batch []work, dt float64) {
	decodes, prefill := 0, false
	for _, w := range batch {
		if w.r.firstToken < 0 {
			w.r.truth.prefillOwn += dt * float64(w.n) / e.last.tokens
		}
		if w.decode {
			decodes++
		} else {
			prefill = true
		}
	}
	a := e.truth
	if a == nil {
		return
	}
	if decodes > 0 {
		c := e.last
		x := float64(decodes) // every decoding stream waits the whole step
		if c.mem >= c.cmp {
			a.decodeMem += x * c.mem
		} else {
			a.decodeCmp += x * c.cmp
		}
		a.decodeComm += x * c.comm
		a.decodeOverhead += x * c.overhead
		a.decodeAll += x * dt
		if prefill {
			a.decodeMixed += x * dt
		}
		if e.sc.Engine.Speculative != nil {
			e.truthSpec(batch, dt, x)
		}
	}
	if !prefill || dt <= stallStep {
		return
	}
	// Stalled only when the prefill work is most of the step: a slow
	// decode-only step is decode's problem, not interference.
	var only []work
	for _, w := range batch {
		if w.decode {
			only = append(only, w)
		}
	}
	if len(only) > 0 {
		c := e.cost(only)
		if c.gpu()+c.overhead > dt/2 {
			return
		}
	}
	for _, r := range e.running {
		if r.generated > 0 && r.remaining() == 1 {
			r.truth.stalls++
			r.truth.stallTime += dt
		}
	}
}

// truthSpec prices a speculative step without speculation: each decode
// computing and keeping one token, no drafting.
func (e *Engine) truthSpec(batch []work, dt, decodes float64) {
	a := e.truth
	plain := make([]work, len(batch))
	kept := 0.0
	for i, w := range batch {
		plain[i] = w
		if w.decode {
			plain[i].n, plain[i].keep = 1, 1
			kept += float64(w.keep)
		}
	}
	c := e.cost(plain)
	c.draft = 0
	a.specTime += decodes * dt
	a.specTokens += kept
	a.plainTime += decodes * (c.gpu() + c.overhead)
	a.plainTokens += decodes
}

// truthFinished adds a finished request to the window's sums.
func (e *Engine) truthFinished(r *request) {
	a := e.truth
	if a == nil {
		return
	}
	a.n++
	a.front += r.enqueued - r.arrival + r.truth.upFront
	a.queue += r.scheduled - r.enqueued - r.truth.transfer
	for len(a.replicaQueue) <= e.replica {
		a.replicaQueue = append(a.replicaQueue, 0)
	}
	a.replicaQueue[e.replica] += r.scheduled - r.enqueued - r.truth.transfer
	a.transfer += r.truth.transfer
	a.upstream += r.truth.upstream
	a.upQueue += r.truth.upQueue
	a.upPrefill += r.truth.upPrefill
	a.prefill += r.firstToken - r.scheduled
	a.prefillOwn += r.truth.prefillOwn
	decode := r.lastTk - r.firstToken
	a.decode += decode
	a.ttft += r.firstToken - r.arrival + r.truth.upstream
	a.e2e += e.now - r.arrival + r.truth.upstream
	a.prompt += float64(r.prompt)
	a.output += float64(r.generated)
	for k := range a.wait {
		a.wait[k] += r.truth.by[k]
	}
	a.stalls += r.truth.stalls
	a.stallTime += r.truth.stallTime
	if r.generated > 1 {
		a.tpot.observe(decode / float64(r.generated-1))
		a.tpotSteady.observe((decode - r.truth.stallTime) / float64(r.generated-1))
	}
}

// logHistogram keeps positive values in 1% buckets from 0.1 ms to 1000 s,
// for medians without keeping every value.
type logHistogram struct {
	counts []int
	n      int
}

const (
	logHistMin   = 1e-4
	logHistRatio = 1.01
	logHistSize  = 1620 // log(1e7) / log(1.01)
)

func (h *logHistogram) observe(x float64) {
	if h.counts == nil {
		h.counts = make([]int, logHistSize)
	}
	i := 0
	if x > logHistMin {
		i = min(logHistSize-1, int(math.Log(x/logHistMin)/math.Log(logHistRatio)))
	}
	h.counts[i]++
	h.n++
}

// quantile returns the geometric middle of the bucket holding quantile q.
func (h *logHistogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := q * float64(h.n)
	seen := 0
	for i, c := range h.counts {
		seen += c
		if float64(seen) >= rank && c > 0 {
			return logHistMin * math.Pow(logHistRatio, float64(i)+0.5)
		}
	}
	return logHistMin * math.Pow(logHistRatio, logHistSize)
}
