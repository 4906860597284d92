package evidence

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Slack of the part-versus-whole checks. Stage means come from requests
// observed at different moments (TTFT at the first token, the rest at the
// finish), so in any window the parts may exceed the whole by a little.
const (
	partsSlack = 0.15  // relative
	partsFloor = 0.005 // seconds
	// A residual front this large beside a queue is the queue moving.
	frontSlack = 0.3
	frontFloor = 0.05 // seconds
	// movingTrend: TTFT p99 changing by half its mean over the window.
	movingTrend = 0.5
)

// finishDists are observed once per finished request from the same place in
// the server, so their counts agree up to requests caught mid-update.
var finishDists = []string{"cond.prompt_tokens", "cond.output_tokens", "stage.queue", "stage.prefill",
	"stage.decode", "stage.inference", "stage.tpot", "service.e2e"}

// Check runs the consistency checks on evidence before any rule reads it and
// derives the latency shares from the parts that survive them. Derived
// fields already set (by a fixture, say) are kept. Members are checked too.
func Check(e *Evidence) { check(e, false) }

// check is Check; a member's quantiles are not set against each other, as
// a source that sums the fleet on the server reads only some of a member's
// families.
func check(e *Evidence, member bool) {
	countsAgree(e)
	sameRequests(e)
	st := &e.Values.Stage
	ttft, q, p := st.TTFT.Mean, st.Queue.Mean, st.Prefill.Mean
	e2e, dec := e.Values.Service.E2E.Mean, st.Decode.Mean
	if e.Inconsistent("stage.queue") != "" {
		q = math.NaN()
	}
	if e.Inconsistent("stage.prefill") != "" {
		p = math.NaN()
	}
	if e.Inconsistent("stage.decode") != "" {
		dec = math.NaN()
	}
	if e.Inconsistent("service.e2e") != "" {
		e2e = math.NaN()
	}
	if e.Inconsistent("stage.ttft") != "" {
		ttft = math.NaN()
	}
	// A decode instance's KV pull is a stage of its TTFT of its own.
	tr := 0.0
	if x := st.Transfer.Mean; Present(x) && e.Inconsistent("stage.transfer") == "" {
		tr = x
	}

	// The whole users wait for the first token, and whether it is the sum of
	// the parts the server reports.
	total := ttft
	front := math.NaN()
	switch {
	case Present(ttft) && Present(p) && p > over(ttft):
		e.AddInconsistency(Inconsistency{Check: "prefill-exceeds-ttft", Fields: []string{"stage.ttft", "stage.prefill"},
			Note: fmt.Sprintf("mean prefill %s exceeds mean TTFT %s, which should contain it: both are withheld", secs(p), secs(ttft))})
		total, p = math.NaN(), math.NaN()
	case Present(ttft) && Present(q) && Present(p) && q+tr+p > over(ttft):
		// TTFT that excludes queue wait (some gateways and forks): users wait
		// for queue + TTFT, and the map is built from the parts.
		e.AddInconsistency(Inconsistency{Check: "ttft-excludes-queue", Fields: []string{"stage.ttft"},
			Note: fmt.Sprintf("queue %s + prefill %s exceed mean TTFT %s: this server's TTFT excludes queue wait, so its TTFT is withheld from rules and the latency map adds queue to it",
				secs(q), secs(p), secs(ttft))})
		total = q + ttft
		front = math.Max(0, ttft-tr-p)
	case Present(ttft) && Present(q) && Present(p):
		front = math.Max(0, ttft-q-tr-p)
		// While requests queue, TTFT (observed at the first token) and the
		// stage times (at the finish) cover different requests: a large
		// residual is the queue moving, not time before the engine.
		// Only a queue that moved: a steady one leaves a real front alone.
		trend := e.Values.Stage.TTFTP99Trend
		if w := e.Values.Service.Waiting.Mean; Present(w) && w >= 1 && Present(trend) && math.Abs(trend) >= movingTrend &&
			front > math.Max(frontSlack*ttft, frontFloor) {
			e.AddInconsistency(Inconsistency{Check: "ttft-covers-other-requests", Fields: []string{"stage.front_mean", "stage.share.front"},
				Note: fmt.Sprintf("mean TTFT %s exceeds queue %s + prefill %s by %s while %.0f requests wait on average: TTFT counts requests at their first token, queue and prefill at their finish, so in a moving queue they cover different requests; front time is withheld and shares come from queue and prefill",
					secs(ttft), secs(q), secs(p), secs(front), w)})
			total, front = q+tr+p, math.NaN()
		}
	}
	// A split deployment's prefill side may be given the deployment's TTFT
	// (SGLang's prefill side times none), which its end-to-end does not hold.
	if Present(e2e) && Present(st.TTFT.Mean) && e.Inconsistent("stage.ttft") == "" && e.Values.Cond.PrefillSide != 1 && e2e < st.TTFT.Mean*(1-partsSlack)-partsFloor {
		e.AddInconsistency(Inconsistency{Check: "e2e-below-ttft", Fields: []string{"service.e2e", "stage.ttft"},
			Note: fmt.Sprintf("mean end-to-end %s is below mean TTFT %s, which it contains: both are withheld", secs(e2e), secs(st.TTFT.Mean))})
		total, e2e, front = math.NaN(), math.NaN(), math.NaN()
	}
	if Present(e2e) && Present(dec) && dec > over(e2e) {
		e.AddInconsistency(Inconsistency{Check: "decode-exceeds-e2e", Fields: []string{"stage.decode", "service.e2e"},
			Note: fmt.Sprintf("mean decode %s exceeds mean end-to-end %s, which contains it: both are withheld", secs(dec), secs(e2e))})
		e2e, dec = math.NaN(), math.NaN()
	}

	measured := Present(dec)
	// Requests about as long as the window: TTFT counts those that started
	// in it, queue and prefill those that finished in it, mostly begun
	// before. What is left of TTFT after them is no front end's time.
	if w := e.Values.Cond.WindowSeconds; !e.trusting && outlasts(e2e, w) && Present(front) && front > frontFloor {
		e.AddInconsistency(Inconsistency{Check: "requests-outlast-window", Fields: []string{"stage.front_mean", "stage.share.front"},
			Note: fmt.Sprintf("requests last about as long as the window (mean end-to-end %s, window %s): TTFT counts requests that started in it, queue and prefill requests that finished in it, so the %s left of TTFT is no front end's time and is withheld; diagnose a longer window",
				secs(e2e), secs(w), secs(front))})
		front = math.NaN()
	}
	if !Present(dec) && e.Inconsistent("stage.decode") == "" && Present(e2e) && Present(ttft) && e.Inconsistent("stage.ttft") == "" {
		dec = decodeFromParts(e, e2e, ttft)
	}
	budget(e, e2e, total, q, dec, measured)

	sh := &st.Share
	if Present(total) && total > 0 {
		setIfMissing(&sh.Queue, q/total)
		setIfMissing(&sh.Prefill, p/total)
		setIfMissing(&sh.Front, front/total)
		if tr > 0 {
			setIfMissing(&sh.Transfer, tr/total)
		}
	}
	if !Present(st.FrontMean) && Present(front) {
		st.FrontMean = front
		e.Cite("stage.front_mean", Source{Metric: "derived", Note: "ttft.mean − queue.mean − prefill.mean"})
	}
	if Present(e2e) && e2e > 0 {
		setIfMissing(&sh.Decode, dec/e2e)
	}
	if itl := st.ITL; Present(itl.P99) && itl.P99 > 0 && Present(itl.P50) && e.Inconsistent("stage.itl") == "" {
		setIfMissing(&sh.ITLTail, math.Max(0, (itl.P99-itl.P50)/itl.P99))
	}
	// Upper bounds: the share where known; else a stage's part of what is
	// known to be inside TTFT (queue + prefill ≤ TTFT) or end-to-end.
	mx := &st.ShareMax
	setIfMissing(&mx.Queue, sh.Queue)
	setIfMissing(&mx.Prefill, sh.Prefill)
	setIfMissing(&mx.Front, sh.Front)
	setIfMissing(&mx.Decode, sh.Decode)
	setIfMissing(&mx.ITLTail, sh.ITLTail)
	setIfMissing(&mx.Transfer, sh.Transfer)
	if Present(q) && Present(p) && q+p > 0 {
		setIfMissing(&mx.Queue, q/(q+p))
		setIfMissing(&mx.Prefill, p/(q+p))
	}
	if t := st.TTFT.Mean; Present(e2e) && e2e > 0 && Present(t) && e.Inconsistent("stage.ttft") == "" {
		setIfMissing(&mx.Decode, (e2e-t)/e2e)
	}
	for _, path := range []string{"stage.share.queue", "stage.share.prefill", "stage.share.front", "stage.share.decode", "stage.share.itl_tail", "stage.share.transfer"} {
		if f, _ := Lookup(path); Present(e.Values.Get(f)) {
			if _, ok := e.Sources[path]; !ok {
				e.Cite(path, Source{Metric: "derived", Note: "stage mean ÷ the latency it is part of"})
			}
		}
	}
	if !member {
		ordered(e)
	}
	atLeast(e, &st.TTFTP99AtLeast, "stage.ttft_p99_at_least", "stage.ttft.p99", st.TTFT.P99)
	atLeast(e, &st.ITLP50AtLeast, "stage.itl_p50_at_least", "stage.itl.p50", st.ITL.P50)
	atLeast(e, &e.Values.Service.E2EP99AtLeast, "service.e2e_p99_at_least", "service.e2e.p99", e.Values.Service.E2E.P99)
	for _, m := range e.Members {
		check(m, true)
	}
}

