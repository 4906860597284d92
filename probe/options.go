package probe

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/llmdoctor/llmdoctor/rules"
)

// Options say what to probe and within which limits.
type Options struct {
	// Target is the server's URL (with or without /v1).
	Target string
	// Model is the model to ask for; empty: the first /v1/models lists.
	Model string
	// Chat probes /v1/chat/completions instead of /v1/completions.
	Chat bool
	// APIKey is sent as a bearer token and never printed.
	APIKey string
	// Header is added to every request to the target and its metrics.
	Header http.Header
	// Metrics are the engine's /metrics URLs to scrape during the ladder;
	// nil: the target's own /metrics when it answers with engine metrics.
	// NoMetrics turns the scrape off.
	Metrics   []string
	NoMetrics bool
	// GPUExporters are dcgm-exporter endpoints scraped alongside.
	GPUExporters []string

	// Sweep: prompt lengths (tokens) at concurrency 1, Repeats each,
	// after Warmup requests.
	Lengths []int
	Repeats int
	Warmup  int
	// SweepOutput is the output length of a sweep request.
	SweepOutput int
	// Prefix lets requests of one length share their start, to measure
	// what a prefix cache saves; otherwise every prompt is distinct.
	Prefix bool

	// Ladder: closed-loop concurrency levels (doubling from 1 up to the
	// limit when nil) or, when Rates is set, open-loop arrival rates.
	Concurrency []int
	Rates       []float64
	// PromptTokens and OutputTokens shape a ladder request: prompts vary
	// uniformly over ±PromptSpread around PromptTokens.
	PromptTokens, OutputTokens int
	PromptSpread               float64
	// StepRequests is the least number of requests a step completes (more
	// at higher concurrency: four per concurrent slot); StepTime bounds a
	// step's duration.
	StepRequests int
	StepTime     time.Duration
	// NoRefine skips the steps between the last load that met the SLO and
	// the first that did not.
	NoRefine bool

	// SLO is what a step must meet; zero fields are not judged.
	SLO SLO
	// Limits bound what the probe may send.
	Limits Limits

	// Rules and Config diagnose the scraped steps; nil Rules: built in.
	Rules  *rules.Set
	Config *rules.Config

	// Launch, when not zero, adds the pre-launch run after the ladder:
	// open-loop arrivals at Launch requests per second, or, when negative,
	// at −Launch × the capacity's throughput (-0.8: 80 % of it), with at
	// least LaunchRequests requests.
	Launch float64

	// KeepRequests keeps every ladder request with its timings in the
	// result (the sweep's are always kept).
	KeepRequests bool

	// Seed makes prompts reproducible; zero: from the clock.
	Seed int64
	// Client is the HTTP client; nil: one with Limits.RequestTimeout.
	Client *http.Client
	// Progress receives a line per stage and step.
	Progress func(string)
}

// SLO are latency targets a step is judged against.
type SLO struct {
	TTFTP99 time.Duration `json:"ttft_p99,omitempty"`
	ITLP99  time.Duration `json:"itl_p99,omitempty"`
	TPOTP50 time.Duration `json:"tpot_p50,omitempty"`
	E2EP99  time.Duration `json:"e2e_p99,omitempty"`
}

// LaunchRequests is the least the pre-launch run sends: enough that its
// p99 is not its largest request.
const LaunchRequests = 200

// DefaultSLO is diagnose's: interactive serving.
func DefaultSLO() SLO {
	return SLO{TTFTP99: rules.DefaultSLO.TTFTP99, TPOTP50: rules.DefaultSLO.TPOT}
}

// ParseSLO reads "ttft_p99=2s,itl_p99=100ms,tpot_p50=50ms,e2e_p99=30s";
// keys not given keep base's value.
func ParseSLO(spec string, base SLO) (SLO, error) {
	s := base
	for _, part := range strings.Split(spec, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if !ok || err != nil || d < time.Millisecond {
			return s, fmt.Errorf("%q: want NAME=DURATION like ttft_p99=2s", part)
		}
		switch strings.TrimSpace(k) {
		case "ttft_p99":
			s.TTFTP99 = d
		case "itl_p99":
			s.ITLP99 = d
		case "tpot_p50":
			s.TPOTP50 = d
		case "e2e_p99":
			s.E2EP99 = d
		default:
			return s, fmt.Errorf("%q: the probe judges ttft_p99, itl_p99, tpot_p50 and e2e_p99", part)
		}
	}
	return s, nil
}

// String is the SLO as --slo takes it.
func (s SLO) String() string {
	var parts []string
	for _, x := range []struct {
		k string
		d time.Duration
	}{{"ttft_p99", s.TTFTP99}, {"itl_p99", s.ITLP99}, {"tpot_p50", s.TPOTP50}, {"e2e_p99", s.E2EP99}} {
		if x.d > 0 {
			parts = append(parts, x.k+"="+x.d.String())
		}
	}
	return strings.Join(parts, ",")
}

