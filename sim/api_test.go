package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fitted step cost of the API tests: a decode step is 0.002 + 0.020 s, a
// prefill of P tokens 0.002 + max(0.020, 0.0002 P) s.
const (
	apiFixed, apiMemory, apiPerToken = 0.002, 0.020, 0.0002
	apiFront                         = time.Millisecond
)

func apiScenario(maxNumSeqs int) *Scenario {
	return NoTraffic(&Scenario{Name: "api", Model: "sim-model", Seed: 7, Warmup: time.Second,
		Engine: EngineConfig{MaxNumSeqs: maxNumSeqs, Front: apiFront, GPUBlocks: 100_000,
			Cost: &StepCost{Fixed: apiFixed, Memory: apiMemory, PerToken: apiPerToken}},
		Workload: Workload{Rate: 5, Prompt: Length{Mean: 100}, Output: Length{Mean: 100}}})
}

// startAPI serves a fresh no-traffic engine (records kept) in real time
// over loopback.
func startAPI(t *testing.T, sc *Scenario) (*Server, string) {
	t.Helper()
	e, err := New(sc, true)
	if err != nil {
		t.Fatal(err)
	}
	e.AdvanceTo(sc.Warmup.Seconds())
	s := NewServer(e, 0, 1)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		_ = s.Close() // never fails
		hs.Close()
	})
	return s, hs.URL
}

// streamed is what a client saw of a streamed answer, times from just
// before the request was sent.
type streamed struct {
	at      []time.Duration // each token's chunk
	text    string
	roles   []string
	reasons []string // finish_reason of each token's chunk ("" for null)
	usage   *usage
	done    bool
	objects []string
}

func post(ctx context.Context, url, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// stream sends a streamed request and reads its events.
func stream(ctx context.Context, url, body string) (*streamed, error) {
	start := time.Now()
	resp, err := post(ctx, url, body)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // read only
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("HTTP %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	out := &streamed{}
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return out, fmt.Errorf("not an event line: %q", line)
		}
		if out.done {
			return out, fmt.Errorf("%q after [DONE]", data)
		}
		if data == "[DONE]" {
			out.done = true
			continue
		}
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Text  *string `json:"text"`
				Delta *struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return out, fmt.Errorf("chunk %q: %w", data, err)
		}
		out.objects = append(out.objects, c.Object)
		if c.Usage != nil {
			if len(c.Choices) != 0 || out.usage != nil {
				return out, fmt.Errorf("usage chunk %q", data)
			}
			out.usage = c.Usage
			continue
		}
		if len(c.Choices) != 1 {
			return out, fmt.Errorf("chunk with %d choices: %q", len(c.Choices), data)
		}
		ch := c.Choices[0]
		out.at = append(out.at, time.Since(start))
		switch {
		case ch.Text != nil:
			out.text += *ch.Text
		case ch.Delta != nil:
			out.text += ch.Delta.Content
			out.roles = append(out.roles, ch.Delta.Role)
		}
		reason := ""
		if ch.FinishReason != nil {
			reason = *ch.FinishReason
		}
		out.reasons = append(out.reasons, reason)
	}
}