// ordered names a quantile of a part above the same quantile of its whole
// (TTFT p99 over end-to-end p99): read from histograms, both were
// interpolated in buckets too coarse to place them, so neither is shown or
// judged as observed.
func ordered(e *Evidence) {
	type pair struct{ part, whole, partName, wholeName string }
	for _, pr := range []pair{{"stage.ttft.p99", "service.e2e.p99", "TTFT p99", "end-to-end p99"},
		{"stage.ttft.p50", "service.e2e.p50", "TTFT p50", "end-to-end p50"},
		{"stage.prefill.p99", "service.e2e.p99", "prefill p99", "end-to-end p99"}} {
		fp, _ := Lookup(pr.part)
		fw, _ := Lookup(pr.whole)
		a, b := e.Values.Get(fp), e.Values.Get(fw)
		if !Present(a) || !Present(b) || a <= over(b) || e.Inconsistent(pr.part) != "" || e.Inconsistent(pr.whole) != "" {
			continue
		}
		e.AddInconsistency(Inconsistency{Check: "quantiles-out-of-order", Fields: []string{pr.part, pr.whole},
			Note: fmt.Sprintf("%s %s%s exceeds %s %s%s, which holds it: the buckets are too coarse to place either, so neither is judged",
				pr.partName, secs(a), bucketOf(e, pr.part), pr.wholeName, secs(b), bucketOf(e, pr.whole))})
	}
}

