package diagnosis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/collectors/prom"
	"github.com/llmdoctor/llmdoctor/internal/units"
	"github.com/llmdoctor/llmdoctor/rules"
)

func example(name string) []string {
	dir := filepath.Join("..", "examples", name)
	return []string{filepath.Join(dir, "start.prom"), filepath.Join(dir, "end.prom")}
}

func benchFile(name string) string {
	return filepath.Join("..", "collectors", "requests", "testdata", name)
}

func builtin(t *testing.T) *rules.Set {
	t.Helper()
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func checklistSet(t *testing.T) *rules.Set {
	t.Helper()
	items, err := rules.ChecklistItems()
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// What is wrong with sources together is refused before anything is read,
// with a problem a front end can word as its own.
func TestValidate(t *testing.T) {
	okProm := func(f func(*PromSource)) *PromSource {
		p := &PromSource{Connection: prom.Connection{URL: "http://prometheus:9090", Timeout: time.Second},
			Options: prom.Options{Window: 15 * time.Minute, Parallel: 8}}
		if f != nil {
			f(p)
		}
		return p
	}
	scrape := func(f func(*ScrapeSource)) *ScrapeSource {
		s := &ScrapeSource{Engines: []string{"127.0.0.1:8000"}, Interval: time.Second, Duration: time.Minute, Timeout: time.Second}
		if f != nil {
			f(s)
		}
		return s
	}
	for _, c := range []struct {
		name string
		src  Sources
		want Problem
	}{
		{"nothing", Sources{}, NothingToRead},
		{"requests alone", Sources{Requests: []string{"r.jsonl"}}, 0},
		{"two metrics sources", Sources{Prom: okProm(nil), Snapshots: []string{"a.prom"}}, SeveralMetricsSources},
		{"GPU without engine", Sources{Scrape: &ScrapeSource{GPUExporters: []string{"h:9400"}}, Bench: []string{"b.json"}}, GPUWithoutEngine},
		{"header without engine", Sources{Scrape: &ScrapeSource{Header: http.Header{"A": {"b"}}}, Prom: okProm(nil)}, HeaderWithoutEngine},
		{"interval", Sources{Scrape: scrape(func(s *ScrapeSource) { s.Interval = 0 })}, BadSchedule},
		{"timeout", Sources{Scrape: scrape(func(s *ScrapeSource) { s.Timeout = 0 })}, BadScrapeTimeout},
		{"client instead of timeout", Sources{Scrape: scrape(func(s *ScrapeSource) { s.Timeout, s.Client = 0, http.DefaultClient })}, 0},
		{"duration under interval", Sources{Scrape: scrape(func(s *ScrapeSource) { s.Duration = time.Millisecond })}, DurationUnderInterval},
		{"snapshot interval", Sources{Snapshots: []string{"a", "b"}, SnapshotInterval: -time.Second}, BadSnapshotInterval},
		{"snapshot from another reader", Sources{Snapshots: []string{"-"}, Stdin: strings.NewReader("")}, 0},
		{"prom window", Sources{Prom: okProm(func(p *PromSource) { p.Options.Window = 0 })}, BadPromWindow},
		{"prom step", Sources{Prom: okProm(func(p *PromSource) { p.Options.Step = -1 })}, BadPromStep},
		{"prom parallel", Sources{Prom: okProm(func(p *PromSource) { p.Options.Parallel = 0 })}, BadPromParallel},
		{"prom timeout", Sources{Prom: okProm(func(p *PromSource) { p.Connection.Timeout = 0 })}, BadPromTimeout},
		{"cert alone", Sources{Prom: okProm(func(p *PromSource) { p.Connection.CertFile = "c.pem" })}, CertWithoutKey},
		{"key alone", Sources{Prom: okProm(func(p *PromSource) { p.Connection.KeyFile = "k.pem" })}, KeyWithoutCert},
		{"window under a scrape", Sources{Prom: okProm(func(p *PromSource) { p.Options.Window = 10 * time.Second })}, PromWindowUnderScrape},
		{"window under a step", Sources{Prom: okProm(func(p *PromSource) { p.Options.Step = time.Hour })}, PromWindowUnderStep},
		{"unknown engine", Sources{Snapshots: []string{"a"}, Engine: "tgi"}, UnknownEngine},
		{"known engine", Sources{Snapshots: []string{"a"}, Engine: "sglang"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.src.Validate()
			var se *SourceError
			switch {
			case c.want == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != 0 && (!errors.As(err, &se) || se.Problem != c.want):
				t.Fatalf("got %v, want problem %d", err, c.want)
			case err != nil && strings.Contains(err.Error(), "--"):
				t.Errorf("the library's error names a flag: %v", err)
			}
		})
	}
}

// Run goes from files to a diagnosis, reporting its stages.
func TestRunSnapshots(t *testing.T) {
	var stages []string
	d, err := Run(context.Background(), Sources{Snapshots: example("queueing"), SnapshotInterval: 15 * time.Minute},
		builtin(t), nil, func(p Progress) { stages = append(stages, p.Stage) })
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Targets) != 1 || d.Targets[0].Primary.Bottleneck != "queueing" || len(d.Sources) != 2 || d.Sources[0].Kind != KindSnapshot {
		t.Fatalf("targets %+v, sources %+v", d.Targets, d.Sources)
	}
	if got := strings.Join(stages, ","); got != "read,rules,rules" {
		t.Errorf("stages %s", got)
	}
}

// A passing checklist item cites the values its message quotes: the fitted
// prompt-length → TTFT line is in the item's evidence, not only its text.
func TestChecklistItemCitesItsMessage(t *testing.T) {
	cl, err := Checklist(context.Background(), Sources{Bench: []string{benchFile("bench-detailed.json")}}, checklistSet(t), nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var it *advisor.Item
	for i := range cl.Targets[0].Items {
		if cl.Targets[0].Items[i].ID == "measurement/fixed-prompt-lengths" {
			it = &cl.Targets[0].Items[i]
		}
	}
	if it == nil || it.Status != advisor.Pass {
		t.Fatalf("item %+v", it)
	}
	for _, path := range []string{"cond.prompt_len_cv", "cond.prompt_ttft_slope", "cond.prompt_ttft_intercept", "cond.prompt_ttft_r2"} {
		if _, ok := it.Evidence[path]; !ok {
			t.Errorf("evidence lacks %s: %v", path, it.Evidence)
		}
	}
	if slope := units.Duration(it.Evidence["cond.prompt_ttft_slope"]); !strings.Contains(it.Message, slope+" per 1k prompt tokens") {
		t.Errorf("message %q does not quote the cited slope %s", it.Message, slope)
	}
	// A failing item cites what its message quotes too.
	cl, err = Checklist(context.Background(), Sources{Bench: []string{benchFile("bench-fixed-closed.json")}}, checklistSet(t), nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range cl.Targets[0].Items {
		if it.ID == "measurement/fixed-prompt-lengths" {
			if _, ok := it.Evidence["cond.prompt_len_distinct"]; it.Status != advisor.Fail || !ok {
				t.Errorf("fixed lengths: %s, evidence %v", it.Status, it.Evidence)
			}
		}
	}
}

// "-" reads Sources.Stdin, and the source is named stdin; the target is
// the model the benchmark names (model_id), or the file when it names none.
func TestStdin(t *testing.T) {
	b, err := os.ReadFile(benchFile("bench-detailed.json"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Run(context.Background(), Sources{Bench: []string{"-"}, Stdin: bytes.NewReader(b)}, builtin(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Sources[0].Path != "stdin" || d.Targets[0].Target.Model != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Fatalf("sources %+v, target %+v", d.Sources, d.Targets[0].Target)
	}
	for _, c := range []struct{ model, want string }{
		{`"model_id": null,`, "requests from stdin"},
		{`"model_id": "a\nb\u001b[31m",`, "requests from stdin"},
		{`"model_id": "  Qwen/Qwen3-8B ",`, "Qwen/Qwen3-8B"},
	} {
		in := regexp.MustCompile(`"model_id": *"[^"]*",`).ReplaceAllLiteral(b, []byte(c.model))
		d, err := Run(context.Background(), Sources{Bench: []string{"-"}, Stdin: bytes.NewReader(in)}, builtin(t), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Targets[0].Target.Model; got != c.want {
			t.Errorf("%s: target %q, want %q", c.model, got, c.want)
		}
	}
}

// Failures are typed, so a front end can word them.
func TestErrorsAreTyped(t *testing.T) {
	_, err := Run(context.Background(), Sources{Bench: []string{"no-such.json"}}, builtin(t), nil, nil)
	var re *ReadError
	if !errors.As(err, &re) || !re.Opening || re.Kind != KindBench {
		t.Fatalf("missing file: %v", err)
	}
	dir := t.TempDir()
	gpu := filepath.Join(dir, "dcgm.prom")
	if err := os.WriteFile(gpu, []byte("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 97\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Sources{Snapshots: []string{gpu}}, builtin(t), nil, nil)
	var ne *NoTargetError
	if !errors.As(err, &ne) || ne.Why != GPUOnly {
		t.Fatalf("GPU only: %v", err)
	}
	_, err = Run(context.Background(), Sources{Snapshots: example("queueing"), SnapshotInterval: 15 * time.Minute, GroupBy: []string{"pod"}}, builtin(t), nil, nil)
	if !errors.As(err, &ne) || ne.Why != NoGroupLabel || !strings.Contains(strings.Join(ne.Labels, ","), "model_name") {
		t.Fatalf("no group label: %v", err)
	}
}

// A live scrape reports each scrape, and cancelling it keeps what it
// gathered; credentials in the URL never reach the diagnosis.
func TestScrapeProgressAndCancel(t *testing.T) {
	body, err := os.ReadFile(example("queueing")[1])
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://user:s3cretpass@", 1) + "/metrics?token=s3crettoken"
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var scrapes, done int
	progress := func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Stage == StageScrape && p.Done {
			done++
		} else if p.Stage == StageScrape {
			scrapes++
			if scrapes == 3 {
				cancel()
			}
		}
		if strings.Contains(p.Message, "s3cret") {
			t.Errorf("progress shows a credential: %q", p.Message)
		}
	}
	src := Sources{Scrape: &ScrapeSource{Engines: []string{url}, Interval: 5 * time.Millisecond, Duration: time.Hour, Timeout: time.Second}}
	d, err := Run(ctx, src, builtin(t), nil, progress)
	if err != nil {
		t.Fatal(err)
	}
	if scrapes < 3 || done != 1 {
		t.Errorf("%d scrape reports, %d done", scrapes, done)
	}
	notes := strings.Join(d.Notes, "\n")
	if !strings.Contains(notes, "the diagnosis covers what was collected") || d.Window.Points < 2 {
		t.Errorf("%d points, notes %s", d.Window.Points, notes)
	}
	b, err := json.Marshal(d)
	if err != nil || strings.Contains(string(b), "s3cret") {
		t.Errorf("the diagnosis shows a credential (%v):\n%.2000s", err, b)
	}
}

// One input can be both diagnosed and checked: building evidence leaves
// the window as it was.
func TestInputIsReusable(t *testing.T) {
	in, err := Read(context.Background(), Sources{Snapshots: example("queueing"), SnapshotInterval: 15 * time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := in.Diagnose(builtin(t), nil)
	in.Checklist(checklistSet(t), nil, false)
	b := in.Diagnose(builtin(t), nil)
	if strings.Join(a.Notes, "\n") != strings.Join(b.Notes, "\n") {
		t.Errorf("notes grew:\n%v\n%v", a.Notes, b.Notes)
	}
}