// records returns the engine's finished requests, safely.
func records(s *Server) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.Engine.Records)
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// A streamed completion at concurrency 1 gets its first token after the
// engine's front end and prefill step, and the others one decode step
// apart, on the wall clock.
func TestStreamedCompletionInRealTime(t *testing.T) {
	s, url := startAPI(t, apiScenario(8))
	prompt := strings.Repeat("word ", 1000)
	const maxTokens = 20
	got, err := stream(context.Background(), url+"/v1/completions",
		fmt.Sprintf(`{"model":"sim-model","prompt":%q,"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}`, prompt, maxTokens))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.at) != maxTokens || !got.done {
		t.Fatalf("%d token chunks (done %v), want %d then [DONE]", len(got.at), got.done, maxTokens)
	}
	if got.usage == nil || *got.usage != (usage{PromptTokens: 1000, CompletionTokens: maxTokens, TotalTokens: 1000 + maxTokens}) {
		t.Fatalf("usage %+v", got.usage)
	}
	if n := CountTokens(got.text); n != maxTokens {
		t.Errorf("the text %q counts %d tokens, want %d", got.text, n, maxTokens)
	}
	for i, r := range got.reasons {
		if want := map[bool]string{true: "length", false: ""}[i == maxTokens-1]; r != want {
			t.Errorf("chunk %d finish_reason %q, want %q", i, r, want)
		}
	}
	for _, o := range got.objects {
		if o != "text_completion" {
			t.Errorf("chunk object %q", o)
		}
	}
	recs := records(s)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	rec := recs[0]
	prefill := apiFixed + math.Max(apiMemory, apiPerToken*1000)
	decode := apiFixed + math.Max(apiMemory, apiPerToken)
	if math.Abs(rec.Prefill-prefill) > 1e-9 || rec.Queue > 1e-9 || rec.Front < apiFront.Seconds()/2 || rec.Front > 1.5*apiFront.Seconds() {
		t.Fatalf("engine: front %v, queue %v, prefill %v; want a front about %v, no queue and a prefill of %v",
			rec.Front, rec.Queue, rec.Prefill, apiFront, prefill)
	}
	ttft := seconds(got.at[0])
	if math.Abs(ttft-rec.TTFT) > 0.1*rec.TTFT {
		t.Errorf("client TTFT %.4f s, engine's %.4f s (front + prefill): more than 10%% apart", ttft, rec.TTFT)
	}
	itl := seconds(got.at[maxTokens-1]-got.at[0]) / (maxTokens - 1)
	if math.Abs(itl-decode) > 0.05*decode {
		t.Errorf("mean inter-token gap %.5f s, decode step %.5f s: more than 5%% apart", itl, decode)
	}
	t.Logf("TTFT client %.4f s, engine %.4f s; mean inter-token gap client %.5f s, decode step %.5f s", ttft, rec.TTFT, itl, decode)
	if e2e := seconds(got.at[maxTokens-1]); math.Abs(e2e-rec.E2E) > 0.05*rec.E2E {
		t.Errorf("client's last token at %.4f s, engine's at %.4f s", e2e, rec.E2E)
	}
}