func bucketOf(e *Evidence, path string) string {
	if r, ok := e.Resolution[path]; ok {
		return fmt.Sprintf(" (bucket %s–%s)", secs(r[0]), secs(r[1]))
	}
	return ""
}

// atLeast sets the least a quantile can be: its bucket's lower bound where
// a histogram gave it (the quantile is above it: a bucket holds values over
// its lower bound), the value where it is exact.
func atLeast(e *Evidence, dst *float64, at, path string, x float64) {
	if Present(*dst) || !Present(x) {
		return
	}
	r, bucketed := e.Resolution[path]
	for _, in := range e.Inconsistencies {
		// Past the top bucket the value is its bound, which it is over;
		// out of order, the value is misplaced in its bucket, not out of
		// it: either way the least it can be is known. Any other
		// contradiction leaves it unknown.
		if slices.Contains(in.Fields, path) || slices.Contains(in.Fields, Node(path)) {
			if in.Check != "quantile-past-top-bucket" && (in.Check != "quantiles-out-of-order" || !bucketed) {
				return
			}
		}
	}
	*dst = x
	if bucketed && r[0] < x {
		*dst = r[0]
	}
	e.Cite(at, Source{Metric: "derived", Note: "lower bound of the histogram bucket " + path + " was interpolated in"})
}

