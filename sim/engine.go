package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"math/rand"
	"slices"
)

// Efficiency factors: kernels reach about 85% of peak HBM bandwidth and 55% of
// peak tensor FLOPs in practice.
const (
	bandwidthEfficiency = 0.85
	computeEfficiency   = 0.55
	maxModelLen         = 32768
)

type request struct {
	id                 int
	arrival, enqueued  float64
	prompt, output     int
	group, shared      int
	cached             int // prompt tokens served from the prefix cache at first scheduling
	computed           int // tokens whose KV is computed
	generated          int
	blocks             int // blocks held, excluding pinned shared prefix blocks
	pinned             int // group whose shared blocks this request pins (-1 none)
	scheduled          float64
	firstToken, lastTk float64
	countedPrompt      bool
	preemptions        int
	verifies           int // speculative verify passes
	adapter            int // LoRA adapter, -1 for the base model
	itls               []float64
	streaming          bool
	truth              requestTruth
	// maxTokens is the request's max_tokens parameter as the metrics
	// report it (0: the 2048 a scenario's client asks for).
	maxTokens int
	// call, for a request sent over the API, hears its tokens.
	call *apiCall
	// Disaggregated: on the prefill instance, the output the decode
	// instance will give it; on the decode instance, remote says its
	// prompt's KV comes from the prefill instance, loadDone when its pull
	// ends, loaded that it has.
	decodeOutput int
	remote       bool
	loaded       bool
	loadDone     float64
	// origin is when the client sent it (its arrival at the prefill
	// instance on the decode one), landed when its KV arrived, up the
	// prefill instance's request.
	origin, landed float64
	up             *request
}

func (r *request) remaining() int { return r.prompt + r.generated - r.computed }

// Record is one finished request, as a client or a log would see it.
type Record struct {
	ID                  int
	Arrival             float64 // virtual seconds
	Prompt, Output      int
	Cached              int
	Front, Queue        float64
	Prefill, Decode     float64
	TTFT, E2E           float64
	ClientTTFT          float64
	ITLs                []float64
	Streaming           bool
	Preemptions         int
	FinishReason, Error string
}

type prefixGroup struct {
	blocks, refs int
	lastUsed     float64
	cached       bool
}

// Engine is the simulated server.
type Engine struct {
	sc    *Scenario
	gpu   GPU
	model Model
	rng   *rand.Rand

	now float64
	// until is the latest time AdvanceTo was asked for; a step may end past it.
	until       float64
	nextArrival float64
	nextID      int
	pending     pendingHeap
	waiting     []*request
	running     []*request

	totalBlocks, usedBlocks, cachedBlocks int
	groups                                map[int]*prefixGroup
	// apiGroups maps a block hash of an API request's prompt to the prefix
	// group holding it.
	apiGroups       map[uint64]int
	nextAPIGroup    int
	kvBytesPerToken float64

	m *metrics
	// Records of finished requests, when kept.
	Records     []Record
	keepRecords bool
	// MinDecodeSlack is the smallest (step time − weight bytes ÷ peak
	// bandwidth) over steps with decodes: never negative.
	MinDecodeSlack float64
	// Steps counts engine steps.
	Steps int

	batch []work // reused between steps
	done  []*request

	// hold is what stopped admission at the last step; holdClock the time
	// the waiting queue has spent held by each limit since the start.
	hold      holdReason
	holdClock [holdReasons]float64
	last      stepCost
	truth     *truthAccumulator
	// passed counts the waiting requests the last step passed over for
	// want of a LoRA adapter slot (vLLM's deferred requests).
	passed int
	// Disaggregated: a decode instance's prefill instance (prefill), and
	// a prefill instance's decode instance (decode); loading are the
	// requests whose KV the decode instance is pulling.
	prefill, decode *Engine
	loading         []*request
	// router, on the first replica of a scenario with a router, routes
	// the traffic over the replicas; replica is this engine's index.
	router  *routerState
	replica int
}

