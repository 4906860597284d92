package logs

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The formats below follow the engines' own source: vLLM's
// vllm/engine/metrics.py (V0: Running, Swapped, Pending, GPU and CPU KV
// cache usage; prefix caching on a line of its own), vllm/v1/metrics/loggers.py
// (V1: Engine NNN or N Engines Aggregated; Running, Waiting, optional
// Deferred and Preemptions, GPU KV cache usage, Prefix cache hit rate),
// vllm/core/scheduler.py (V0's preemption warning, printed at the first
// preemption and every 50th after it), vllm/spec_decode and
// vllm/v1/spec_decode/metrics.py (speculative decoding), and SGLang's
// scheduler (python/sglang/srt/managers/scheduler*.py: "Prefill batch" and
// "Decode batch" lines, "Decode out of memory happened" and "KV cache pool
// is full. Retract requests." warnings).

// kind is what a record is.
type kind int

const (
	vllmStats kind = iota + 1
	vllmPrefix
	vllmPreempt
	specDecode
	sglPrefill
	sglDecode
	sglRetract
	kvTransfer
)

// record is one read record: a reading of gauges and rates, or an event.
type record struct {
	kind kind
	t    time.Time
	// dated: t came from a timestamp in the line; clock: the stamp had
	// the time of day only, so t's date is made up.
	dated, clock bool
	engine       string
	// Gauges and rates; NaN when the line does not carry them.
	running, waiting, swapped float64
	kv, cpuKV, hit            float64
	promptTPS, genTPS         float64
	// SGLang prefill batches: tokens computed and served from cache.
	newTokens, cachedTokens float64
	// Events: preemptions in the line (V1's field, SGLang's retractions),
	// or V0's cumulative count.
	preemptions    float64
	sawPreemptions bool
	cumulative     float64
	// Speculative decoding: accepted and drafted tokens, mean acceptance
	// length; cumulativeSpec when the counts are since start (V0).
	accepted, drafted, acceptLen float64
	cumulativeSpec               bool
	// specK is the tokens drafted per request per step: V0's "Number of
	// speculative tokens", or the length of V1's per-position list.
	specK float64
	// acceptRate is SGLang's "accept rate" (drafts accepted ÷ drafted).
	acceptRate float64
	// KV transfers (vLLM's NIXL connector): how many in the interval,
	// their mean and p90 seconds, and their mean bytes.
	xfers, xferMean, xferP90, xferBytes float64
	// transferReq: an SGLang decode instance's requests whose KV is on
	// its way from the prefill instance (#transfer-req).
	transferReq float64
	// text is an event's message, to tell one logged by every TP rank
	// from several.
	text string
}

func newRecord(k kind) record {
	nan := math.NaN()
	return record{kind: k, running: nan, waiting: nan, swapped: nan, kv: nan, cpuKV: nan, hit: nan,
		promptTPS: nan, genTPS: nan, newTokens: nan, cachedTokens: nan, cumulative: nan,
		accepted: nan, drafted: nan, acceptLen: nan, specK: nan, acceptRate: nan,
		xfers: nan, xferMean: nan, xferP90: nan, xferBytes: nan, transferReq: nan}
}

// A number at the start of a value: "1857.7 tokens/s", "95.7%", "0.28".
var leadNum = regexp.MustCompile(`^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`)

// Every number a stats line holds is a count, a rate or a share: one below
// zero is no number.
func lead(v string) (float64, bool) {
	m := leadNum.FindString(v)
	if m == "" {
		return math.NaN(), false
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(m), 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) || x < 0 {
		return math.NaN(), false
	}
	return x, true
}

// field is one "key: value" part of a record, the key squeezed.
type field struct{ key, val string }

// fields splits the text after a head at commas into key: value parts. A
// part without a colon continues the previous value (a per-position
// acceptance list "0.6, 0.3").
func fields(s string) []field {
	var out []field
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, ":")
		if !ok {
			if len(out) > 0 {
				out[len(out)-1].val += "," + part
			}
			continue
		}
		out = append(out, field{key: strings.TrimLeft(squeeze(k), "#"), val: v})
	}
	return out
}

