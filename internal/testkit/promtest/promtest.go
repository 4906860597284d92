// Package promtest runs a real Prometheus server for tests: Debian's
// prometheus package, on a free loopback port, over a temporary TSDB filled
// by promtool from OpenMetrics files. Without the binaries the tests skip,
// except in CI (testkit.CI), where they fail: CI installs the package.
package promtest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/internal/testkit"
)

// Need returns the paths of prometheus and promtool, or skips (fails in
// CI): testkit.Need for Debian's prometheus package.
func Need(t testing.TB) (prometheus, promtool string) {
	t.Helper()
	return testkit.Need(t, "prometheus", "prometheus"), testkit.Need(t, "prometheus", "promtool")
}

// Backfill turns an OpenMetrics file into TSDB blocks in dir.
func Backfill(t testing.TB, openMetrics, dir string) {
	t.Helper()
	_, promtool := Need(t)
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", openMetrics, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
}

// Server is a running Prometheus.
type Server struct {
	URL string
	cmd *exec.Cmd
	tmp string
}

// Start runs Prometheus over the TSDB in dir with the given scrape config
// (empty for none), waits until it is ready, and stops it when t ends.
func Start(t testing.TB, dir, scrapeConfigs string, flags ...string) *Server {
	t.Helper()
	bin, _ := Need(t)
	s, err := Launch(bin, dir, scrapeConfigs, flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Launch runs Prometheus until Stop; for servers shared by several tests.
// flags are added to its command line (--query.max-samples=…).
func Launch(bin, dir, scrapeConfigs string, flags ...string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close() // it only found a free port
	tmp, err := os.MkdirTemp("", "promtest")
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(tmp, "prometheus.yml")
	conf := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1m\n"
	if scrapeConfigs != "" {
		conf += "scrape_configs:\n" + scrapeConfigs
	}
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	logName := filepath.Join(tmp, "prometheus.log")
	logf, _ := os.Create(logName)
	args := append([]string{"--config.file=" + cfg, "--storage.tsdb.path=" + dir,
		"--storage.tsdb.retention.time=100y", fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--query.lookback-delta=5m"}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, tmp: tmp}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			_ = resp.Body.Close() // its status is all that is read
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, _ := os.ReadFile(logName)
	s.Stop()
	return nil, fmt.Errorf("prometheus did not become ready:\n%s", log)
}

// Stop ends the server and removes its scratch files.
func (s *Server) Stop() {
	// Killed, it exits with "signal: killed", which is no news; a process
	// that had already gone is stopped all the same.
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	if err := os.RemoveAll(s.tmp); err != nil {
		fmt.Fprintf(os.Stderr, "promtest: removing %s: %v\n", s.tmp, err)
	}
}

// CPUTime is the CPU time the server has used so far (user and system,
// from /proc on Linux; 0 elsewhere): what a benchmark charges to Prometheus.
func (s *Server) CPUTime() time.Duration {
	return procCPU(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
}

// procCPU reads utime+stime of a /proc stat file, in the kernel's 100 Hz
// USER_HZ ticks.
func procCPU(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// SelfCPUTime is this process's CPU time, as CPUTime measures a server's.
func SelfCPUTime() time.Duration { return procCPU("/proc/self/stat") }
