package diagnosis

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sglangOnly is an SGLang /metrics page whose series carry model_name.
const sglangOnly = `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="qwen",tp_rank="0"} 3
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="qwen",tp_rank="0"} 0
`

// An engine filter on sources holding only another engine's metrics says
// so, rather than asking for a grouping label the series carry.
func TestEngineFilterOnOtherEngines(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "sglang.prom")
	if err := os.WriteFile(page, []byte(sglangOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		snapshots []string
		engine    string
		held      string
		text      string
	}{
		{[]string{page}, "vllm", "sglang", "the sources hold SGLang metrics, not vLLM's"},
		{example("queueing"), "sglang", "vllm", "the sources hold vLLM metrics, not SGLang's"},
	} {
		_, err := Run(context.Background(), Sources{Snapshots: c.snapshots, SnapshotInterval: 15 * time.Minute, Engine: c.engine}, builtin(t), nil, nil)
		var ne *NoTargetError
		if !errors.As(err, &ne) || ne.Why != OtherEngines {
			t.Fatalf("--engine %s: %v", c.engine, err)
		}
		if ne.Engine != c.engine || strings.Join(ne.Held, ",") != c.held || !strings.Contains(err.Error(), c.text) {
			t.Errorf("--engine %s: engine %q held %v: %v", c.engine, ne.Engine, ne.Held, err)
		}
		if strings.Contains(err.Error(), "group by") {
			t.Errorf("--engine %s asks for a grouping label: %v", c.engine, err)
		}
	}
	// The engine the sources hold is diagnosed.
	d, err := Run(context.Background(), Sources{Snapshots: []string{page}, Engine: "sglang"}, builtin(t), nil, nil)
	if err != nil || len(d.Targets) != 1 || d.Targets[0].Target.Model != "qwen" {
		t.Fatalf("--engine sglang: %v", err)
	}
	// With the engine's own series lacking the grouping label, the error
	// names that engine and the labels of its series only.
	_, err = Run(context.Background(), Sources{Snapshots: []string{page}, Engine: "sglang", GroupBy: []string{"pod"}}, builtin(t), nil, nil)
	var ne *NoTargetError
	if !errors.As(err, &ne) || ne.Why != NoGroupLabel || !strings.HasPrefix(err.Error(), "SGLang metrics were read") {
		t.Fatalf("--engine sglang --group-by pod: %v", err)
	}
}