// A chat streams deltas, the first with the assistant's role; without
// include_usage no usage chunk comes; a prompt counts one separator token
// per message.
func TestStreamedChatWithoutUsage(t *testing.T) {
	s, url := startAPI(t, apiScenario(8))
	got, err := stream(context.Background(), url+"/v1/chat/completions",
		`{"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":[{"type":"text","text":"how are you"}]}],
		  "max_completion_tokens":5,"max_tokens":99,"stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.at) != 5 || got.usage != nil || !got.done {
		t.Fatalf("%d chunks, usage %+v, done %v: want 5 token chunks, no usage, [DONE]", len(got.at), got.usage, got.done)
	}
	if !slices.Equal(got.roles, []string{"assistant", "", "", "", ""}) || got.reasons[4] != "length" {
		t.Errorf("roles %q, finish reasons %q", got.roles, got.reasons)
	}
	for _, o := range got.objects {
		if o != "chat.completion.chunk" {
			t.Errorf("chunk object %q", o)
		}
	}
	if CountTokens(got.text) != 5 {
		t.Errorf("text %q", got.text)
	}
	// "You are terse." is 4 tokens, "how are you" 3, one separator each.
	if recs := records(s); len(recs) != 1 || recs[0].Prompt != 4+3+2 || recs[0].Output != 5 || recs[0].FinishReason != "length" {
		t.Fatalf("engine records %+v", recs)
	}
}

// A request that does not stream gets one answer when its last token is
// made, with usage.
func TestNonStreamedAnswers(t *testing.T) {
	_, url := startAPI(t, apiScenario(8))
	for _, c := range []struct{ path, body, object string }{
		{"/v1/completions", `{"prompt":["Hello, world!"],"max_tokens":4}`, "text_completion"},
		{"/v1/chat/completions", `{"model":"sim-model","messages":[{"role":"user","content":"Hello, world!"}],"max_tokens":4}`, "chat.completion"},
	} {
		start := time.Now()
		resp, err := post(context.Background(), url+c.path, c.body)
		if err != nil {
			t.Fatal(err)
		}
		var body completionResponse
		var raw struct {
			Choices []struct {
				Text    string `json:"text"`
				Message struct {
					Role, Content string
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // read
		took := time.Since(start)
		if err := json.Unmarshal(b, &body); err != nil || json.Unmarshal(b, &raw) != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s (%v)", c.path, resp.StatusCode, b, err)
		}
		// "Hello, world!" is Hello , world ! : 4 tokens (+1 separator in a chat).
		prompt := map[bool]int{false: 4, true: 5}[c.object == "chat.completion"]
		if body.Object != c.object || body.Model != "sim-model" || body.Usage == nil ||
			*body.Usage != (usage{PromptTokens: prompt, CompletionTokens: 4, TotalTokens: prompt + 4}) || len(raw.Choices) != 1 {
			t.Fatalf("%s: %s", c.path, b)
		}
		ch := raw.Choices[0]
		text := ch.Text + ch.Message.Content
		if CountTokens(text) != 4 || ch.FinishReason != "length" || (c.object == "chat.completion") != (ch.Message.Role == "assistant") {
			t.Errorf("%s: %s", c.path, b)
		}
		// Front, a prefill and three decode steps: about 0.09 s.
		if want := 4 * (apiFixed + apiMemory); took.Seconds() < 0.95*want {
			t.Errorf("%s answered in %v, before its last token (%.3f s)", c.path, took, want)
		}
	}
}

func TestModelsAndErrors(t *testing.T) {
	s, url := startAPI(t, apiScenario(8))
	var models struct {
		Object string      `json:"object"`
		Data   []modelCard `json:"data"`
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&models)
	_ = resp.Body.Close() // read
	if err != nil || models.Object != "list" || len(models.Data) != 1 {
		t.Fatalf("/v1/models: %+v (%v)", models, err)
	}
	if m := models.Data[0]; m.ID != "sim-model" || m.Object != "model" || m.OwnedBy != "llmdoctor-sim" || m.MaxModelLen != 32768 || m.Created == 0 {
		t.Errorf("model card %+v", m)
	}
	long := strings.Repeat("a ", 32768-10)
	for _, c := range []struct {
		method, path, body string
		code               int
		typ, says          string
	}{
		{"POST", "/v1/completions", `{"model":"other","prompt":"hi"}`, 404, "NotFoundError", "The model `other` does not exist."},
		{"POST", "/v1/completions", `{"prompt":"` + long + `","max_tokens":11}`, 400, "BadRequestError", "maximum context length is 32768 tokens. However, you requested 32769 tokens (32758 in the messages, 11 in the completion)"},
		{"POST", "/v1/completions", `{"prompt":"hi"`, 400, "BadRequestError", "not a JSON object"},
		{"POST", "/v1/completions", `["hi"]`, 400, "BadRequestError", "the request body is a JSON array, not an object"},
		{"POST", "/v1/completions", `{"prompt":"hi","max_tokens":"5"}`, 400, "BadRequestError", "max_tokens must not be a JSON string"},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":7,"content":"hi"}]}`, 400, "BadRequestError", "messages.role must not be a JSON number"},
		{"POST", "/v1/completions", `{"prompt":""}`, 400, "BadRequestError", "prompt has no tokens"},
		{"POST", "/v1/completions", `{"prompt":[1,2,3]}`, 400, "BadRequestError", "a string or an array of one string"},
		{"POST", "/v1/completions", `{"prompt":"hi","max_tokens":0}`, 400, "BadRequestError", "max_tokens must be at least 1"},
		{"POST", "/v1/chat/completions", `{"messages":[]}`, 400, "BadRequestError", "messages must not be empty"},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "BadRequestError", "text parts only"},
		{"GET", "/v1/completions", ``, 405, "BadRequestError", "takes POST"},
		{"POST", "/v1/completions", `{"prompt":"` + strings.Repeat("x", maxRequestBody) + `"}`, 413, "BadRequestError", "over 8388608 bytes"},
	} {
		req, _ := http.NewRequest(c.method, url+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e apiError
		err = json.NewDecoder(resp.Body).Decode(&e)
		_ = resp.Body.Close() // read
		if err != nil || resp.StatusCode != c.code || e != (apiError{Object: "error", Message: e.Message, Type: c.typ, Code: c.code}) ||
			!strings.Contains(e.Message, c.says) {
			t.Errorf("%s %s %.40s: HTTP %d %+v (%v), want %d %s saying %q", c.method, c.path, c.body, resp.StatusCode, e, err, c.code, c.typ, c.says)
		}
	}
	if arrived, _, _ := s.Engine.Counts(); arrived != 0 {
		t.Errorf("refused requests reached the engine: %d arrived", arrived)
	}
}