// New builds an engine for a scenario. keepRecords keeps every finished
// request (for bench output and tests).
func New(sc *Scenario, keepRecords bool) (*Engine, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	gpu, _ := lookupGPU(sc.GPU)
	model, _ := lookupModel(sc.Model)
	if sc.Engine.Cost != nil {
		// A fitted cost needs no shape; the GPU's numbers only keep the
		// DCGM gauges finite.
		if model.Served == "" {
			model = Model{Name: sc.Model, Served: sc.Model, DTypeBytes: 2}
		}
		if gpu.Name == "" {
			gpu = GPUs["H100-SXM"]
		}
	}
	e := &Engine{sc: sc, gpu: gpu, model: model, rng: rand.New(rand.NewSource(sc.Seed)),
		groups: map[int]*prefixGroup{}, keepRecords: keepRecords, MinDecodeSlack: math.Inf(1)}
	e.kvBytesPerToken = model.KVBytesPerToken()
	if b := sc.Engine.KVCacheDTypeBytes; b > 0 {
		e.kvBytesPerToken *= b / model.DTypeBytes
	}
	free := gpu.MemBytes*float64(sc.TP)*sc.Engine.GPUMemoryUtilization - model.WeightBytes()
	e.totalBlocks = int(free / (e.kvBytesPerToken * float64(sc.Engine.BlockSize)))
	if sc.Engine.GPUBlocks > 0 {
		e.totalBlocks = sc.Engine.GPUBlocks
	}
	if e.totalBlocks < 16 {
		return nil, fmt.Errorf("scenario %s: %s does not fit %d × %s at gpu_memory_utilization %.2f", sc.Name,
			model.Name, sc.TP, gpu.Name, sc.Engine.GPUMemoryUtilization)
	}
	e.m = newMetrics(e)
	if d := sc.Engine.Disaggregated; d != nil {
		// The prefill instance draws the traffic; the decode instance
		// serves what it hands over.
		pc := *sc
		pc.Engine.Disaggregated = nil
		p, err := New(&pc, false)
		if err != nil {
			return nil, err
		}
		p.decode, e.prefill = e, p
		e.nextArrival = math.Inf(1)
		return e, nil
	}
	if sc.Router != nil {
		if err := newRouter(e); err != nil {
			return nil, err
		}
	}
	if n := sc.Workload.Concurrency; sc.Workload.External || n > 0 {
		e.nextArrival = math.Inf(1)
		for range n {
			heap.Push(&e.pending, e.newRequest(0))
		}
	} else {
		e.nextArrival = e.gap(0)
	}
	return e, nil
}

// Now is the virtual time in seconds since the engine started.
func (e *Engine) Now() float64 { return e.now }

// GPUBlocks is the number of KV blocks.
func (e *Engine) GPUBlocks() int { return e.totalBlocks }

func (e *Engine) rate(t float64) float64 {
	r := e.sc.Workload.Rate
	warm := e.sc.Warmup.Seconds()
	for _, s := range e.sc.Workload.Steps {
		if t >= warm+s.At.Seconds() {
			r = s.Rate
		}
	}
	return r
}

// gap draws the time to the next arrival.
func (e *Engine) gap(t float64) float64 {
	rate := e.rate(t)
	if e.sc.Workload.Arrival == "bursty" {
		k := e.sc.Workload.BurstShape
		return t + gammaSample(e.rng, k)/(k*rate)
	}
	return t + e.rng.ExpFloat64()/rate
}

