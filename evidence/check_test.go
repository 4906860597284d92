package evidence

import (
	"math"
	"strings"
	"testing"
)

func dist(count, mean float64) Dist {
	return Dist{Count: count, Mean: mean, P50: math.NaN(), P90: math.NaN(), P95: math.NaN(), P99: math.NaN(), Max: math.NaN()}
}

func withStages(ttft, queue, prefill, decode, e2e float64) *Evidence {
	e := New(Target{Model: "m"})
	v := &e.Values
	v.Stage.TTFT, v.Stage.Queue, v.Stage.Prefill = dist(1000, ttft), dist(1000, queue), dist(1000, prefill)
	v.Stage.Decode, v.Service.E2E = dist(1000, decode), dist(1000, e2e)
	return e
}

func checks(e *Evidence) string {
	var out []string
	for _, in := range e.Inconsistencies {
		out = append(out, in.Check+":"+strings.Join(in.Fields, ","))
	}
	return strings.Join(out, " ")
}

func TestConsistentPartsGiveShares(t *testing.T) {
	e := withStages(2.0, 1.5, 0.4, 6, 8)
	Check(e)
	s := e.Values.Stage.Share
	if checks(e) != "" || math.Abs(s.Queue-0.75) > 1e-9 || math.Abs(s.Prefill-0.2) > 1e-9 ||
		math.Abs(s.Front-0.05) > 1e-9 || math.Abs(s.Decode-0.75) > 1e-9 || math.Abs(e.Values.Stage.FrontMean-0.1) > 1e-9 {
		t.Fatalf("checks %q shares %+v front %v", checks(e), s, e.Values.Stage.FrontMean)
	}
	// A little over the whole is window noise, not a contradiction: front
	// is then zero, never negative.
	e = withStages(2.0, 1.7, 0.4, 6, 8)
	Check(e)
	if checks(e) != "" || e.Values.Stage.FrontMean != 0 || e.Values.Stage.Share.Front != 0 {
		t.Fatalf("checks %q front %v", checks(e), e.Values.Stage.FrontMean)
	}
	// Check twice changes nothing.
	Check(e)
	if len(e.Inconsistencies) != 0 {
		t.Fatal("second check added notes")
	}
}

func TestTTFTWithoutQueueIsNamedAndMappedFromParts(t *testing.T) {
	e := withStages(0.3, 1.2, 0.25, 6, 8)
	Check(e)
	if checks(e) != "ttft-excludes-queue:stage.ttft" || e.Inconsistent("stage.ttft.p99") == "" || e.Inconsistent("stage.queue.mean") != "" {
		t.Fatalf("checks %q", checks(e))
	}
	s := e.Values.Stage.Share
	if math.Abs(s.Queue-0.8) > 1e-9 || math.Abs(s.Front-0.05/1.5) > 1e-9 || math.Abs(e.Values.Stage.FrontMean-0.05) > 1e-9 {
		t.Fatalf("shares %+v front %v", s, e.Values.Stage.FrontMean)
	}
}

func TestContradictionsWithholdWhatTheyName(t *testing.T) {
	cases := []struct {
		name                         string
		ttft, queue, prefill, dec, e float64
		want                         string
	}{
		{"prefill over TTFT", 0.3, 0.01, 0.9, 6, 8, "prefill-exceeds-ttft:stage.ttft,stage.prefill"},
		{"e2e under TTFT", 3, 1, 1.5, 0.5, 1, "e2e-below-ttft:service.e2e,stage.ttft"},
		{"decode over e2e", 1, 0.5, 0.4, 12, 8, "decode-exceeds-e2e:stage.decode,service.e2e"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := withStages(c.ttft, c.queue, c.prefill, c.dec, c.e)
			Check(e)
			if got := checks(e); got != c.want {
				t.Fatalf("checks %q, want %q", got, c.want)
			}
			for _, f := range e.Inconsistencies[0].Fields {
				if e.Inconsistent(f+".mean") == "" {
					t.Errorf("%s not withheld", f)
				}
			}
			sh := e.Values.Stage.Share
			if c.name != "decode over e2e" && (Present(sh.Queue) || Present(sh.Prefill)) {
				t.Errorf("shares computed from withheld parts: %+v", sh)
			}
			if c.name == "decode over e2e" && Present(sh.Decode) {
				t.Errorf("decode share from withheld parts: %v", sh.Decode)
			}
		})
	}
}