// Timestamps: vLLM's "02-28 21:48:18" (no year), and full dates: SGLang's
// "[2024-09-12 10:01:02 TP0]", ISO from kubectl or journald exports.
var (
	// A wrap may fall on the space between date and time, and lose it.
	monthDay = regexp.MustCompile(`(\d\d)-(\d\d)\s*(\d\d):(\d\d):(\d\d)`)
	// SGLang v0.2.14–v0.3.3: "[10:01:02 TP0]", the time of day alone.
	clockOnly = regexp.MustCompile(`\[(\d\d):(\d\d):(\d\d)[ \]]`)
	fullDate  = regexp.MustCompile(`(\d{4})-(\d\d)-(\d\d)[T ]?(\d\d):(\d\d):(\d\d)`)
)

// stamp finds the timestamp nearest before the head: the engine's own,
// after any prefix a collector added. year places a month-day stamp.
func stamp(prefix string, year int) (time.Time, bool, bool) {
	fd := fullDate.FindAllStringSubmatchIndex(prefix, -1)
	md := monthDay.FindAllStringSubmatchIndex(prefix, -1)
	var full, part []int
	if len(fd) > 0 {
		full = fd[len(fd)-1]
	}
	if len(md) > 0 {
		part = md[len(md)-1]
	}
	// A month-day inside the full date is the full date's.
	if part != nil && full != nil && part[0] >= full[0] && part[1] <= full[1] {
		part = nil
	}
	atoi := func(m []int, i int) int {
		n, _ := strconv.Atoi(prefix[m[2*i]:m[2*i+1]])
		return n
	}
	valid := func(y, mo, d, h, mi, s int) (time.Time, bool) {
		if mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 {
			return time.Time{}, false
		}
		t := time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC)
		return t, t.Day() == d
	}
	if part != nil && (full == nil || part[0] > full[0]) {
		t, ok := valid(year, atoi(part, 1), atoi(part, 2), atoi(part, 3), atoi(part, 4), atoi(part, 5))
		return t, ok, false
	}
	if full != nil {
		t, ok := valid(atoi(full, 1), atoi(full, 2), atoi(full, 3), atoi(full, 4), atoi(full, 5), atoi(full, 6))
		return t, ok, true
	}
	return time.Time{}, false, false
}

var (
	engineTag    = regexp.MustCompile(`Engine\s*(\d+)\s*:\s*$`)
	aggregateTag = regexp.MustCompile(`(\d+)\s*Engines\s*Aggregated\s*:\s*$`)
	dpTag        = regexp.MustCompile(`\bDP(\d+)\b`)
	cumulativeRe = regexp.MustCompile(`total_num_cumulative_preemption\s*=\s*(\d+)`)
	retractedRe  = regexp.MustCompile(`#?retracted_reqs\s*:\s*(\d+)`)
	missingComma = regexp.MustCompile(`reqs\s+GPU`)
	// SGLang's head: "Decode batch. ", "Decode batch [12], ", "Prefill
	// batch(mixed #running-req: 5). ".
	sglHead = regexp.MustCompile(`^(?:Prefill|Prefil|Decode)\s*batch\s*(?:\[\d+\]\s*)?(?:\(mixed #running-req:\s*(\d+)\)\s*)?[.,]?`)
)