// Limits bound the probe. A server being probed is someone's: every
// bound has a modest default.
type Limits struct {
	// Requests is the most requests the probe sends, warm-up included.
	Requests int `json:"requests"`
	// Rate is the most requests started per second.
	Rate float64 `json:"rate"`
	// Concurrency is the most requests in flight.
	Concurrency int `json:"concurrency"`
	// Duration is the longest the probe runs.
	Duration time.Duration `json:"duration"`
	// OutputTokens is the most tokens one request asks for; PromptTokens
	// the longest prompt.
	OutputTokens int `json:"output_tokens"`
	PromptTokens int `json:"prompt_tokens"`
	// ErrorRate ends the ladder when a step's failed share exceeds it.
	ErrorRate float64 `json:"error_rate"`
	// RequestTimeout bounds one request.
	RequestTimeout time.Duration `json:"request_timeout"`
}

// DefaultLimits are the bounds a probe keeps unless told otherwise.
func DefaultLimits() Limits {
	return Limits{Requests: 1000, Rate: 20, Concurrency: 32, Duration: 10 * time.Minute,
		OutputTokens: 256, PromptTokens: 8192, ErrorRate: 0.05, RequestTimeout: 2 * time.Minute}
}

// Defaults fills what was left zero.
func (o *Options) Defaults() {
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits()
	}
	if len(o.Lengths) == 0 {
		o.Lengths = []int{128, 512, 1024, 2048, 4096}
	}
	if o.Repeats == 0 {
		o.Repeats = 3
	}
	if o.Warmup == 0 {
		o.Warmup = 3
	}
	if o.SweepOutput == 0 {
		o.SweepOutput = 16
	}
	if o.PromptTokens == 0 {
		o.PromptTokens = 512
	}
	if o.PromptSpread == 0 {
		o.PromptSpread = 0.5
	}
	if o.OutputTokens == 0 {
		o.OutputTokens = 128
	}
	if o.StepRequests == 0 {
		o.StepRequests = 24
	}
	if o.StepTime == 0 {
		o.StepTime = 60 * time.Second
	}
	if o.SLO == (SLO{}) {
		o.SLO = DefaultSLO()
	}
}

// Check refuses options that cannot make a sound probe, in one line each.
func (o *Options) Check() error {
	if _, err := BaseURL(o.Target); err != nil {
		return err
	}
	l := o.Limits
	switch {
	case l.Requests < 1:
		return fmt.Errorf("the request limit must be at least 1")
	case !(l.Rate > 0) || math.IsInf(l.Rate, 0):
		return fmt.Errorf("the rate limit must be a positive number of requests per second")
	case l.Concurrency < 1:
		return fmt.Errorf("the concurrency limit must be at least 1")
	case l.Duration <= 0:
		return fmt.Errorf("the duration limit must be positive")
	case l.OutputTokens < 2:
		return fmt.Errorf("the output-token limit must be at least 2 (inter-token latency needs two tokens)")
	case l.PromptTokens < 16:
		return fmt.Errorf("the prompt-token limit must be at least 16")
	case !(l.ErrorRate >= 0 && l.ErrorRate <= 1):
		return fmt.Errorf("the error-rate limit must be between 0 and 1")
	case l.RequestTimeout <= 0:
		return fmt.Errorf("the request timeout must be positive")
	case o.Repeats < 1 || o.StepRequests < 1:
		return fmt.Errorf("repeats and requests per step must be at least 1")
	case o.OutputTokens < 2 || o.SweepOutput < 1:
		return fmt.Errorf("a ladder request must ask for at least 2 output tokens")
	case o.OutputTokens > l.OutputTokens || o.SweepOutput > l.OutputTokens:
		return fmt.Errorf("output tokens %d exceed the output-token limit %d", max(o.OutputTokens, o.SweepOutput), l.OutputTokens)
	case o.PromptSpread < 0 || o.PromptSpread >= 1:
		return fmt.Errorf("the prompt spread must be at least 0 and below 1")
	}
	for _, n := range o.Lengths {
		if n < 16 {
			return fmt.Errorf("sweep length %d: prompts need at least 16 tokens", n)
		}
	}
	for _, c := range o.Concurrency {
		if c < 1 {
			return fmt.Errorf("concurrency %d: must be at least 1", c)
		}
	}
	for _, r := range o.Rates {
		if !(r > 0) || math.IsInf(r, 0) {
			return fmt.Errorf("rate %g: must be a positive number of requests per second", r)
		}
	}
	if math.IsNaN(o.Launch) || math.IsInf(o.Launch, 0) || o.Launch < -1 {
		return fmt.Errorf("the launch run takes a rate in requests per second, or a share of the capacity between 0 and 1")
	}
	if len(o.Concurrency) > 0 && len(o.Rates) > 0 {
		return fmt.Errorf("give concurrency levels or rates, not both")
	}
	return nil
}

