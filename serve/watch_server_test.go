package serve

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/testkit/fakeslack"
	"github.com/llmdoctor/llmdoctor/serve/watch/watchtest"
	"github.com/llmdoctor/llmdoctor/slackkit"
)

// The watch's own tests are package watch's; these run it through the
// server.

// newWatchServer is a server with the watch on, a fake pipeline and no
// pacing between posts.
func newWatchServer(t testing.TB, dest slackkit.Destination, wc WatchConfig) (*Server, *watchtest.FakeDiag) {
	t.Helper()
	s, err := New(Config{Slack: dest, Watch: &wc})
	if err != nil {
		t.Fatal(err)
	}
	s.watch.SetPace(0)
	fd := &watchtest.FakeDiag{}
	s.diag = fd.Diagnose
	return s, fd
}

// watchRuns sets each diagnosis in turn and runs the server's watch once
// on it.
func watchRuns(t testing.TB, s *Server, fd *watchtest.FakeDiag, diags ...[]watchtest.TV) {
	t.Helper()
	for _, ts := range diags {
		fd.Set(ts...)
		if err := s.watch.Once(context.Background()); err != nil {
			t.Fatalf("run: %v", err)
		}
	}
}

// holdTransport holds every request until released, saying when one
// started.
type holdTransport struct {
	started chan struct{}
	release chan struct{}
}

func (h *holdTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.started <- struct{}{}
	<-h.release
	return http.DefaultTransport.RoundTrip(r)
}

// Serve runs the watch at once, diagnosing with the server's selector
// joined to the watch's, and its shutdown waits for a post in flight.
func TestServeRunsWatch(t *testing.T) {
	fs := fakeslack.Start()
	defer fs.Close()
	ht := &holdTransport{started: make(chan struct{}, 10), release: make(chan struct{})}
	dest := watchtest.BotDest(fs)
	dest.Client = &http.Client{Transport: ht}
	s, fd := newWatchServer(t, dest, WatchConfig{Enabled: true, Selector: `namespace="prod"`})
	fd.Set(watchtest.QueueCrit)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	select {
	case <-ht.started: // the cold start's post is on its way
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not start the watch")
	}
	cancel()
	close(ht.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := watchtest.Mains(fs); len(m) != 1 {
		t.Fatalf("the post in flight at shutdown did not finish before Serve returned:\n%s", fs.Summary())
	}
	if sel := fd.Selectors(); len(sel) != 1 || sel[0] != `namespace="prod"` {
		t.Errorf("the watch diagnosed with selectors %q", sel)
	}
	if ts := s.history.all(); len(ts) != 1 {
		t.Errorf("%d targets kept for the report pages, want the watch's one", len(ts))
	}
}