// gammaSample draws Gamma(k, 1) (Marsaglia and Tsang; boosted for k < 1).
func gammaSample(r *rand.Rand, k float64) float64 {
	if k < 1 {
		return gammaSample(r, k+1) * math.Pow(r.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

func (e *Engine) newRequest(at float64) *request {
	w := e.sc.Workload
	r := &request{id: e.nextID, arrival: at, group: -1, pinned: -1, scheduled: -1, firstToken: -1,
		streaming: w.Streaming == nil || *w.Streaming, adapter: -1}
	e.nextID++
	r.prompt = w.Prompt.draw(e.rng)
	r.output = w.Output.draw(e.rng)
	limit := min(maxModelLen, e.totalBlocks*e.sc.Engine.BlockSize/2)
	if r.prompt+r.output > limit {
		r.prompt = max(1, limit-r.output)
		if r.prompt+r.output > limit {
			r.output = max(1, limit-r.prompt)
		}
	}
	switch {
	case w.UniquePrefix && w.Prefix.Tokens > 0:
		// A per-request string early in the system prompt: nothing is shared.
		r.group, r.shared = 1_000_000+r.id, min(w.Prefix.Tokens, r.prompt)
	case w.Prefix.Groups > 0 && w.Prefix.Tokens > 0 && w.Prefix.Skew:
		r.group, r.shared = drawAdapter(e.rng, w.Prefix.Groups), min(w.Prefix.Tokens, r.prompt)
	case w.Prefix.Groups > 0 && w.Prefix.Tokens > 0:
		r.group, r.shared = e.rng.Intn(w.Prefix.Groups), min(w.Prefix.Tokens, r.prompt)
	}
	front := e.sc.Engine.Front.Seconds()*(0.5+e.rng.Float64()) + e.sc.Engine.FrontPerKToken.Seconds()*float64(r.prompt)/1000
	r.enqueued = at + front
	if n := w.Adapters; n > 0 {
		r.adapter = drawAdapter(e.rng, n)
	}
	if e.decode != nil {
		// The proxy asks the prefill instance for one token.
		r.decodeOutput, r.output, r.maxTokens = r.output, 1, 1
	}
	return r
}

// receive takes a request the prefill instance finished at virtual time
// at: the proxy hands it over, and the decode instance pulls its KV.
func (e *Engine) receive(pr *request, at float64) {
	d := e.sc.Engine.Disaggregated
	r := &request{id: e.nextID, arrival: at + d.Handoff.Seconds(), group: -1, pinned: -1, scheduled: -1, firstToken: -1,
		streaming: pr.streaming, adapter: pr.adapter, prompt: pr.prompt, output: pr.decodeOutput, remote: true}
	e.nextID++
	r.truth.upstream = r.arrival - pr.arrival
	r.origin, r.up = pr.arrival, pr
	r.truth.upFront = pr.enqueued - pr.arrival
	r.truth.upQueue = pr.scheduled - pr.enqueued
	r.truth.upPrefill = pr.firstToken - pr.scheduled
	r.enqueued = r.arrival + e.sc.Engine.Front.Seconds()*(0.5+e.rng.Float64()) + e.sc.Engine.FrontPerKToken.Seconds()*float64(r.prompt)/1000
	heap.Push(&e.pending, r)
}

// transferTime is the pull of r's prompt KV (all but the last token, which
// the decode instance computes to give the first token).
func (e *Engine) transferTime(r *request) float64 {
	d := e.sc.Engine.Disaggregated
	return d.TransferLatency.Seconds() + e.transferBytes(r)/(d.TransferGBps*1e9)
}

func (e *Engine) transferBytes(r *request) float64 {
	return float64(r.prompt-1) * e.kvBytesPerToken
}

// landLoads puts the requests whose KV has arrived back at the head of the
// queue, in the order they arrived, for the scheduler to run.
func (e *Engine) landLoads() {
	if len(e.loading) == 0 {
		return
	}
	var landed []*request
	keep := e.loading[:0]
	for _, r := range e.loading {
		if r.loadDone <= e.now {
			r.loaded, r.landed = true, r.loadDone
			e.m.transferred(r.truth.transfer, e.transferBytes(r))
			// SGLang's prefill instance pushes the KV and times it, and
			// ends the request there when it has gone.
			e.prefill.m.pushed(r.up, r.loadDone, r.truth.transfer, e.transferBytes(r))
			landed = append(landed, r)
		} else {
			keep = append(keep, r)
		}
	}
	e.loading = keep
	if len(landed) > 0 {
		slices.SortFunc(landed, func(a, b *request) int { return cmp.Compare(a.enqueued, b.enqueued) })
		e.waiting = append(landed, e.waiting...)
	}
}

// nextLoad is when the first pull in flight ends (+Inf: none).
func (e *Engine) nextLoad() float64 {
	next := math.Inf(1)
	for _, r := range e.loading {
		next = math.Min(next, r.loadDone)
	}
	return next
}

// drawAdapter picks one of n adapters, the i-th about 1/(i+1) as often as
// the first: a few popular adapters and a long tail.
func drawAdapter(r *rand.Rand, n int) int {
	var total float64
	for i := range n {
		total += 1 / float64(i+1)
	}
	u := r.Float64() * total
	for i := range n {
		if u -= 1 / float64(i+1); u < 0 {
			return i
		}
	}
	return n - 1
}

// adapters are the distinct LoRA adapters of the running batch.
func (e *Engine) adapters() map[int]bool {
	out := map[int]bool{}
	for _, r := range e.running {
		if r.adapter >= 0 {
			out[r.adapter] = true
		}
	}
	return out
}

// lorad reports whether r asks for an adapter the running batch has no slot
// for: every slot holds another adapter.
func (e *Engine) lorad(r *request, slots map[int]bool) bool {
	return r.adapter >= 0 && !slots[r.adapter] && len(slots) >= e.sc.Engine.MaxLoRAs
}

// MaxModelLen is the longest prompt plus output one request may have: the
// engine's context limit, or the whole KV cache when that is smaller.
func (e *Engine) MaxModelLen() int {
	return min(maxModelLen, e.totalBlocks*e.sc.Engine.BlockSize)
}

// ServedModel is the model's name as the metrics' model_name label has it.
func (e *Engine) ServedModel() string { return e.model.Served }

// submit adds a request sent over the API, arriving at virtual time at: it
// joins the same FCFS queue as the scenario's own requests, after the same
// front-end time. A request may arrive before the last step's end (it was
// being read meanwhile): it then waits for the next step.
func (e *Engine) submit(at float64, prompt, output int, streaming bool, call *apiCall, blocks []uint64) *request {
	r := &request{id: e.nextID, arrival: at, group: -1, pinned: -1, scheduled: -1, firstToken: -1,
		streaming: streaming, prompt: prompt, output: output, maxTokens: output, call: call}
	e.nextID++
	e.apiPrefix(r, blocks)
	front := e.sc.Engine.Front.Seconds()*(0.5+e.rng.Float64()) + e.sc.Engine.FrontPerKToken.Seconds()*float64(prompt)/1000
	r.enqueued = at + front
	heap.Push(&e.pending, r)
	return r
}

// apiGroupBase numbers the prefix groups of API requests, apart from the
// scenario's own (0… and 1,000,000 + request id).
const apiGroupBase = 1 << 30

// apiPrefix puts an API request in the prefix group of the longest run of
// leading blocks (blocks are their chained hashes) an earlier API request
// shared, or in a new group of its own, so that the prefix cache serves
// what an earlier prompt computed, as vLLM's does.
func (e *Engine) apiPrefix(r *request, blocks []uint64) {
	if !e.sc.Engine.PrefixCaching || len(blocks) == 0 {
		return
	}
	bs := e.sc.Engine.BlockSize
	for k := len(blocks); k >= 1; k-- {
		if g, ok := e.apiGroups[blocks[k-1]]; ok {
			r.group, r.shared = g, k*bs
			return
		}
	}
	if e.apiGroups == nil || len(e.apiGroups) > 1<<20 {
		e.apiGroups = map[uint64]int{} // forget old prompts rather than grow without bound
	}
	id := apiGroupBase + e.nextAPIGroup
	e.nextAPIGroup++
	for _, h := range blocks {
		e.apiGroups[h] = id
	}
	r.group, r.shared = id, len(blocks)*bs
}

// abort drops an unfinished request wherever it is (arriving, waiting or
// running), frees its blocks and counts it finished with reason "abort".
// It reports false when the request had already finished.
func (e *Engine) abort(r *request) bool {
	drop := func(l []*request) ([]*request, bool) {
		for i, x := range l {
			if x == r {
				return append(l[:i], l[i+1:]...), true
			}
		}
		return l, false
	}
	var found bool
	if i := slices.Index(e.pending, r); i >= 0 {
		heap.Remove(&e.pending, i)
		found = true
	} else if e.waiting, found = drop(e.waiting); !found {
		e.running, found = drop(e.running)
	}
	if !found {
		return false
	}
	e.free(r)
	e.m.aborted()
	e.m.setGauges(e)
	return true
}

// nextEvent is the virtual time at which the engine next has something to
// do, once it has been advanced to t: the end of the step in flight, or the
// next arrival. When requests wait but nothing could run, it is a
// millisecond on (as AdvanceTo polls) and poll is true.
func (e *Engine) nextEvent(t float64) (next float64, poll bool) {
	if len(e.running)+len(e.waiting) > 0 {
		if e.now > t {
			return e.now, false
		}
		return t + 0.001, true
	}
	next = e.nextArrival
	if e.pending.Len() > 0 {
		next = math.Min(next, e.pending[0].enqueued)
	}
	return math.Max(next, e.now), false
}

// AdvanceTo runs the engine until virtual time t (seconds).
func (e *Engine) AdvanceTo(t float64) {
	e.until = math.Max(e.until, t)
	for e.now < t {
		if e.prefill != nil {
			e.prefill.AdvanceTo(e.now)
		}
		for e.nextArrival <= e.now {
			if r := e.newRequest(e.nextArrival); e.router != nil {
				e.route(r)
			} else {
				heap.Push(&e.pending, r)
			}
			e.nextArrival = e.gap(e.nextArrival)
		}
		for e.pending.Len() > 0 && e.pending[0].enqueued <= e.now {
			r := heap.Pop(&e.pending).(*request)
			e.joinWaiting(r)
			e.waiting = append(e.waiting, r)
		}
		e.landLoads()
		if len(e.running) == 0 && len(e.waiting) == 0 {
			next := math.Min(e.nextArrival, e.nextLoad())
			if e.prefill != nil {
				// Whatever the prefill instance finishes before then
				// comes over first.
				e.prefill.AdvanceTo(math.Min(next, t))
			}
			if e.pending.Len() > 0 {
				next = math.Min(next, e.pending[0].enqueued)
			}
			e.idle(math.Min(next, t))
			continue
		}
		if !e.step() {
			e.idle(math.Min(e.now+0.001, t))
		}
	}
	if e.router != nil {
		for _, x := range e.router.replicas[1:] {
			x.AdvanceTo(t)
		}
	}
}

func (e *Engine) idle(until float64) {
	if until > e.now {
		e.holdFor(until - e.now)
		e.m.gpuIdle(until - e.now)
		e.now = until
	}
	e.m.setGauges(e)
}

// work is one request's part of a step: n tokens computed, keep of them
// kept in its KV cache (fewer under speculative decoding, where a decode
// verifies every draft and keeps the accepted run and one token more).
type work struct {
	r       *request
	n, keep int
	decode  bool
}

// step schedules one engine step (running first, then waiting, FCFS), runs
// it, and applies its outputs. It reports false when nothing could run.
func (e *Engine) step() bool {
	ec := e.sc.Engine
	budget := ec.MaxNumBatchedTokens
	batch := e.batch[:0]
	defer func() { e.batch = batch[:0] }()

	// Running requests first, in admission order. A decode needs one token,
	// an unfinished prefill (after a preemption, or chunked) the rest of it.
	for i := 0; i < len(e.running) && budget > 0; {
		r := e.running[i]
		n := r.remaining()
		keep, decode := n, n == 1 && r.generated > 0
		if decode && ec.Speculative != nil {
			n, keep = 1+ec.Speculative.Tokens, e.speculate(r)
		}
		if n > 1 && !decode {
			if ec.ChunkedPrefill {
				n = min(n, budget)
			} else if n > budget && len(batch) > 0 {
				i++
				continue
			}
		}
		if !decode {
			keep = n
		}
		if !e.allocateOrPreempt(r, keep) {
			continue // r itself was preempted; e.running[i] is the next one
		}
		batch = append(batch, work{r, n, keep, decode})
		budget -= n
		i++
	}

	// Then waiting requests, FCFS, while the batch and the cache have room.
	// A request whose adapter has no slot is passed over, as vLLM's
	// scheduler does, and keeps its place in the queue.
	e.hold = holdNone
	var slots map[int]bool
	var passed []*request
	if e.sc.Engine.MaxLoRAs > 0 {
		slots = e.adapters()
	}
	for len(e.waiting) > 0 {
		if len(e.running) >= ec.MaxNumSeqs {
			e.hold = holdSeqs
			break
		}
		if budget <= 0 {
			e.hold = holdTokens
			break
		}
		r := e.waiting[0]
		if slots != nil && e.lorad(r, slots) {
			passed = append(passed, r)
			e.waiting = e.waiting[1:]
			continue
		}
		if r.remote && !r.loaded {
			// Blocks for the whole prompt, then the pull of all but its
			// last token; the scheduler runs it once the KV has arrived.
			if !e.allocate(r, r.prompt) {
				e.hold = holdKV
				break
			}
			r.computed = r.prompt - 1
			r.truth.transfer = e.transferTime(r)
			r.loadDone = e.now + r.truth.transfer
			e.waiting = e.waiting[1:]
			e.loading = append(e.loading, r)
			continue
		}
		cached := 0
		if r.computed == 0 && ec.PrefixCaching && r.group >= 0 {
			if g := e.groups[r.group]; g != nil && g.cached {
				shared := r.shared
				if r.call != nil {
					// An API group holds what its first request cached,
					// which may be less than this one shares.
					shared = min(shared, g.blocks*ec.BlockSize)
				}
				cached = (shared / ec.BlockSize) * ec.BlockSize
				if cached >= r.prompt {
					cached = ((r.prompt - 1) / ec.BlockSize) * ec.BlockSize
				}
			}
		}
		need := r.remaining() - cached
		n := need
		if ec.ChunkedPrefill {
			n = min(need, budget)
		} else if need > budget && len(batch) > 0 {
			e.hold = holdTokens
			break
		}
		if cached > 0 {
			e.pin(r)
		}
		r.computed += cached
		if !e.allocate(r, n) {
			r.computed -= cached
			e.unpin(r)
			e.hold = holdKV
			break
		}
		e.waiting = e.waiting[1:]
		if slots != nil && r.adapter >= 0 {
			slots[r.adapter] = true
		}
		if r.scheduled < 0 {
			r.scheduled = e.now
			r.cached = cached
			e.m.scheduled(r, e.now)
			e.admitted(r)
		}
		e.running = append(e.running, r)
		batch = append(batch, work{r, n, n, false})
		budget -= n
	}
	e.passed = len(passed)
	if len(passed) > 0 {
		// The head of the queue waits for an adapter slot.
		e.waiting = append(passed, e.waiting...)
		e.hold = holdLoRA
	}
	if len(batch) == 0 {
		return false
	}
	dt, weightBytes := e.run(batch)
	e.Steps++
	e.observeStep(batch, dt)
	e.holdFor(dt)
	e.now += dt
	e.apply(batch, weightBytes, dt)
	e.m.setGauges(e)
	return true
}

// allocateOrPreempt finds blocks for r, preempting the newest running
// requests (recompute) until they fit. It reports false when r itself had to go.
func (e *Engine) allocateOrPreempt(r *request, n int) bool {
	for !e.allocate(r, n) {
		victim := e.running[len(e.running)-1]
		e.preempt(victim)
		if victim == r {
			return false
		}
	}
	return true
}

// stepCost is a step's price by part: memory traffic, FLOPs, tensor-parallel
// all-reduces and fixed CPU overhead, all in seconds.
type stepCost struct {
	mem, cmp, comm, overhead  float64
	draft                     float64 // drafting under speculative decoding
	bytes, flops, weightBytes float64
	tokens                    float64
	decodes                   int
}

func (c stepCost) gpu() float64 { return math.Max(c.mem, c.cmp) + c.comm + c.draft }

// speculate draws how many tokens a speculative decode step keeps for r:
// the run of accepted drafts and the target model's own token, no more
// than r still has to generate.
func (e *Engine) speculate(r *request) int {
	sp := e.sc.Engine.Speculative
	accepted := 0
	for accepted < sp.Tokens && e.rng.Float64() < sp.Acceptance {
		accepted++
	}
	return min(1+accepted, r.output-r.generated)
}

// specTokens emits the k tokens a speculative step kept for r, all at the
// step's end, as one streamed chunk.
func (e *Engine) specTokens(r *request, k int) {
	gap := e.now - r.lastTk
	r.generated += k
	e.m.tokens(gap, k)
	if r.call != nil {
		for range k {
			r.call.token(e.now)
		}
	}
	if e.keepRecords {
		r.itls = append(r.itls, gap)
	}
	r.lastTk = e.now
}

// cost prices a batch: max(FLOPs ÷ compute, bytes ÷ bandwidth) + all-reduces + CPU overhead.
func (e *Engine) cost(batch []work) stepCost {
	m := e.model
	var c stepCost
	var attn, kvRead float64
	for _, w := range batch {
		ctx := float64(w.r.computed)
		c.tokens += float64(w.n)
		attn += float64(w.n) * (ctx + float64(w.n)/2)
		kvRead += ctx
		if w.decode {
			c.decodes++
		}
	}
	c.weightBytes = m.WeightBytes()
	if m.Experts > 0 {
		// Each token routes to ActiveExperts of Experts: the experts touched
		// by at least one token of the step must be read.
		touched := 1 - math.Pow(1-float64(m.ActiveExperts)/float64(m.Experts), c.tokens)
		c.weightBytes = (m.Params-m.ExpertParams)*m.DTypeBytes + m.ExpertParams*m.DTypeBytes*touched
	}
	c.bytes = c.weightBytes + kvRead*e.kvBytesPerToken
	c.flops = 2*m.ActiveParams*c.tokens + 4*float64(m.Layers*m.Hidden)*attn
	tp := float64(e.sc.TP)
	c.mem = c.bytes / (e.gpu.Bandwidth * tp * bandwidthEfficiency)
	c.cmp = c.flops / (e.gpu.FLOPS * tp * computeEfficiency)
	if e.sc.TP > 1 {
		// Two all-reduces of the step's activations per layer (ring).
		msg := c.tokens * float64(m.Hidden) * m.DTypeBytes
		per := e.gpu.LinkLatency + 2*(tp-1)/tp*msg/e.gpu.LinkBandwidth
		c.comm = 2 * float64(m.Layers) * per
	}
	c.overhead = e.sc.Engine.StepOverhead.Seconds()
	weightRead := c.weightBytes / (e.gpu.Bandwidth * tp * bandwidthEfficiency)
	if f := e.sc.Engine.Cost; f != nil {
		c.mem, c.cmp, c.comm, c.overhead, c.weightBytes = f.Memory+f.PerContext*kvRead, f.PerToken*c.tokens, 0, f.Fixed, 0
		weightRead = f.Memory
	}
	if sp := e.sc.Engine.Speculative; sp != nil && c.decodes > 0 {
		// The drafter runs once per draft token for the whole batch.
		c.draft = float64(sp.Tokens) * sp.DraftCost * weightRead
	}
	return c
}

// run prices a step and records it in the metrics.
func (e *Engine) run(batch []work) (dt, weightBytes float64) {
	c := e.cost(batch)
	gpu := c.gpu()
	dt = gpu + c.overhead
	if c.decodes > 0 {
		if slack := dt - c.weightBytes/(e.gpu.Bandwidth*float64(e.sc.TP)); slack < e.MinDecodeSlack {
			e.MinDecodeSlack = slack
		}
	}
	e.m.gpuBusy(gpu, dt, c.bytes, c.flops, int(c.tokens))
	e.last = c
	return dt, c.weightBytes
}

func (e *Engine) apply(batch []work, weightBytes, dt float64) {
	bs := e.sc.Engine.BlockSize
	done := e.done[:0]
	for _, w := range batch {
		r := w.r
		r.computed += w.keep
		if r.remaining() > 0 {
			continue // a prefill chunk; more to come
		}
		if w.decode && e.sc.Engine.Speculative != nil {
			r.verifies++
			e.m.speculated(w.keep - 1)
		}
		if w.keep > 1 && w.decode {
			e.specTokens(r, w.keep)
			if r.generated >= r.output {
				done = append(done, r)
			}
			continue
		}
		// The step that completes a request's KV samples its next token.
		if !r.countedPrompt {
			r.countedPrompt = true
			e.m.promptDone(r)
			if e.sc.Engine.PrefixCaching && r.group >= 0 && r.shared >= bs {
				e.cacheGroup(r)
			}
		}
		r.generated++
		e.m.token(r, e.now)
		if r.call != nil {
			r.call.token(e.now)
		}
		if r.firstToken < 0 {
			r.firstToken = e.now
		} else if e.keepRecords {
			r.itls = append(r.itls, e.now-r.lastTk)
		}
		r.lastTk = e.now
		if r.generated >= r.output {
			done = append(done, r)
		}
	}
	for _, r := range done {
		reason := "stop"
		if r.call != nil || e.decode != nil {
			reason = "length" // the simulator has no EOS: an API request always runs to max_tokens
		}
		e.finish(r, reason)
	}
	e.done = done[:0]
}

func (e *Engine) finish(r *request, reason string) {
	for i, x := range e.running {
		if x == r {
			e.running = append(e.running[:i], e.running[i+1:]...)
			break
		}
	}
	e.free(r)
	if e.sc.Workload.Concurrency > 0 && !e.sc.Workload.External && r.call == nil {
		heap.Push(&e.pending, e.newRequest(e.now))
	}
	e.m.finished(r, e.now, reason)
	if r.call != nil {
		r.call.finished(e.now, reason)
	}
	if e.decode != nil {
		e.decode.receive(r, e.now)
	}
	e.truthFinished(r)
	if e.keepRecords {
		rec := Record{ID: r.id, Arrival: r.arrival, Prompt: r.prompt, Output: r.generated, Cached: r.cached,
			Front: r.enqueued - r.arrival, Queue: r.scheduled - r.enqueued, Prefill: r.firstToken - r.scheduled,
			Decode: r.lastTk - r.firstToken, TTFT: r.firstToken - r.arrival, E2E: e.now - r.arrival,
			ITLs: r.itls, Streaming: r.streaming, Preemptions: r.preemptions, FinishReason: reason}
		rtt := e.sc.Workload.ClientRTT.Seconds()
		rec.ClientTTFT = rec.TTFT + rtt
		if !r.streaming {
			rec.ClientTTFT = rec.E2E + rtt
		}
		e.Records = append(e.Records, rec)
	}
	r.itls = nil
}

// allocate gives r the blocks for n more tokens, evicting cached prefixes
// nobody uses when it must. It reports false when the cache is full.
func (e *Engine) allocate(r *request, n int) bool {
	bs := e.sc.Engine.BlockSize
	shared := 0
	if r.pinned >= 0 {
		shared = e.groups[r.pinned].blocks
	}
	need := (r.computed+n+bs-1)/bs - shared - r.blocks
	if need <= 0 {
		return true
	}
	for e.totalBlocks-e.usedBlocks-e.cachedBlocks < need {
		if !e.evictOne() {
			return false
		}
	}
	r.blocks += need
	e.usedBlocks += need
	return true
}

func (e *Engine) free(r *request) {
	e.usedBlocks -= r.blocks
	r.blocks = 0
	e.unpin(r)
}

func (e *Engine) preempt(r *request) {
	for i, x := range e.running {
		if x == r {
			e.running = append(e.running[:i], e.running[i+1:]...)
			break
		}
	}
	e.free(r)
	r.computed = 0
	r.preemptions++
	e.m.preempted()
	if e.truth != nil {
		e.truth.preemptions++
	}
	e.waiting = append([]*request{r}, e.waiting...)
}

func (e *Engine) pin(r *request) {
	g := e.groups[r.group]
	g.refs++
	g.lastUsed = e.now
	r.pinned = r.group
}

func (e *Engine) unpin(r *request) {
	if r.pinned < 0 {
		return
	}
	e.groups[r.pinned].refs--
	r.pinned = -1
}

// cacheGroup keeps a finished prefill's shared blocks as a cached prefix.
func (e *Engine) cacheGroup(r *request) {
	bs := e.sc.Engine.BlockSize
	g := e.groups[r.group]
	if g == nil {
		g = &prefixGroup{}
		e.groups[r.group] = g
	}
	g.lastUsed = e.now
	if g.cached || r.pinned >= 0 {
		return
	}
	blocks := r.shared / bs
	if blocks > r.blocks {
		return
	}
	// Hand the request's first blocks over to the cache and pin them.
	g.cached, g.blocks = true, blocks
	r.blocks -= blocks
	e.usedBlocks -= blocks
	e.cachedBlocks += blocks
	g.refs++
	r.pinned = r.group
}

// evictOne drops the least recently used cached prefix nobody pins.
func (e *Engine) evictOne() bool {
	var victim int
	var vg *prefixGroup
	for id, g := range e.groups {
		if g.cached && g.refs == 0 && (vg == nil || g.lastUsed < vg.lastUsed || g.lastUsed == vg.lastUsed && id < victim) {
			victim, vg = id, g
		}
	}
	if vg == nil {
		return false
	}
	e.cachedBlocks -= vg.blocks
	delete(e.groups, victim)
	return true
}

// KVUsage is the share of blocks running requests hold (cached prefixes
// nobody pins count as free, as in vLLM).
func (e *Engine) KVUsage() float64 {
	pinned := 0
	for _, g := range e.groups {
		if g.cached && g.refs > 0 {
			pinned += g.blocks
		}
	}
	return float64(e.usedBlocks+pinned) / float64(e.totalBlocks)
}

// CheckBlocks reports an error when block accounting is off.
func (e *Engine) CheckBlocks() error {
	held := 0
	for _, r := range e.running {
		held += r.blocks
	}
	cached := 0
	for _, g := range e.groups {
		if g.cached {
			cached += g.blocks
		}
	}
	switch {
	case held != e.usedBlocks:
		return fmt.Errorf("running requests hold %d blocks, accounted %d", held, e.usedBlocks)
	case cached != e.cachedBlocks:
		return fmt.Errorf("cached prefixes hold %d blocks, accounted %d", cached, e.cachedBlocks)
	case e.usedBlocks+e.cachedBlocks > e.totalBlocks:
		return fmt.Errorf("%d blocks in use of %d", e.usedBlocks+e.cachedBlocks, e.totalBlocks)
	}
	return nil
}

// inFlightBefore reports whether a request that arrived before t is unfinished.
func (e *Engine) inFlightBefore(t float64) bool {
	for _, x := range e.Replicas() {
		for _, l := range [][]*request{x.pending, x.waiting, x.running, x.loading} {
			for _, r := range l {
				if r.arrival < t {
					return true
				}
			}
		}
	}
	return false
}

// Counts returns requests arrived (into the engine), in flight and finished.
func (e *Engine) Counts() (arrived, inFlight, finished int) {
	return e.nextID, e.pending.Len() + len(e.waiting) + len(e.running), e.m.finishedCount
}

type pendingHeap []*request

func (h pendingHeap) Len() int           { return len(h) }
func (h pendingHeap) Less(i, j int) bool { return h[i].enqueued < h[j].enqueued }
func (h pendingHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)        { *h = append(*h, x.(*request)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