// Plan is what the probe will send, before it sends anything.
type Plan struct {
	Target string `json:"target"`
	// Loopback: the target is this machine.
	Loopback bool   `json:"loopback"`
	API      string `json:"api"`
	// Lengths are the sweep's prompt lengths after the prompt limit.
	Lengths     []int `json:"sweep_prompt_tokens"`
	Repeats     int   `json:"sweep_repeats"`
	Warmup      int   `json:"warmup"`
	SweepOutput int   `json:"sweep_output_tokens"`
	// Loads are the ladder's concurrency levels or rates, in order; more
	// may be added between the last that met the SLO and the first that
	// did not, within the limits.
	Loads        []float64 `json:"loads"`
	OpenLoop     bool      `json:"open_loop"`
	PromptTokens [2]int    `json:"ladder_prompt_tokens"`
	OutputTokens int       `json:"ladder_output_tokens"`
	// StepRequests is each load's planned request count.
	StepRequests []int  `json:"step_requests"`
	SLO          SLO    `json:"slo"`
	Limits       Limits `json:"limits"`
	// Requests is what the plan sends without refinement, after the
	// request limit; the limit is never exceeded.
	Requests int  `json:"requests"`
	Refine   bool `json:"refine"`
	// Launch is the pre-launch run's rate, or when negative its share of
	// the capacity's throughput; LaunchRequests its planned request count
	// (counted in Requests).
	Launch         float64 `json:"launch,omitempty"`
	LaunchRequests int     `json:"launch_requests,omitempty"`
}

// MakePlan lays out the probe within its limits.
func MakePlan(o Options) (Plan, error) {
	o.Defaults()
	if err := o.Check(); err != nil {
		return Plan{}, err
	}
	base, _ := BaseURL(o.Target)
	p := Plan{Target: base, Loopback: loopback(base), API: "completions", Repeats: o.Repeats, Warmup: o.Warmup,
		SweepOutput: o.SweepOutput, OutputTokens: o.OutputTokens, SLO: o.SLO, Limits: o.Limits, Refine: !o.NoRefine}
	if o.Chat {
		p.API = "chat"
	}
	for _, n := range o.Lengths {
		if n <= o.Limits.PromptTokens {
			p.Lengths = append(p.Lengths, n)
		}
	}
	sort.Ints(p.Lengths)
	lo := int(math.Round(float64(o.PromptTokens) * (1 - o.PromptSpread)))
	hi := min(o.Limits.PromptTokens, int(math.Round(float64(o.PromptTokens)*(1+o.PromptSpread))))
	p.PromptTokens = [2]int{max(16, lo), max(16, hi)}
	switch {
	case len(o.Rates) > 0:
		p.OpenLoop = true
		for _, r := range o.Rates {
			if r <= o.Limits.Rate {
				p.Loads = append(p.Loads, r)
			}
		}
		sort.Float64s(p.Loads)
		if len(p.Loads) == 0 {
			return p, fmt.Errorf("every rate exceeds the rate limit %g/s", o.Limits.Rate)
		}
	case len(o.Concurrency) > 0:
		for _, c := range o.Concurrency {
			if c <= o.Limits.Concurrency {
				p.Loads = append(p.Loads, float64(c))
			}
		}
		sort.Float64s(p.Loads)
		if len(p.Loads) == 0 {
			return p, fmt.Errorf("every concurrency level exceeds the concurrency limit %d", o.Limits.Concurrency)
		}
	default:
		for c := 1; c <= o.Limits.Concurrency; c *= 2 {
			p.Loads = append(p.Loads, float64(c))
		}
		if last := p.Loads[len(p.Loads)-1]; int(last) < o.Limits.Concurrency {
			p.Loads = append(p.Loads, float64(o.Limits.Concurrency))
		}
	}
	p.Requests = o.Warmup + len(p.Lengths)*o.Repeats
	for _, l := range p.Loads {
		n := stepRequests(o.StepRequests, l, p.OpenLoop, o.StepTime)
		p.StepRequests = append(p.StepRequests, n)
		p.Requests += n
	}
	if o.Launch != 0 {
		p.Launch, p.LaunchRequests = o.Launch, max(LaunchRequests, o.StepRequests)
		p.Requests += p.LaunchRequests
	}
	p.Requests = min(p.Requests, o.Limits.Requests)
	return p, nil
}

// stepRequests is a step's planned request count: StepRequests, and at
// least four per concurrent slot so every slot turns over; an open-loop
// step sends what its rate gives in StepTime, at least StepRequests.
func stepRequests(least int, load float64, open bool, stepTime time.Duration) int {
	if open {
		return max(least, int(math.Ceil(load*stepTime.Seconds()/2)))
	}
	return max(least, 4*int(load))
}

// loopback reports whether a URL's host is this machine.
func loopback(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}
