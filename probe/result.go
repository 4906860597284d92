package probe

import (
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
)

// Schema names the JSON a probe writes.
const Schema = "llmdoctor.probe/v1"

// Result is what a probe measured, whole or up to where it stopped.
type Result struct {
	Schema string `json:"schema"`
	Target string `json:"target"`
	Model  string `json:"model"`
	API    string `json:"api"`
	Plan   Plan   `json:"plan"`
	// Started is when the first request was sent; Seconds how long the
	// probe ran.
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Sent counts every request sent, warm-up included; Failed those
	// that did not complete, Refused those answered 429 or 503.
	Sent    int `json:"requests_sent"`
	Failed  int `json:"requests_failed"`
	Refused int `json:"requests_refused"`
	// Stopped says why the probe ended before its plan did; empty: it
	// ran its plan.
	Stopped string `json:"stopped,omitempty"`
	// Tokens is how the server counted the probe's prompts: about
	// Fixed + PerWord tokens per word.
	Tokens TokenCount `json:"tokens"`

	Sweep Sweep  `json:"sweep"`
	Steps []Step `json:"steps"`
	// ITL is the inter-token latency at concurrency 1 (the decode floor
	// with nothing else running), from the sweep's and the first step's
	// requests.
	ITL      *Percentiles `json:"itl_alone,omitempty"`
	Knee     *Knee        `json:"knee,omitempty"`
	Capacity *Capacity    `json:"capacity,omitempty"`

	// Metrics is the engine /metrics URL scraped during the ladder; empty
	// when none answered (MetricsNote says why).
	Metrics     string `json:"metrics,omitempty"`
	MetricsNote string `json:"metrics_note,omitempty"`
	// Diagnosis is the pipeline's diagnosis of DiagnosedStep: the first
	// load that missed the SLO (what breaks first), else the highest.
	Diagnosis     *advisor.Diagnosis `json:"diagnosis,omitempty"`
	DiagnosedStep int                `json:"diagnosed_step"`
	// Launch is the pre-launch run (Options.Launch): an open-loop step
	// apart from the ladder, with LaunchDiagnosis its diagnosis.
	Launch          *Step              `json:"launch,omitempty"`
	LaunchDiagnosis *advisor.Diagnosis `json:"launch_diagnosis,omitempty"`
	Notes           []string           `json:"notes,omitempty"`

	launchInput, diagnosedInput *diagnosis.Input
}

// Input is what a checklist reads from the probe: the pre-launch run's
// window and requests when it ran, else the diagnosed step's; nil when
// neither was measured.
func (r *Result) Input() *diagnosis.Input {
	if r.launchInput != nil {
		return r.launchInput
	}
	return r.diagnosedInput
}

// TokenCount is the server's token count of a prompt of words.
type TokenCount struct {
	Fixed   float64 `json:"fixed"`
	PerWord float64 `json:"per_word"`
	// Usage: the server reported token counts; without them prompt
	// lengths are the planned ones.
	Usage bool `json:"usage"`
}

// Sweep is the prompt-length sweep at concurrency 1.
type Sweep struct {
	Samples []Sample `json:"requests"`
	// Fit is TTFT against prompt tokens; nil with FitNote saying why.
	Fit     *Fit   `json:"fit,omitempty"`
	FitNote string `json:"fit_note,omitempty"`
}

// Step is one load of the ladder.
type Step struct {
	// Load is the concurrency (closed loop) or the arrival rate per
	// second (OpenLoop).
	Load     float64 `json:"load"`
	OpenLoop bool    `json:"open_loop"`
	// Refined: added between a load that met the SLO and one that did not.
	Refined bool    `json:"refined,omitempty"`
	Start   float64 `json:"start"`
	Seconds float64 `json:"seconds"`
	// Sent, Completed, Failed, Refused: requests of this step.
	Sent      int `json:"sent"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Refused   int `json:"refused"`
	// Throughput is completed requests per second; OutputTokens output
	// tokens per second; Goodput requests per second that met the SLO
	// each on its own.
	Throughput   float64     `json:"throughput"`
	OutputTokens float64     `json:"output_tokens_per_s"`
	Goodput      float64     `json:"goodput"`
	TTFT         Percentiles `json:"ttft"`
	ITL          Percentiles `json:"itl"`
	TPOT         Percentiles `json:"tpot"`
	E2E          Percentiles `json:"e2e"`
	// MeetsSLO by the percentiles' point estimates; SurelyMeets when the
	// p99 bands' tops meet it too. Misses name the targets missed.
	MeetsSLO    bool     `json:"meets_slo"`
	SurelyMeets bool     `json:"surely_meets_slo"`
	Misses      []string `json:"misses,omitempty"`
	// TooManyErrors: the failed share passed the error-rate limit.
	TooManyErrors bool `json:"too_many_errors,omitempty"`
	// ClientLimited: the probe's rate or concurrency limit held requests
	// back, so the step measured the limit, not the server.
	ClientLimited bool `json:"client_limited,omitempty"`
	// Stages split the step's mean TTFT and decode from the engine's
	// metrics; nil when they were not scraped.
	Stages *Stages `json:"stages,omitempty"`
	// Verdict is the diagnosis of this step alone (bottleneck and status).
	Verdict string `json:"verdict,omitempty"`
	// Requests are the step's requests, kept when Options.KeepRequests
	// asks (they make a result that Reanalyze can recompute).
	Requests []Sample `json:"requests,omitempty"`
}

// Stages are the engine's own means over a step, seconds.
type Stages struct {
	Queue   *float64 `json:"queue_mean,omitempty"`
	Prefill *float64 `json:"prefill_mean,omitempty"`
	Decode  *float64 `json:"decode_mean,omitempty"`
	TTFT    *float64 `json:"ttft_mean,omitempty"`
	E2E     *float64 `json:"e2e_mean,omitempty"`
	// TTFTExcludesQueue: the engine's TTFT leaves out queue wait.
	TTFTExcludesQueue bool `json:"ttft_excludes_queue,omitempty"`
}