// headIndex finds where a head starts in s, tolerating whitespace lost or
// added inside it; -1 when absent.
func headIndex(s, head string) int {
	words := strings.Fields(head)
	for i := 0; i < len(s); i++ {
		j, ok := i, true
		for _, w := range words {
			for k := 0; k < len(w); k++ {
				for j < len(s) && (s[j] == ' ' || s[j] == '\t') && k > 0 {
					j++
				}
				if j >= len(s) || !strings.EqualFold(s[j:j+1], w[k:k+1]) {
					ok = false
					break
				}
				j++
			}
			if !ok {
				break
			}
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// why a record could not be read.
const (
	whyCut     = "cut short"
	whyFields  = "without the running and waiting counts"
	whyNumbers = "with a value that is not a number"
	whyTime    = "with an impossible timestamp"
	whyValue   = "with an impossible value"
)

// Bounds of what a stats line can hold: a share of the cache is at most
// 100% (SGLang's usage at most 1); no engine computes a hundred million
// tokens a second or runs ten million requests.
const (
	maxRate  = 1e8
	maxCount = 1e7
)

// plausible reports whether a reading's numbers could be a server's.
func plausible(r record) bool {
	for _, x := range []float64{r.kv, r.cpuKV, r.hit} {
		if x > 1.005 {
			return false
		}
	}
	for _, x := range []float64{r.promptTPS, r.genTPS} {
		if x > maxRate {
			return false
		}
	}
	for _, x := range []float64{r.running, r.waiting, r.swapped, r.newTokens, r.cachedTokens, r.preemptions} {
		if x > maxCount {
			return false
		}
	}
	return true
}

// parse reads one assembled record. It returns the record, whether the
// line held a head at all, and why a record with a head could not be read
// ("" when it was).
func parse(s string, year int) (record, bool, string) {
	h := headOf(s)
	if h < 0 {
		return record{}, false, ""
	}
	hd := headTable[h]
	r, at := newRecord(hd.kind), headIndex(s, hd.phrase)
	switch hd.kind {
	case vllmPreempt:
		// The warning starts "Sequence group X": the stamp is before that.
		if i := strings.LastIndex(s[:max(at, 0)], "Sequence"); i >= 0 {
			at = i
		}
	case specDecode:
		// V0's counts are since start; V1's per interval.
		r.cumulativeSpec = hd.phrase == "Speculative metrics"
	}
	if at < 0 {
		return record{}, true, whyCut
	}
	prefix, body := s[:at], s[at:]
	t, ok, _ := stamp(prefix, year)
	r.t, r.dated = t, ok
	if !ok && (monthDay.MatchString(prefix) || fullDate.MatchString(prefix)) {
		return record{}, true, whyTime
	}
	if m := clockOnly.FindStringSubmatch(prefix); !ok && m != nil {
		h, _ := strconv.Atoi(m[1])
		mi, _ := strconv.Atoi(m[2])
		sec, _ := strconv.Atoi(m[3])
		if h < 24 && mi < 60 && sec < 61 {
			r.t = time.Date(year, 1, 1, h, mi, sec, 0, time.UTC)
			r.dated, r.clock = true, true
		}
	}
	r.engine = "0"
	if m := dpTag.FindStringSubmatch(prefix); m != nil {
		r.engine = m[1]
	}
	switch r.kind {
	case vllmStats:
		return readVLLM(r, prefix, body)
	case vllmPrefix:
		for _, f := range fields(body) {
			// "Prefix cache hit rate: GPU: 5.81%, CPU: 0.00%"
			if strings.HasPrefix(f.key, "prefixcachehitrate") {
				_, v, _ := strings.Cut(f.val, ":")
				if x, ok := lead(v); ok {
					r.hit = x / 100
					return r, true, ""
				}
			}
		}
		return record{}, true, whyCut
	case vllmPreempt:
		m := cumulativeRe.FindStringSubmatch(body)
		if m == nil {
			// Older versions print no count: one preemption at least.
			r.preemptions, r.sawPreemptions = 1, true
			return r, true, ""
		}
		r.cumulative, _ = strconv.ParseFloat(m[1], 64)
		r.sawPreemptions = true
		return r, true, ""
	case specDecode:
		readSpec(&r, body)
		return r, true, ""
	case kvTransfer:
		return readTransfer(r, body)
	case sglPrefill, sglDecode:
		return readSGLang(r, body)
	case sglRetract:
		// "Decode out of memory. Try to lower your batch size." is an
		// error that ends the batch, not a retraction: it counts nothing.
		if m := retractedRe.FindStringSubmatch(body); m != nil {
			r.preemptions, _ = strconv.ParseFloat(m[1], 64)
			r.sawPreemptions = true
		}
		r.text = body
		return r, true, ""
	}
	return record{}, true, whyCut
}

// headless reads a line cut at its start, its head lost (a paste that
// began mid-line): an SGLang decode line still holding its generation
// throughput and queue, whose first key may be the tail of its own
// ("req: 229" for "#running-req: 229"). false when it is not one.
func headless(s string) (record, bool) {
	sq := squeeze(s)
	if !strings.Contains(sq, "genthroughput(token/s)") || !strings.Contains(sq, "queue-req") {
		return record{}, false
	}
	known := []string{"running-req", "token", "tokenusage", "genthroughput(token/s)", "queue-req"}
	fs := fields(s)
	if len(fs) == 0 {
		return record{}, false
	}
	// The first key, cut, is the tail of the key the line starts with.
	first := fs[0].key
	whole := ""
	for _, k := range known {
		if strings.HasSuffix(k, first) {
			whole = k
			break
		}
	}
	if whole == "" || whole == "token" && first != "token" {
		return record{}, false
	}
	body := "Decode batch, " + strings.Replace(s, strings.TrimSpace(s[:strings.Index(s, ":")]), "#"+whole, 1)
	r := newRecord(sglDecode)
	r.engine = "0"
	r, ok, why := readSGLang(r, body)
	return r, ok && why == ""
}

func readVLLM(r record, prefix, body string) (record, bool, string) {
	switch {
	case aggregateTag.MatchString(prefix):
		r.engine = "all"
	case engineTag.MatchString(prefix):
		n, _ := strconv.Atoi(engineTag.FindStringSubmatch(prefix)[1])
		r.engine = strconv.Itoa(n)
	}
	// vLLM 0.7.1–0.7.2 printed "Waiting: 0 reqs GPU KV cache usage: …".
	fs := fields(missingComma.ReplaceAllString(body, "reqs, GPU"))
	var haveRun, haveWait bool
	for i, f := range fs {
		x, ok := lead(f.val)
		last := i == len(fs)-1
		if !ok {
			if strings.TrimSpace(f.val) == "" && last {
				return record{}, true, whyCut
			}
			return record{}, true, whyNumbers
		}
		// The last field must end in its unit, or the line was cut inside it.
		if last && !complete(f) {
			return record{}, true, whyCut
		}
		switch f.key {
		case "avgpromptthroughput":
			r.promptTPS = x
		case "avggenerationthroughput":
			r.genTPS = x
		case "running":
			r.running, haveRun = x, true
		case "waiting", "pending":
			r.waiting, haveWait = x, true
		case "swapped":
			r.swapped = x
		case "preemptions":
			r.preemptions, r.sawPreemptions = x, true
		case "gpukvcacheusage":
			r.kv = x / 100
		case "cpukvcacheusage":
			r.cpuKV = x / 100
		case "prefixcachehitrate":
			r.hit = x / 100
		}
	}
	if !haveRun || !haveWait || math.IsNaN(r.promptTPS) || math.IsNaN(r.genTPS) {
		if len(fs) < 4 {
			return record{}, true, whyCut
		}
		return record{}, true, whyFields
	}
	if !plausible(r) {
		return record{}, true, whyValue
	}
	return r, true, ""
}

// complete reports whether a record's last field ends as its format does
// (a percent, "reqs", "tokens/s"), so that a record cut inside its last
// value is joined with the next line rather than read short.
func complete(f field) bool {
	v := squeeze(f.val)
	v = strings.TrimRight(v, ".,")
	switch {
	case strings.HasSuffix(f.key, "rate") || strings.HasSuffix(f.key, "usage"):
		return strings.HasSuffix(v, "%")
	case strings.HasSuffix(f.key, "throughput"):
		return strings.HasSuffix(v, "tokens/s")
	case f.key == "running" || f.key == "waiting" || f.key == "pending" || f.key == "swapped" || f.key == "deferred" || f.key == "corrupted":
		return strings.HasSuffix(v, "reqs")
	}
	return true
}

func readSGLang(r record, body string) (record, bool, string) {
	var haveRun, haveQueue bool
	if m := sglHead.FindStringSubmatchIndex(body); m != nil {
		if m[2] >= 0 {
			r.running, _ = strconv.ParseFloat(body[m[2]:m[3]], 64)
			haveRun = true
		}
		body = body[m[1]:]
	}
	fs := fields(body)
	for _, f := range fs {
		// v0.4.9.x: "token usage: full=0.41, swa=0.12".
		v := strings.TrimPrefix(strings.TrimSpace(f.val), "full=")
		x, ok := lead(v)
		if !ok {
			continue // cuda graph: True, and fields of later versions
		}
		switch {
		case f.key == "running-req":
			r.running, haveRun = x, true
		case f.key == "queue-req":
			r.waiting, haveQueue = x, true
		case f.key == "tokenusage" || f.key == "fulltokenusage":
			if math.IsNaN(r.kv) || f.key == "tokenusage" {
				r.kv = x
			}
		case f.key == "new-token":
			r.newTokens = x
		case f.key == "cached-token":
			r.cachedTokens = x
		case strings.HasPrefix(f.key, "genthroughput"):
			r.genTPS = x
		case strings.HasPrefix(f.key, "inputthroughput"):
			r.promptTPS = x
		case f.key == "retracted-req" || f.key == "retracted_req":
			r.preemptions, r.sawPreemptions = x, true
		case f.key == "acceptlen":
			r.acceptLen = x
		case f.key == "acceptrate":
			r.acceptRate = x
		case f.key == "transfer-req":
			r.transferReq = x
		}
	}
	if !haveRun || !haveQueue {
		if len(fs) < 3 {
			return record{}, true, whyCut
		}
		return record{}, true, whyFields
	}
	if r.kind == sglDecode && math.IsNaN(r.genTPS) {
		return record{}, true, whyFields
	}
	if !plausible(r) {
		return record{}, true, whyValue
	}
	return r, true, ""
}

// readSpec reads the speculative decoding line: V1's "Accepted: N tokens,
// Drafted: N tokens, Mean acceptance length: X", V0's "Number of accepted
// tokens: N, Number of draft tokens: N".
// readTransfer reads vLLM's KV connector line, "KV Transfer metrics: Num
// successful transfers=1, Avg xfer time (ms)=9.862, P90 xfer time
// (ms)=9.862, …, Avg MB per transfer=70.0, …": "name=value" pairs.
func readTransfer(r record, body string) (record, bool, string) {
	_, body, _ = strings.Cut(body, ":")
	for _, part := range strings.Split(body, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		x, ok := lead(v)
		if !ok {
			continue
		}
		switch squeeze(k) {
		case "numsuccessfultransfers":
			r.xfers = x
		case "avgxfertime(ms)":
			r.xferMean = x / 1000
		case "p90xfertime(ms)":
			r.xferP90 = x / 1000
		case "avgmbpertransfer":
			r.xferBytes = x * 1e6
		}
	}
	if math.IsNaN(r.xfers) || r.xfers > 0 && math.IsNaN(r.xferMean) {
		return record{}, true, whyCut
	}
	return r, true, ""
}

func readSpec(r *record, body string) {
	for _, f := range fields(body) {
		x, ok := lead(f.val)
		if !ok {
			continue
		}
		switch f.key {
		case "accepted", "numberofacceptedtokens":
			r.accepted = x
		case "drafted", "numberofdrafttokens", "numberofdrafttokenstokens":
			r.drafted = x
		case "meanacceptancelength":
			r.acceptLen = x
		case "numberofspeculativetokens":
			r.specK = x
		case "per-positionacceptancerate":
			// "0.712, 0.403, 0.198": one rate per draft position.
			r.specK = float64(strings.Count(strings.TrimRight(strings.TrimSpace(f.val), ", "), ",") + 1)
		}
	}
}
