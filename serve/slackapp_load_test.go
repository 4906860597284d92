package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// TestSlackLoad: 200 slash commands in five bursts of 40 over half a
// second, over real HTTP, with diagnoses of 100 ms and a concurrency
// limit of 8. Each is acknowledged under 3 s
// (p99 measured); those over the limit are told "busy" at once and run
// nothing, every other one gets its result at its response_url. After
// shutdown no goroutine is left behind.
func TestSlackLoad(t *testing.T) {
	testkit.NeedHeavy(t, "200 slash commands at once")
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const n, limit = 200, 8
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	h := newSlackHarness(t, func(c *Config) {
		c.MaxConcurrent = limit
		c.SlackApp.Client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	})
	h.gate = nil
	d := slackFixtureDiagnosis(t)
	h.result = func() (*advisor.Diagnosis, error) {
		time.Sleep(100 * time.Millisecond) // a diagnosis that takes a while
		return d, nil
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.srv.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	type result struct {
		took time.Duration
		code int
		ack  slackAck
		err  error
	}
	results := make([]result, n)
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	startGun := make(chan struct{})
	for i := range n {
		go func() {
			defer done.Done()
			body := slackCommandBody(fmt.Sprintf("diagnose model-%d 30m", i), h.sink.url(strconv.Itoa(i)), "user_id", fmt.Sprintf("U%04d", i))
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			req, _ := http.NewRequest(http.MethodPost, base+"/slack/commands", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Slack-Request-Timestamp", ts)
			req.Header.Set("X-Slack-Signature", slackSignature(slackTestSecret, ts, []byte(body)))
			ready.Done()
			<-startGun
			// In bursts over half a second: slots free up and fill again.
			time.Sleep(time.Duration(i%5) * 100 * time.Millisecond)
			start := time.Now()
			resp, err := client.Do(req)
			r := result{err: err}
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close() // read only
				r.code = resp.StatusCode
				r.err = json.Unmarshal(b, &r.ack)
			}
			r.took = time.Since(start)
			results[i] = r
		}()
	}
	ready.Wait()
	close(startGun)
	done.Wait()

	var lat []time.Duration
	busy, diagnosing := 0, map[string]bool{}
	for i, r := range results {
		if r.err != nil || r.code != http.StatusOK {
			t.Errorf("command %d: HTTP %d, %v", i, r.code, r.err)
			continue
		}
		lat = append(lat, r.took)
		switch {
		case strings.Contains(r.ack.Text, "busy"):
			busy++
		case strings.Contains(r.ack.Text, "Diagnosing model `model-"):
			diagnosing[fmt.Sprintf("/commands/T0LLMDOC/%d/xyz", i)] = true
		default:
			t.Errorf("command %d: ack %q", i, r.ack.Text)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) time.Duration { return lat[max(0, int(float64(len(lat))*q+0.5)-1)] }
	t.Logf("%d commands: %d diagnosing, %d busy; ack p50 %s, p99 %s, max %s", n, len(diagnosing), busy, p(0.50), p(0.99), lat[len(lat)-1])
	if p(0.99) >= 3*time.Second {
		t.Errorf("ack p99 %s, Slack wants under 3s", p(0.99))
	}
	if busy == 0 || len(diagnosing) < limit || busy+len(diagnosing) != n {
		t.Errorf("%d busy, %d diagnosing of %d with a limit of %d", busy, len(diagnosing), n, limit)
	}

	// Every command acknowledged "diagnosing" gets its result; no other.
	deadline := time.After(30 * time.Second)
	for want := len(diagnosing); want > 0; want-- {
		select {
		case p := <-h.sink.ch:
			if !diagnosing[p.Path] {
				t.Errorf("a post to %s, which was told busy or posted already", p.Path)
			}
			delete(diagnosing, p.Path)
			if txt := fmt.Sprint(p.Payload["text"]); !strings.HasPrefix(txt, "llmdoctor: ") {
				t.Errorf("post to %s: %q", p.Path, txt)
			}
		case <-deadline:
			t.Fatalf("%d results never came", len(diagnosing))
		}
	}
	if int(h.calls.Load()) != n-busy {
		t.Errorf("%d diagnoses run, want %d", h.calls.Load(), n-busy)
	}

	// Connections the client dialed and never used would hold Shutdown
	// for 5 s (net/http counts a new connection idle only after that).
	tr.CloseIdleConnections()
	shut := time.Now()
	stop()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	t.Logf("shutdown took %s", time.Since(shut))
	if extra := len(h.sink.ch); extra != 0 {
		t.Errorf("%d posts more than the results", extra)
	}
	tr.CloseIdleConnections()
	h.sink.srv.Close()
}