func TestSiblingCountsMustAgree(t *testing.T) {
	e := withStages(2, 1.5, 0.4, 6, 8)
	e.Values.Cond.PromptTokens = dist(1000, 900)
	e.Values.Stage.Prefill.Count = 480 // half the window: a truncated or mixed file
	e.Values.Service.Running.Max = 20
	Check(e)
	if checks(e) != "count-mismatch:stage.prefill" || Present(e.Values.Stage.Share.Prefill) {
		t.Fatalf("checks %q share %v", checks(e), e.Values.Stage.Share.Prefill)
	}
	// A queue histogram counting fewer requests is one that counts only
	// those that waited: used, over all requests, and said.
	e = withStages(2, 1.5, 0.4, 6, 8)
	e.Values.Cond.PromptTokens = dist(1000, 900)
	e.Values.Stage.Queue.Count = 480
	e.Values.Service.Running.Max = 20
	Check(e)
	if checks(e) != "" || math.Abs(e.Values.Stage.Queue.Mean-0.72) > 1e-9 || len(e.Notes) != 1 {
		t.Fatalf("checks %q queue %+v notes %q", checks(e), e.Values.Stage.Queue, e.Notes)
	}
	// Within the requests in flight it is the normal gap between scheduling
	// and finishing.
	e = withStages(2, 1.5, 0.4, 6, 8)
	e.Values.Cond.PromptTokens = dist(1000, 900)
	e.Values.Stage.Queue.Count = 1015
	e.Values.Service.Running.Max = 20
	Check(e)
	if checks(e) != "" {
		t.Fatalf("checks %q", checks(e))
	}
	// Request files are another population and are not compared.
	e = withStages(2, 1.5, 0.4, 6, 8)
	e.Values.Cond.PromptTokens = dist(1000, 900)
	e.Values.Stage.Queue.Count = 40
	e.Cite("stage.queue", Source{Metric: "requests"})
	Check(e)
	if checks(e) != "" {
		t.Fatalf("checks %q", checks(e))
	}
}

// While requests queue, TTFT (at the first token) and queue/prefill (at the
// finish) cover different requests: a large residual is not front time.
func TestMovingQueueWithholdsFront(t *testing.T) {
	e := withStages(30, 17, 0.4, 37, 67)
	e.Values.Service.Waiting.Mean = 150
	e.Values.Stage.TTFTP99Trend = 1.4
	Check(e)
	s := e.Values.Stage.Share
	if checks(e) != "ttft-covers-other-requests:stage.front_mean,stage.share.front" || Present(e.Values.Stage.FrontMean) ||
		Present(s.Front) || math.Abs(s.Queue-17/17.4) > 1e-9 {
		t.Fatalf("checks %q front %v shares %+v", checks(e), e.Values.Stage.FrontMean, s)
	}
	// A steady queue beside a slow API server: the residual is front time.
	e = withStages(0.3, 0.06, 0.01, 3, 3.3)
	e.Values.Service.Waiting.Mean = 3
	e.Values.Stage.TTFTP99Trend = 0.05
	Check(e)
	if checks(e) != "" || math.Abs(e.Values.Stage.FrontMean-0.23) > 1e-9 {
		t.Fatalf("steady queue: checks %q front %v", checks(e), e.Values.Stage.FrontMean)
	}
	// Without a queue the same residual is front time (a slow API server).
	e = withStages(0.3, 0.01, 0.05, 3, 3.3)
	e.Values.Service.Waiting.Mean = 0
	Check(e)
	if checks(e) != "" || math.Abs(e.Values.Stage.FrontMean-0.24) > 1e-9 {
		t.Fatalf("checks %q front %v", checks(e), e.Values.Stage.FrontMean)
	}
}

// TTFT that counts far more requests than finished (plus those running)
// holds requests that never finished: TTFT is withheld, not end-to-end.
func TestTTFTCountingUnfinishedRequestsIsWithheld(t *testing.T) {
	e := withStages(71.6, 0.0005, 6.29, 17.44, 23.74)
	e.Values.Stage.TTFT.Count = 69
	for _, p := range []*Dist{&e.Values.Stage.Queue, &e.Values.Stage.Prefill, &e.Values.Stage.Decode, &e.Values.Service.E2E} {
		p.Count = 38
	}
	Check(e)
	if checks(e) != "ttft-counts-unfinished:stage.ttft" || e.Inconsistent("service.e2e.mean") != "" {
		t.Fatalf("checks %q", checks(e))
	}
	// Requests still running explain a TTFT count above the finished one.
	e = withStages(2, 1.5, 0.4, 6, 8)
	e.Values.Stage.TTFT.Count = 1200
	e.Values.Service.Running.Max = 256
	Check(e)
	if checks(e) != "" {
		t.Fatalf("checks %q", checks(e))
	}
}