// budget splits mean end-to-end into the wait for the first token and
// decode, and names what neither holds. Only a decode measured apart from
// end-to-end can show a gap: one derived as end-to-end − TTFT adds up by
// construction. It also says whether TTFT holds the queue wait, which the
// bounds that place queue wait inside TTFT assume.
func budget(e *Evidence, e2e, first, q, dec float64, measured bool) {
	b, c := &e.Values.Stage.Budget, &e.Values.Cond
	if Present(e.Values.Stage.TTFT.Mean) && !Present(c.TTFTFromArrival) {
		c.TTFTFromArrival = 1
		for _, in := range e.Inconsistencies {
			if in.Check == "ttft-excludes-queue" {
				c.TTFTFromArrival = 0
			}
		}
		e.Cite("cond.ttft_from_arrival", Source{Metric: "derived", Note: "0 when the queue + prefill exceed TTFT or time outside TTFT and decode is unexplained"})
	}
	if !Present(e2e) || e2e <= 0 {
		return
	}
	keep := func(dst *float64, x float64) {
		if !Present(*dst) && Present(x) {
			*dst = x
		}
	}
	keep(&b.E2E, e2e)
	keep(&b.FirstToken, first)
	keep(&b.Decode, dec)
	keep(&b.QueueShare, q/e2e)
	if measured && Present(first) && Present(dec) {
		keep(&b.Unexplained, e2e-first-dec)
		keep(&b.UnexplainedShare, (e2e-first-dec)/e2e)
	}
	for _, path := range []string{"stage.budget.e2e", "stage.budget.first_token", "stage.budget.decode", "stage.budget.unexplained", "stage.budget.unexplained_share", "stage.budget.queue_share"} {
		if f, _ := Lookup(path); Present(e.Values.Get(f)) {
			if _, ok := e.Sources[path]; !ok {
				e.Cite(path, Source{Metric: "derived", Note: "mean end-to-end = first token (queue + prefill + front) + decode + unexplained"})
			}
		}
	}
	u := b.Unexplained
	if !Present(u) || math.Abs(b.UnexplainedShare) <= BudgetSlack || math.Abs(u) <= budgetFloor {
		return
	}
	// Time outside TTFT and decode while requests wait is most likely queue
	// wait the server's TTFT leaves out: TTFT bounds on the queue no longer hold.
	if w := e.Values.Service.Waiting.Mean; u > 0 && Present(w) && w >= 0.5 && c.TTFTFromArrival == 1 {
		c.TTFTFromArrival = 0
	}
	e.Text["stage.budget_gap"] = budgetReason(e, u)
}

// outlasts: requests of mean end-to-end e2e last about as long as a window
// of w seconds (over half of it), so the histograms observed at a request's
// first token and at its finish count different requests.
func outlasts(e2e, w float64) bool { return Present(w) && w > 0 && Present(e2e) && e2e > 0.5*w }

// Budget gap tolerance: the parts may miss the whole by this share of mean
// end-to-end (and this many seconds) before the gap is named.
const (
	BudgetSlack = 0.2
	budgetFloor = 0.05
)