// In step mode virtual time is not wall time: the API declines.
func TestStepModeDeclinesTheAPI(t *testing.T) {
	e, _ := New(apiScenario(8), false)
	srv := httptest.NewServer(NewServer(e, time.Minute, 0).Handler())
	defer srv.Close()
	for _, p := range []string{"/v1/models", "/v1/completions"} {
		method := map[bool]string{true: "GET", false: "POST"}[p == "/v1/models"]
		req, _ := http.NewRequest(method, srv.URL+p, strings.NewReader(`{"prompt":"hi"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // read
		if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(b, []byte("step mode")) {
			t.Errorf("%s: HTTP %d %s", p, resp.StatusCode, b)
		}
	}
}

// API requests queue FCFS under max_num_seqs with everything else: of four
// sent at once to an engine running two at a time, two wait for a whole
// request; each client still sees its engine TTFT.
func TestAPIRequestsQueueUnderMaxNumSeqs(t *testing.T) {
	s, url := startAPI(t, apiScenario(2))
	const maxTokens = 10
	body := fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"stream":true}`, strings.Repeat("w ", 100), maxTokens)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ttfts []float64
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			got, err := stream(context.Background(), url+"/v1/completions", body)
			if err == nil && len(got.at) != maxTokens {
				err = fmt.Errorf("%d tokens", len(got.at))
			}
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			ttfts = append(ttfts, seconds(got.at[0]))
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	recs := records(s)
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	engine := make([]float64, 4)
	for i, r := range recs {
		engine[i] = r.TTFT
	}
	slices.Sort(engine)
	slices.Sort(ttfts)
	// A request is a prefill and nine decode steps: about 0.22 s.
	whole := maxTokens * (apiFixed + apiMemory)
	if engine[1] > 0.3*whole || engine[2] < engine[1]+0.8*whole {
		t.Fatalf("engine TTFTs %.3f: two should start at once, two a whole request (%.3f s) later", engine, whole)
	}
	t.Logf("TTFTs client %.4f s, engine %.4f s", ttfts, engine)
	for i := range ttfts {
		if math.Abs(ttfts[i]-engine[i]) > 0.1*engine[i]+0.010 {
			t.Errorf("client TTFTs %.4f, engine's %.4f", ttfts, engine)
			break
		}
	}
}

// A client that goes away aborts its request: its blocks are freed and
// the metrics count it aborted, not successful.
func TestClientDisconnectAborts(t *testing.T) {
	s, url := startAPI(t, apiScenario(8))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := post(ctx, url+"/v1/completions", `{"prompt":"`+strings.Repeat("w ", 500)+`","max_tokens":5000,"stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q (%v)", line, err)
	}
	s.mu.Lock()
	usage := s.Engine.KVUsage()
	s.mu.Unlock()
	if usage <= 0 {
		t.Fatal("a running request holds no KV blocks")
	}
	cancel()
	_ = resp.Body.Close() // abandoned on purpose
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		aborted, running, kv, checked := s.Engine.m.success["abort"], len(s.Engine.running), s.Engine.KVUsage(), s.Engine.CheckBlocks()
		s.mu.Unlock()
		if aborted == 1 {
			if running != 0 || kv != 0 || checked != nil {
				t.Fatalf("after the abort: %d running, KV usage %v, blocks: %v", running, kv, checked)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the engine never saw the client go")
		}
		time.Sleep(5 * time.Millisecond)
	}
	m := get(t, url+"/metrics")
	if !strings.Contains(m, `vllm:request_success_total{engine="0",finished_reason="abort",model_name="sim-model"} 1`+"\n") ||
		strings.Contains(m, `finished_reason="length"`) || !strings.Contains(m, "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"sim-model\"} 0\n") {
		t.Errorf("metrics after an abort:\n%s", grepLines(m, "success_total", "e2e_request_latency_seconds_count"))
	}
	// Idle again, the driver rests rather than spinning.
	before := s.wakes.Load()
	time.Sleep(200 * time.Millisecond)
	if n := s.wakes.Load() - before; n > 2 {
		t.Errorf("the driver turned %d times in 200 ms with nothing to do", n)
	}
}

// Close ends the streams in flight; the engine counts them aborted.
func TestCloseEndsStreams(t *testing.T) {
	s, url := startAPI(t, apiScenario(8))
	errc := make(chan error, 1)
	go func() {
		got, err := stream(context.Background(), url+"/v1/completions", `{"prompt":"hi","max_tokens":5000,"stream":true}`)
		if err == nil && got.done {
			err = errors.New("a closed server's stream finished")
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = nil
		}
		errc <- err
	}()
	for {
		s.mu.Lock()
		n := s.Engine.m.genTokens
		s.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = s.Close() // never fails
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stream outlived Close")
	}
	s.mu.Lock()
	aborted := s.Engine.m.success["abort"]
	s.mu.Unlock()
	if aborted != 1 {
		t.Errorf("%v aborted, want 1", aborted)
	}
}

// API requests count in the engine's metrics as its own do.
func TestAPIRequestsCountInMetrics(t *testing.T) {
	_, url := startAPI(t, apiScenario(8))
	for range 3 {
		resp, err := post(context.Background(), url+"/v1/completions", `{"prompt":"one two three four five","max_tokens":4}`)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close() // read
	}
	m := get(t, url+"/metrics")
	for name, want := range map[string]float64{
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="sim-model"}`: 3,
		`vllm:generation_tokens_total{engine="0",model_name="sim-model"}`:                        12,
		`vllm:prompt_tokens_total{engine="0",model_name="sim-model"}`:                            15,
		`vllm:time_to_first_token_seconds_count{engine="0",model_name="sim-model"}`:              3,
		`vllm:e2e_request_latency_seconds_count{engine="0",model_name="sim-model"}`:              3,
		`vllm:request_queue_time_seconds_count{engine="0",model_name="sim-model"}`:               3,
		`vllm:inter_token_latency_seconds_count{engine="0",model_name="sim-model"}`:              9,
		`vllm:request_params_max_tokens_sum{engine="0",model_name="sim-model"}`:                  12,
		`vllm:num_requests_running{engine="0",model_name="sim-model"}`:                           0,
	} {
		if got := sample(m, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// sample reads one sample's value from an exposition (NaN if absent).
func sample(text, name string) float64 {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return math.NaN()
}

func grepLines(text string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) && !strings.HasPrefix(l, "#") {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

func TestCountTokens(t *testing.T) {
	for text, want := range map[string]int{
		"":                          0,
		"   ":                       0,
		"hello":                     1,
		"Hello, world!":             4,
		"a  b\tc\n":                 3,
		`{"key": [1, 2.5]}`:         13, // { " key " : [ 1 , 2 . 5 ] }
		"snake_case x-y":            4,  // \w+ takes the underscore
		"héllo":                     2,  // \w is ASCII: h, llo
		strings.Repeat("word ", 50): 50,
	} {
		if got := CountTokens(text); got != want {
			t.Errorf("CountTokens(%q) = %d, want %d", text, got, want)
		}
	}
}

// A scenario without traffic of its own says so; one that forgets its rate
// is still refused.
func TestNoTrafficScenarios(t *testing.T) {
	sc, err := Load("queue-bound")
	if err != nil {
		t.Fatal(err)
	}
	quiet := NoTraffic(sc)
	if sc.Workload.External || sc.Workload.Rate == 0 {
		t.Fatal("NoTraffic changed the scenario it was given")
	}
	e, err := New(quiet, false)
	if err != nil {
		t.Fatal(err)
	}
	e.AdvanceTo(120)
	if arrived, _, _ := e.Counts(); arrived != 0 {
		t.Errorf("a scenario without traffic had %d arrivals in 2 minutes", arrived)
	}
	for _, c := range []struct{ yaml, says string }{
		{"name: x\nmodel: llama-8b\ngpu: H100-SXM\nworkload:\n  prompt: {mean: 100}\n  output: {mean: 100}\n", "workload.rate must be positive"},
		{"name: x\nmodel: llama-8b\ngpu: H100-SXM\nworkload:\n  external: true\n  rate: 2\n", "leave out rate, steps and concurrency"},
		{"name: x\nmodel: llama-8b\ngpu: H100-SXM\nworkload:\n  external: true\n  concurrency: 4\n", "leave out rate, steps and concurrency"},
	} {
		if _, err := ParseScenario("x.yaml", []byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want an error saying %q", c.yaml, err, c.says)
		}
	}
	if _, err := ParseScenario("x.yaml", []byte("name: x\nmodel: llama-8b\ngpu: H100-SXM\nworkload:\n  external: true\n")); err != nil {
		t.Errorf("an external workload needs nothing else: %v", err)
	}
}

func FuzzCompletionRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","prompt":"Hello, world!","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":["one string"]}`,
		`{"prompt":["a","b"]}`,
		`{"prompt":[1,2]}`,
		`{"prompt":""}`,
		`{"prompt":null,"max_tokens":-1}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":3}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
		`{"messages":[{"role":"user","content":null}],"max_tokens":9999999999999}`,
		`{"messages":[],"prompt":"x"}`,
		`[]`, `null`, `{`, `"x"`, `{"stream_options":null,"stream":true,"prompt":"é"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, chat := range []bool{false, true} {
			req, err := parseCompletionRequest(body, chat)
			if err != nil {
				if req != nil || err.Error() == "" {
					t.Fatalf("chat %v: %v with a request", chat, err)
				}
				continue
			}
			if req.PromptTokens < 1 || req.PromptTokens != len(req.tokens) || req.MaxTokens < 1 || req.Chat != chat || (req.IncludeUsage && !req.Stream) {
				t.Fatalf("chat %v: %s accepted as %+v", chat, body, req)
			}
		}
	})
}

// With prefix caching on, a prompt that starts as an earlier one did reuses
// its full blocks; one with a distinct start reuses nothing.
func TestAPIPromptsSharePrefixCache(t *testing.T) {
	sc := apiScenario(8)
	sc.Engine.PrefixCaching = true
	s, url := startAPI(t, sc)
	words := func(from, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "w%d ", from+i)
		}
		return b.String()
	}
	for _, prompt := range []string{
		words(0, 1000),                   // 1000 new tokens
		words(0, 800) + words(5000, 200), // shares 800 = 50 blocks of 16
		"distinct " + words(0, 999),      // shares nothing: its first block differs
		words(0, 1000),                   // all but the last, partial, block: 992
	} {
		resp, err := post(context.Background(), url+"/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":1}`, prompt))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close() // read
	}
	var cached []int
	for _, r := range records(s) {
		cached = append(cached, r.Cached)
	}
	if want := []int{0, 800, 0, 992}; !slices.Equal(cached, want) {
		t.Fatalf("cached prompt tokens %v, want %v", cached, want)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Engine.CheckBlocks(); err != nil || s.Engine.KVUsage() != 0 {
		t.Fatalf("blocks: %v, KV usage %v with nothing running", err, s.Engine.KVUsage())
	}
}