// With TTFT withheld, each stage is at most its part of queue + prefill:
// enough to cap a finding about a small stage.
func TestShareMaxBoundsWithoutTTFT(t *testing.T) {
	e := withStages(2.9, 0.056, 2.9, 8, 11)
	e.Values.Stage.TTFT.Count = 1600 // far more first tokens than finished
	Check(e)
	mx := e.Values.Stage.ShareMax
	if Present(e.Values.Stage.Share.Queue) || math.Abs(mx.Queue-0.056/2.956) > 1e-9 || math.Abs(mx.Prefill-2.9/2.956) > 1e-9 {
		t.Fatalf("checks %q share %+v max %+v", checks(e), e.Values.Stage.Share, mx)
	}
}

// A request file whose clients saw first tokens sooner than the server
// produced them covers other requests: what it gave is withheld.
func TestRequestFileOfOtherRequests(t *testing.T) {
	e := withStages(1.95, 1.8, 0.13, 7, 8.9)
	e.Values.Service.ClientTTFT = dist(200, 0.25)
	e.Cite("service.client_ttft", Source{Metric: "requests"})
	e.Cite("stage.prefill", Source{Metric: "requests"})
	Check(e)
	if checks(e) != "requests-not-the-window:service.client_ttft,service.network_share,stage.prefill" {
		t.Fatalf("checks %q", checks(e))
	}
	// Clients a little slower than the server: the same requests.
	e = withStages(1.95, 1.8, 0.13, 7, 8.9)
	e.Values.Service.ClientTTFT = dist(200, 2.0)
	Check(e)
	if checks(e) != "" {
		t.Fatalf("checks %q", checks(e))
	}
}

// SGLang leaves non-streaming requests out of TTFT: a TTFT that counts fewer
// requests than finished is another population, withheld rather than set
// against queue, prefill and end-to-end that count them all, and no decode
// time is derived from it.
func TestTTFTCoveringFewerRequestsIsWithheld(t *testing.T) {
	e := New(Target{Model: "m"})
	v := &e.Values
	v.Stage.TTFT = Dist{Count: 600, Mean: 0.292}
	v.Stage.Queue = Dist{Count: 700, Mean: 0.16}
	v.Stage.Prefill = Dist{Count: 700, Mean: 0.23}
	v.Service.E2E = Dist{Count: 700, Mean: 6.57}
	v.Cond.PromptTokens = Dist{Count: 700, Mean: 500}
	Check(e)
	if e.Inconsistent("stage.ttft") == "" {
		t.Fatal("TTFT of 600 requests beside 700 finished was not withheld")
	}
	for _, in := range e.Inconsistencies {
		if in.Check == "ttft-excludes-queue" || in.Check == "prefill-exceeds-ttft" {
			t.Errorf("a false %s from comparing two populations", in.Check)
		}
	}
	if Present(v.Stage.Decode.Mean) || Present(v.Stage.Share.Decode) {
		t.Errorf("decode derived from another population: %v", v.Stage.Decode.Mean)
	}
}

// A 30 s window of requests that last 20 s: what is left of TTFT after
// queue and prefill is no front end's time (the parts count other
// requests), and the budget says the window is too short.
func TestRequestsOutlastingTheWindow(t *testing.T) {
	e := withStages(9, 1, 1, 18, 20)
	e.Values.Cond.WindowSeconds = 30
	Check(e)
	if e.Inconsistent("stage.front_mean") == "" || Present(e.Values.Stage.FrontMean) || Present(e.Values.Stage.Share.Front) {
		t.Fatalf("front %v share %v, checks %q", e.Values.Stage.FrontMean, e.Values.Stage.Share.Front, checks(e))
	}
	if !strings.Contains(e.Text["stage.budget_gap"], "as long as the window") {
		t.Errorf("budget reason %q", e.Text["stage.budget_gap"])
	}
}

// TTFT p99 above end-to-end p99, read from coarse buckets: named, and
// neither is judged as observed.
func TestQuantilesOutOfOrder(t *testing.T) {
	e := withStages(2, 0.5, 0.4, 6, 8)
	e.Values.Stage.TTFT.P99, e.Values.Service.E2E.P99 = 39.6, 29.9
	e.SetResolution("stage.ttft.p99", 30, 60)
	Check(e)
	if e.Inconsistent("stage.ttft.p99") == "" || e.Inconsistent("service.e2e.p99") == "" || !strings.Contains(checks(e), "quantiles-out-of-order") {
		t.Fatalf("checks %q", checks(e))
	}
	if e.Inconsistent("stage.ttft.mean") != "" {
		t.Errorf("the means are not withheld with the quantiles")
	}
}