// budgetReason names the likely reasons the parts miss the whole.
func budgetReason(e *Evidence, u float64) string {
	v := e.Values
	var why []string
	if w := v.Cond.WindowSeconds; outlasts(v.Service.E2E.Mean, w) {
		why = append(why, fmt.Sprintf("requests last about as long as the window (mean end-to-end %s, window %s), so end-to-end and the stage times count different requests", secs(v.Service.E2E.Mean), secs(w)))
	}
	if u > 0 {
		w := v.Service.Waiting.Mean
		switch {
		case !Present(v.Stage.Queue.Mean) && Present(w) && w >= 0.5:
			why = append(why, fmt.Sprintf("requests waited (%.0f on average) and no queue-time histogram was read: queue wait before the server starts its TTFT clock (some servers time TTFT from scheduling) would be here", w))
		case !Present(v.Stage.Queue.Mean):
			why = append(why, "no queue-time histogram was read: queue wait before the server starts its TTFT clock (some servers time TTFT from scheduling) would be here")
		case Present(w) && w >= 0.5:
			why = append(why, fmt.Sprintf("requests waited (%.0f on average): the server's TTFT may start at scheduling and leave part of the wait out", w))
		}
	}
	if len(why) == 0 {
		why = append(why, "the histograms count different requests (TTFT at the first token, decode and end-to-end at the finish), or the server times its stages from other moments")
	}
	return "Likely: " + strings.Join(why, "; ") + "."
}

// decodeFromParts derives mean decode time as mean end-to-end − mean TTFT
// when the engine has no decode histogram (SGLang, vLLM V0): the mean of a
// difference is the difference of means over the same requests, so only
// when both histograms counted the same requests.
func decodeFromParts(e *Evidence, e2e, ttft float64) float64 {
	st, sv := &e.Values.Stage, &e.Values.Service
	n, m := st.TTFT.Count, sv.E2E.Count
	if !Present(n) || !Present(m) || m <= 0 || e2e < ttft {
		return math.NaN()
	}
	// TTFT also counts requests still running, so it may exceed end-to-end
	// by those; end-to-end counting more than TTFT means requests TTFT left
	// out, whose times the difference of means would mix in.
	over := math.Max(2, 0.02*m)
	if r := sv.Running.Max; Present(r) {
		over = math.Max(over, r)
	}
	if n-m > over || m-n > math.Max(2, 0.02*m) {
		return math.NaN()
	}
	st.Decode.Mean, st.Decode.Count = e2e-ttft, m
	e.Cite("stage.decode", Source{Metric: "derived", Note: "mean end-to-end − mean TTFT over the same requests (no decode-time histogram)"})
	return st.Decode.Mean
}

// countsAgree withholds a finish-time distribution whose count disagrees
// with its siblings' (a truncated file, series from another window).
func countsAgree(e *Evidence) {
	type dc struct {
		path  string
		count float64
	}
	var cs []dc
	for _, path := range finishDists {
		f, _ := Lookup(path + ".count")
		c := e.Values.Get(f)
		// Request files are another population; compare server series only.
		if s, ok := e.SourceOf(path); !Present(c) || (ok && s.Metric == "requests") {
			continue
		}
		cs = append(cs, dc{path, c})
	}
	if len(cs) < 3 {
		return
	}
	sorted := append([]dc(nil), cs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].count < sorted[j].count })
	ref := sorted[len(sorted)/2].count
	tol := math.Max(2, 0.02*ref)
	if r := e.Values.Service.Running.Max; Present(r) {
		// Simple servers record some of these at scheduling, not at finish.
		tol = math.Max(tol, r)
	}
	for _, c := range cs {
		if c.path == "stage.queue" && c.count < ref-tol {
			queueWaitersOnly(e, ref)
			continue
		}
		if math.Abs(c.count-ref) > tol {
			e.AddInconsistency(Inconsistency{Check: "count-mismatch", Fields: []string{c.path},
				Note: fmt.Sprintf("%s counted %.0f requests where its sibling histograms counted %.0f: it is withheld", c.path, c.count, ref)})
		}
	}
	// TTFT is observed at the first token: it may count the requests still
	// running beyond those that finished, no more. Past that it holds
	// requests that got a first token and never finished (clients that gave
	// up), so it covers another population than every stage time.
	f, _ := Lookup("stage.ttft.count")
	// Fewer first tokens than finished requests: the engine left some
	// requests out of TTFT (SGLang's non-streaming ones), so TTFT cannot be
	// set against stage times or end-to-end that count them all.
	if n := e.Values.Get(f); Present(n) && n < ref-tol {
		if s, ok := e.SourceOf("stage.ttft"); !ok || s.Metric != "requests" {
			e.AddInconsistency(Inconsistency{Check: "ttft-covers-fewer-requests", Fields: []string{"stage.ttft"},
				Note: fmt.Sprintf("TTFT counted %.0f requests but %.0f finished: the server left about %.0f out of TTFT (SGLang counts streaming requests only where it labels them), so TTFT covers other requests than the stage times and is withheld",
					n, ref, ref-n)})
		}
	}
	if n := e.Values.Get(f); Present(n) && n > ref+tol {
		if s, ok := e.SourceOf("stage.ttft"); !ok || s.Metric != "requests" {
			e.AddInconsistency(Inconsistency{Check: "ttft-counts-unfinished", Fields: []string{"stage.ttft"},
				Note: fmt.Sprintf("TTFT counted %.0f requests but only %.0f finished (allowing %.0f still running): about %.0f got a first token and never finished (aborted or timed out), so TTFT covers other requests than the stage times and is withheld",
					n, ref, tol, n-ref)})
		}
	}
}

// queueWaitersOnly reads a queue-time histogram that counted fewer requests
// than its siblings as one that counts only the requests that waited (some
// servers observe queue time only then): the others waited zero, so the
// mean over every finished request is its sum over all of them. Fewer
// observations is not a contradiction by itself; the budget check then
// shows whether the parts add up.
func queueWaitersOnly(e *Evidence, all float64) {
	q := &e.Values.Stage.Queue
	n := q.Count
	if !Present(q.Mean) || n <= 0 {
		return
	}
	q.Mean = q.Mean * n / all
	q.Count = all
	// Quantiles stay the waiters': an upper bound of those over all.
	src, _ := e.SourceOf("stage.queue")
	src.Note = fmt.Sprintf("counted %.0f of %.0f finished requests (those that waited, on servers that observe only them): mean over all, the others at zero; quantiles are the waiters'", n, all)
	e.Cite("stage.queue", src)
	e.Notes = append(e.Notes, fmt.Sprintf("the queue-time histogram counted %.0f requests where its siblings counted %.0f: read as counting only the requests that waited, so mean queue wait is %s over all of them (the others at zero), and its quantiles are the waiters'",
		n, all, secs(q.Mean)))
}

// sameRequests names a request file that cannot cover the requests the
// server's metrics do: clients see every first token after the server does,
// so a client TTFT well below the server's is another population, and what
// the file gave is withheld rather than mixed with the server's numbers.
func sameRequests(e *Evidence) {
	c, s := e.Values.Service.ClientTTFT.Mean, e.Values.Stage.TTFT.Mean
	if !Present(c) || !Present(s) || c >= s*(1-partsSlack)-partsFloor {
		return
	}
	if src, ok := e.SourceOf("stage.ttft"); ok && src.Metric == "requests" {
		return
	}
	fields := []string{"service.client_ttft", "service.network_share"}
	for _, p := range []string{"stage.queue", "stage.prefill", "stage.decode"} {
		if src, ok := e.SourceOf(p); ok && src.Metric == "requests" {
			fields = append(fields, p)
		}
	}
	e.AddInconsistency(Inconsistency{Check: "requests-not-the-window", Fields: fields,
		Note: fmt.Sprintf("clients' mean TTFT %s is below the server's %s, which it contains: the request file covers other requests than the metrics' window, so what it gave is withheld", secs(c), secs(s))})
}

func over(whole float64) float64 { return whole*(1+partsSlack) + partsFloor }

func setIfMissing(dst *float64, x float64) {
	if !Present(*dst) && Present(x) {
		*dst = math.Max(0, x)
	}
}

func secs(x float64) string {
	switch {
	case x >= 1:
		return fmt.Sprintf("%.2fs", x)
	default:
		return fmt.Sprintf("%.0fms", x*1000)
	}
}
