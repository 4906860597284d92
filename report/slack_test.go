package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/evidence"
	"github.com/llmdoctor/llmdoctor/rules"
	"github.com/llmdoctor/llmdoctor/sim"
	"github.com/llmdoctor/llmdoctor/view"
)

// scenarioRun is one built-in scenario diagnosed and checked end to end.
type scenarioRun struct {
	diagnosis *advisor.Diagnosis
	checklist *advisor.Checklist
}

// runScenario serves the scenario on a test server and reads it as demo
// does (cmd/llmdoctor runDemo), then diagnoses it and checks it against
// the checklist, with the scenario's benchmark file beside it ("": none).
func runScenario(t *testing.T, sc *sim.Scenario, bench string) scenarioRun {
	t.Helper()
	const scrapes = 30
	read := func(src diagnosis.Sources) *diagnosis.Input {
		e, err := sim.New(sc, false)
		if err != nil {
			t.Fatal(err)
		}
		e.AdvanceTo(sc.Warmup.Seconds())
		srv := httptest.NewServer(sim.NewServer(e, sc.Duration/scrapes, 0).Handler())
		defer srv.Close()
		src.Scrape = &diagnosis.ScrapeSource{Engines: []string{srv.URL + "/metrics"}, GPUExporters: []string{srv.URL + "/dcgm/metrics"},
			Interval: 2 * time.Millisecond, Scrapes: scrapes, Sequential: true, Client: &http.Client{Timeout: 10 * time.Second}}
		in, err := diagnosis.Read(context.Background(), src, nil)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	// The scrape alone, as demo reads it, then again with the benchmark
	// when there is one.
	plain := read(diagnosis.Sources{})
	withBench := plain
	if bench != "" {
		withBench = read(diagnosis.Sources{Bench: []string{bench}})
	}
	set, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	items, err := rules.ChecklistItems()
	if err != nil {
		t.Fatal(err)
	}
	d := plain.Diagnose(set, nil)
	d.Notes = append([]string{"simulated scenario " + sc.Name}, d.Notes...)
	return scenarioRun{d, withBench.Checklist(items, nil, false)}
}

// writeBench writes the scenario's requests as vllm bench serve JSON.
func writeBench(t *testing.T, sc *sim.Scenario) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bench.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = (&sim.Offline{Bench: f}).Run(sc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// checkSlack checks one posted message against Slack's limits from its
// JSON, as Slack would receive it, and that it round-trips through
// slack.WebhookMessage. It returns the texts of its blocks in order.
func checkSlack(t *testing.T, where string, m slack.WebhookMessage, main bool) []string {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	var back slack.WebhookMessage
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("%s: does not read back as a slack.WebhookMessage: %v", where, err)
	}
	if again, _ := json.Marshal(back); !bytes.Equal(raw, again) {
		t.Errorf("%s: changed on a round trip through slack.WebhookMessage:\n%s\n%s", where, raw, again)
	}
	if strings.TrimSpace(m.Text) == "" {
		t.Errorf("%s: no fallback text", where)
	}
	var msg struct {
		Text        string
		Blocks      []map[string]any
		Attachments []struct {
			Color  string
			Blocks []map[string]any
		}
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatal(err)
	}
	checkMrkdwn(t, where+" text", msg.Text)
	blocks := msg.Blocks
	if main {
		if len(msg.Attachments) != 1 || len(msg.Blocks) != 0 || !regexp.MustCompile(`^#[0-9A-F]{6}$`).MatchString(msg.Attachments[0].Color) {
			t.Fatalf("%s: want the blocks in one attachment with a colour:\n%s", where, raw)
		}
		blocks = msg.Attachments[0].Blocks
		if blocks[0]["type"] != "header" {
			t.Errorf("%s: starts with a %v block", where, blocks[0]["type"])
		}
	}
	if len(blocks) == 0 || len(blocks) > slackBlocksMax {
		t.Errorf("%s: %d blocks", where, len(blocks))
	}
	total := 0
	var texts []string
	text := func(kind string, v any, limit int, mrkdwn bool) {
		obj, _ := v.(map[string]any)
		s, _ := obj["text"].(string)
		n := utf8.RuneCountInString(s)
		switch {
		case n == 0:
			t.Errorf("%s: empty %s text", where, kind)
		case n > limit:
			t.Errorf("%s: %s text of %d characters (limit %d): %.80q…", where, kind, n, limit, s)
		}
		if mrkdwn {
			if obj["type"] != "mrkdwn" {
				t.Errorf("%s: %s text is %v", where, kind, obj["type"])
			}
			checkMrkdwn(t, where+" "+kind, s)
		}
		total += n
		texts = append(texts, s)
	}
	for _, b := range blocks {
		switch b["type"] {
		case "header":
			text("header", b["text"], slackHeaderMax, false)
		case "section":
			text("section", b["text"], slackTextMax, true)
		case "context":
			els, _ := b["elements"].([]any)
			if len(els) == 0 || len(els) > 10 {
				t.Errorf("%s: context of %d elements", where, len(els))
			}
			for _, e := range els {
				text("context", e, slackTextMax, true)
			}
		case "divider":
		default:
			t.Errorf("%s: unexpected %v block", where, b["type"])
		}
	}
	if total > slackCharsMax {
		t.Errorf("%s: %d characters in blocks (limit %d)", where, total, slackCharsMax)
	}
	return texts
}

// checkMrkdwn checks that & and < only begin what Slack reads as escapes,
// links and dates, so that text from data can never form one.
func checkMrkdwn(t *testing.T, where, s string) {
	t.Helper()
	rest := regexp.MustCompile(`&(amp|lt|gt);|<(https?://[^|<>\s]+\|[^<>]+|!date\^\d+\^[^|<>]+\|[^<>]+)>`).ReplaceAllString(s, "")
	if strings.ContainsAny(rest, "&<>") {
		t.Errorf("%s: unescaped &, < or > in %q", where, s)
	}
}

// checkAll checks every message of a rendering, Main and thread replies.
func checkAll(t *testing.T, name string, msgs []SlackMessage) {
	t.Helper()
	if len(msgs) == 0 {
		t.Fatalf("%s: no message", name)
	}
	for i, m := range msgs {
		if _, ok := slackColors[m.Severity]; !ok {
			t.Errorf("%s: severity %q", name, m.Severity)
		}
		if got := m.Main.Attachments[0].Color; got != slackColors[m.Severity] {
			t.Errorf("%s: colour %s for %s", name, got, m.Severity)
		}
		checkSlack(t, fmt.Sprintf("%s[%d].main", name, i), m.Main, true)
		if len(m.Details) > slackThreadMax {
			t.Errorf("%s: %d thread replies", name, len(m.Details))
		}
		for j, d := range m.Details {
			checkSlack(t, fmt.Sprintf("%s[%d].details[%d]", name, i, j), d, false)
		}
	}
}

// checkFindings: Main shows the first screen's findings (those no other
// one explains, at most view.FirstFindings) and counts the rest in its last
// block; every finding is in Main or the thread.
func checkFindings(t *testing.T, tr advisor.TargetReport, m SlackMessage) {
	t.Helper()
	texts := checkSlack(t, "main", m.Main, true)
	shown := 0
	for _, s := range texts {
		if regexp.MustCompile(`^\*(✗ CRITICAL|! WARNING|i INFO)\* `).MatchString(s) {
			shown++
		}
	}
	top := 0
	for _, f := range tr.Findings {
		if f.ExplainedBy == "" {
			top++
		}
	}
	if shown > view.FirstFindings || shown < min(top, view.FirstFindings) {
		t.Errorf("%d findings of %d (%d explaining the rest) in the main message", shown, len(tr.Findings), top)
	}
	more := regexp.MustCompile(`\+(\d+) more findings?`).FindStringSubmatch(texts[len(texts)-1])
	if left := len(tr.Findings) - shown; left > 0 && (more == nil || more[1] != fmt.Sprint(left)) || left == 0 && more != nil {
		t.Errorf("%d findings left out, last block %q", left, texts[len(texts)-1])
	}
	all := strings.Join(texts, "\n")
	for _, d := range m.Details {
		all += strings.Join(checkSlack(t, "reply", d, false), "\n")
	}
	for _, f := range tr.Findings {
		if !strings.Contains(all, "`"+f.Rule+"`") {
			t.Errorf("finding %s in neither the message nor the thread", f.Rule)
		}
	}
	for _, s := range tr.Next {
		if !strings.Contains(all, "] "+esc(s.Do)) {
			t.Errorf("step %q in neither the message nor the thread", s.Do)
		}
	}
}

func header(m SlackMessage) string {
	return m.Main.Attachments[0].Blocks.BlockSet[0].(*slack.HeaderBlock).Text.Text
}

// Every built-in scenario, served by each engine the simulator speaks,
// renders a diagnosis and a checklist within every limit, with a header
// that names the verdict.
func TestSlackEveryScenario(t *testing.T) {
	all, err := sim.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 5 {
		t.Fatalf("%d scenarios", len(all))
	}
	o := SlackOptions{ReportURL: "https://reports.example/run/1?a=1&b=2", GraphURL: "http://grafana:3000/explore?left=%7B%22queries%22%7D&x=|y"}
	for _, exposes := range sim.Exposures {
		for _, sc := range all {
			sc := *sc
			if !sc.CanExpose(exposes) {
				continue
			}
			sc.Exposes = exposes
			t.Run(exposes+"/"+sc.Name, func(t *testing.T) {
				t.Parallel()
				// The checklist reads a benchmark under vLLM's names
				// (reading one is slow); under SGLang's its request items
				// cannot be checked.
				bench := ""
				if exposes == "vllm" {
					bench = writeBench(t, &sc)
				}
				r := runScenario(t, &sc, bench)
				if len(r.diagnosis.Targets) == 0 {
					t.Fatal("no target")
				}
				ds := SlackDiagnosis(r.diagnosis, o)
				checkAll(t, "diagnosis", ds)
				for i, m := range ds {
					p := r.diagnosis.Targets[i].Primary
					want := map[string]string{"found": p.Bottleneck, "healthy": "HEALTHY", "inconclusive": "INCONCLUSIVE"}[p.Status]
					if h := header(m); want == "" || !strings.Contains(h, want) || !strings.Contains(h, r.diagnosis.Targets[i].Target.Model) {
						t.Errorf("header %q does not name the verdict %q and the model", h, want)
					}
					if !strings.Contains(m.Main.Text, strings.TrimPrefix(want, "✓ ")) {
						t.Errorf("fallback text %q does not name the verdict", m.Main.Text)
					}
					checkFindings(t, r.diagnosis.Targets[i], m)
				}
				cs := SlackChecklist(r.checklist, o)
				checkAll(t, "checklist", cs)
				for _, m := range cs {
					if h := header(m); !regexp.MustCompile(`^(✓ READY|✗ NOT READY|\? NOT VERIFIED) · model `).MatchString(h) {
						t.Errorf("checklist header %q", h)
					}
				}
			})
		}
	}
}

// A diagnosis far over every limit is cut to fit, and says what it left
// out with the link to the full report.
func TestSlackOversized(t *testing.T) {
	model := strings.Repeat("<&>model", 50) // 400 characters
	big := strings.Repeat("x <b> & y ", 1000)
	ttft, q, p, e2e, dec := 2.0, 1.5, 0.3, 9.0, 7.0
	tr := advisor.TargetReport{
		Target:     evidence.Target{Model: model, Instance: "i<1>", ServedBy: "vllm", Labels: map[string]string{"namespace": "a&b"}},
		Primary:    advisor.Primary{Bottleneck: "queueing", Rule: "r/000", Status: "found", Summary: big, Unchecked: []string{"g/<0>"}},
		LatencyMap: advisor.LatencyMap{TTFT: &ttft, Queue: &q, Prefill: &p, Decode: &dec, E2E: &e2e},
		Checks:     advisor.Checks{Fired: 300, Quiet: 3, Insufficient: 200},
	}
	ev := map[string]float64{}
	for i := range 80 {
		ev[fmt.Sprintf("stage.queue.mean%02d", i)] = 1.5
	}
	for i := range 300 {
		f := advisor.Finding{Rule: fmt.Sprintf("r/%03d", i), Severity: "critical", Bottleneck: "queueing", Title: big, Message: big,
			Evidence: ev, Sources: map[string]string{"stage.queue.mean": "vllm:request_queue_time_seconds<&>"}, Stage: "queue", Capped: big}
		tr.Findings = append(tr.Findings, f)
		tr.Suppressed = append(tr.Suppressed, advisor.Finding{Rule: f.Rule, Suppressed: big})
		tr.Next = append(tr.Next, advisor.Step{Do: fmt.Sprintf("%d. %s", i, big), Cost: "config"})
		tr.Gaps = append(tr.Gaps, advisor.Gap{Rule: fmt.Sprintf("g/<%d>", i), How: big, Details: []rules.Missing{{Path: "stage.prefill", Why: big}}})
		tr.Members = append(tr.Members, advisor.Member{Target: evidence.Target{Instance: fmt.Sprintf("host-%d<&>:8000", i)},
			Evidence: map[string]float64{"stage.ttft.p99": 2.5, "resource.kv_usage.mean": 0.97}})
		tr.Inconsistencies = append(tr.Inconsistencies, evidence.Inconsistency{Check: "x", Note: big})
	}
	d := &advisor.Diagnosis{Schema: advisor.Schema, Window: advisor.Window{Seconds: 900, Points: 31},
		Sources: []advisor.Source{{Kind: "prometheus", URL: "http://prom:9090/?q=" + big, OK: true}}, Notes: []string{big, big},
		Targets: []advisor.TargetReport{tr, tr}}
	for _, o := range []SlackOptions{{}, {ReportURL: "https://r.example/x?a=1&b=<2>", GraphURL: "https://g.example/" + strings.Repeat("q", 5000)}} {
		msgs := SlackDiagnosis(d, o)
		checkAll(t, "oversized", msgs)
		if len(msgs) != 2 {
			t.Fatalf("%d messages for 2 targets", len(msgs))
		}
		m := msgs[0]
		if h := header(m); utf8.RuneCountInString(h) != slackHeaderMax || !strings.HasSuffix(h, "…") || !strings.HasPrefix(h, "✗ CRITICAL: queueing · model <&>model") {
			t.Errorf("header %q", h)
		}
		texts := checkSlack(t, "main", m.Main, true)
		last := texts[len(texts)-1]
		if !regexp.MustCompile(`^\+\d+ more findings, \+\d+ more steps \(see (the full report|<https://r\.example/x\?a=1&amp;b=%3C2%3E\|the full report>)\)$`).MatchString(last) {
			t.Errorf("the last block does not say what was left out: %q", last)
		}
		if o.ReportURL != "" && !strings.Contains(strings.Join(texts, "\n"), "<https://r.example/x?a=1&amp;b=%3C2%3E|Full report>") {
			t.Error("no link to the full report")
		}
		if len(m.Details) != slackThreadMax {
			t.Errorf("%d thread replies", len(m.Details))
		}
		replies := checkSlack(t, "last reply", m.Details[len(m.Details)-1], false)
		if !strings.Contains(replies[len(replies)-1], " more ") {
			t.Errorf("the last thread reply does not say what was left out: %q", replies[len(replies)-1])
		}
		if !strings.Contains(m.Main.Text, "&lt;&amp;&gt;model") || strings.Contains(m.Main.Text, "<&>") {
			t.Errorf("model name not escaped in %q", m.Main.Text)
		}
	}

	var items []advisor.Item
	for i := range 200 {
		items = append(items,
			advisor.Item{ID: fmt.Sprintf("c/%d", i), Title: big, Status: advisor.Fail, Blocking: true, Message: big, Evidence: ev,
				Fix: []rules.Step{{Do: big, Cost: "config"}}},
			advisor.Item{ID: fmt.Sprintf("u/%d", i), Title: big, Status: advisor.CannotCheck, Blocking: true, Message: big, How: big},
			advisor.Item{ID: fmt.Sprintf("p/%d", i), Title: big, Status: advisor.Pass, Blocking: true, Message: big})
	}
	c := &advisor.Checklist{Schema: advisor.ChecklistSchema, Notes: []string{big},
		Targets: []advisor.ChecklistTarget{{Target: evidence.Target{Model: model}, Items: items, Passed: 200, Failed: 200, CannotCheck: 200}}}
	c.Decide()
	cs := SlackChecklist(c, SlackOptions{ReportURL: "https://r.example/c"})
	checkAll(t, "oversized checklist", cs)
	texts := checkSlack(t, "checklist main", cs[0].Main, true)
	if last := texts[len(texts)-1]; !strings.HasPrefix(last, "+") || !strings.Contains(last, " more failing items") {
		t.Errorf("the last block does not say what was left out: %q", last)
	}
}

// The bar's colour follows the severity, and the four colours differ in
// lightness as well as hue.
func TestSlackColours(t *testing.T) {
	ttft := 1.0
	mk := func(p advisor.Primary, sev string) *advisor.Diagnosis {
		return &advisor.Diagnosis{Targets: []advisor.TargetReport{{Target: evidence.Target{Model: "m"}, Primary: p,
			Findings:   []advisor.Finding{{Rule: "r", Severity: sev, Title: "t", Message: "m"}},
			LatencyMap: advisor.LatencyMap{TTFT: &ttft}}}}
	}
	for _, c := range []struct {
		d            *advisor.Diagnosis
		sev, colour  string
		headlineWant string
	}{
		{mk(advisor.Primary{Status: "found", Rule: "r", Bottleneck: "queueing", Summary: "s"}, "critical"), SlackCritical, "#A50F15", "✗ CRITICAL: queueing · model m"},
		{mk(advisor.Primary{Status: "found", Rule: "r", Bottleneck: "decode", Summary: "s"}, "warning"), SlackWarning, "#FFC20A", "! WARNING: decode · model m"},
		{mk(advisor.Primary{Status: "healthy", Bottleneck: "none", Summary: "s"}, "info"), SlackHealthy, "#238B45", "✓ HEALTHY · model m"},
		{mk(advisor.Primary{Status: "inconclusive", Bottleneck: "unknown", Summary: "s"}, "info"), SlackInconclusive, "#9E9E9E", "? INCONCLUSIVE · model m"},
		{&advisor.Diagnosis{}, SlackInconclusive, "#9E9E9E", "? INCONCLUSIVE · no target"},
	} {
		m := SlackDiagnosis(c.d, SlackOptions{})[0]
		if m.Severity != c.sev || m.Main.Attachments[0].Color != c.colour || header(m) != c.headlineWant {
			t.Errorf("%s: severity %s, colour %s, header %q", c.headlineWant, m.Severity, m.Main.Attachments[0].Color, header(m))
		}
		checkAll(t, c.sev, []SlackMessage{m})
	}
	lightness := func(hex string) float64 {
		var rgb [3]float64
		for i := range rgb {
			var v int
			if _, err := fmt.Sscanf(hex[1+2*i:3+2*i], "%02x", &v); err != nil {
				t.Fatalf("colour %q: %v", hex, err)
			}
			c := float64(v) / 255
			if c <= 0.04045 {
				rgb[i] = c / 12.92
			} else {
				rgb[i] = math.Pow((c+0.055)/1.055, 2.4)
			}
		}
		y := 0.2126*rgb[0] + 0.7152*rgb[1] + 0.0722*rgb[2]
		return 116*math.Cbrt(y) - 16
	}
	for a, ca := range slackColors {
		for b, cb := range slackColors {
			if a < b && math.Abs(lightness(ca)-lightness(cb)) < 12 {
				t.Errorf("%s %s (L* %.0f) and %s %s (L* %.0f) differ too little in lightness", a, ca, lightness(ca), b, cb, lightness(cb))
			}
		}
	}
}

// The checklist's headline: NOT READY when an item failed, NOT VERIFIED
// when nothing failed but an item could not be checked, READY only when
// every item was checked and none blocking failed.
func TestSlackChecklistHeadline(t *testing.T) {
	item := func(id, status string, blocking bool) advisor.Item {
		return advisor.Item{ID: id, Title: id + " title", Status: status, Blocking: blocking, Message: id + " says <&>", How: "scrape it",
			Fix: []rules.Step{{Do: "fix " + id, Cost: "config"}}}
	}
	for _, c := range []struct {
		name   string
		items  []advisor.Item
		strict bool
		want   string
		sev    string
	}{
		{"one failed", []advisor.Item{item("a", advisor.Pass, true), item("b", advisor.Fail, true), item("c", advisor.CannotCheck, true)}, false, "✗ NOT READY", SlackCritical},
		{"unchecked, none failed", []advisor.Item{item("a", advisor.Pass, true), item("c", advisor.CannotCheck, true)}, false, "? NOT VERIFIED", SlackInconclusive},
		// Only items that decide the gate leave it unverified, as the gate
		// itself counts them.
		{"unchecked advisory", []advisor.Item{item("a", advisor.Pass, true), item("c", advisor.CannotCheck, false)}, false, "✓ READY", SlackHealthy},
		{"unchecked advisory, strict", []advisor.Item{item("a", advisor.Pass, true), item("c", advisor.CannotCheck, false)}, true, "✓ READY", SlackHealthy},
		{"unchecked, strict", []advisor.Item{item("a", advisor.Pass, true), item("c", advisor.CannotCheck, true)}, true, "✗ NOT READY", SlackCritical},
		{"advisory failed", []advisor.Item{item("a", advisor.Pass, true), item("d", advisor.Fail, false)}, false, "✓ READY", SlackWarning},
		{"all passed", []advisor.Item{item("a", advisor.Pass, true)}, false, "✓ READY", SlackHealthy},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := &advisor.Checklist{Schema: advisor.ChecklistSchema, Strict: c.strict, Window: advisor.Window{Seconds: 60, Points: 5},
				Targets: []advisor.ChecklistTarget{{Target: evidence.Target{Model: "m"}, Items: c.items}}}
			for _, it := range c.items {
				switch it.Status {
				case advisor.Pass:
					cl.Targets[0].Passed++
				case advisor.Fail:
					cl.Targets[0].Failed++
				default:
					cl.Targets[0].CannotCheck++
				}
			}
			cl.Decide()
			ms := SlackChecklist(cl, SlackOptions{})
			checkAll(t, c.name, ms)
			m := ms[0]
			if h := header(m); h != c.want+" · model m" || m.Severity != c.sev {
				t.Errorf("header %q, severity %s; want %q, %s", h, m.Severity, c.want, c.sev)
			}
			texts := strings.Join(checkSlack(t, "main", m.Main, true), "\n")
			for _, it := range c.items {
				switch {
				case it.Status == advisor.Fail && (!strings.Contains(texts, it.ID+" says &lt;&amp;&gt;") || !strings.Contains(texts, "fix "+it.ID)):
					t.Errorf("failing item %s without its message or fix:\n%s", it.ID, texts)
				case it.Status == advisor.CannotCheck && !strings.Contains(texts, "_how:_ scrape it"):
					t.Errorf("unchecked item %s without how:\n%s", it.ID, texts)
				}
			}
			if !strings.Contains(texts, fmt.Sprintf("✓ *%d passed*", cl.Targets[0].Passed)) {
				t.Errorf("passes not counted:\n%s", texts)
			}
		})
	}
}

// The main message shows the parts a reader acts on: the summary, the
// latency bar, the findings with their numbers and source metric, the
// steps, the gaps in one line, and the links.
func TestSlackDiagnosisContent(t *testing.T) {
	d := sample()
	d.Targets[0].Target = evidence.Target{Model: "m", ServedBy: "vllm"}
	d.Targets[0].Findings[0].Sources = map[string]string{"stage.queue.mean": "vllm:request_queue_time_seconds"}
	d.Targets[0].Gaps = []advisor.Gap{{Rule: "prefill/x", How: "upgrade", Details: []rules.Missing{{Path: "stage.prefill", Why: "missing"}}}}
	d.Targets[0].Suppressed = []advisor.Finding{{Rule: "s/x", Suppressed: "known"}}
	ms := SlackDiagnosis(d, SlackOptions{ReportURL: "https://r.example/1", GraphURL: "https://g.example/2"})
	checkAll(t, "sample", ms)
	texts := strings.Join(checkSlack(t, "main", ms[0].Main, true), "\n")
	for _, want := range []string{
		"✗ CRITICAL: queueing · model m",
		"TTFT is mostly queue wait",
		"*Latency map* · mean TTFT 2.00s\n```queue      1.50s  75% ███████████████░░░░░\nprefill        ?       not exported",
		"*✗ CRITICAL* `queue/x`", "_numbers:_ stage.queue.mean = 1.50s", "_from:_ `vllm:request_queue_time_seconds`",
		"*Next steps, cheapest first*\n1. [config] raise --max-num-seqs",
		"*Could not check:* `prefill/x`",
		"<https://r.example/1|Full report>", "<https://g.example/2|Graph of the window>", "15m00s window, 2 samples", "served by vllm",
		"1 finding suppressed by configuration", "sources: ✓ snapshot a.prom",
	} {
		if !strings.Contains(texts, want) {
			t.Errorf("missing %q in\n%s", want, texts)
		}
	}
	if strings.Contains(texts, " more ") {
		t.Errorf("says something was left out when nothing was:\n%s", texts)
	}
	if len(ms[0].Details) != 1 {
		t.Fatalf("%d thread replies", len(ms[0].Details))
	}
	reply := strings.Join(checkSlack(t, "reply", ms[0].Details[0], false), "\n")
	for _, want := range []string{"? `prefill/x` needs `stage.prefill`", "_how:_ upgrade", "`s/x`: known"} {
		if !strings.Contains(reply, want) {
			t.Errorf("missing %q in the thread reply\n%s", want, reply)
		}
	}
}

// Several instances give a table in the thread, lined up by what shows.
func TestSlackMembersTable(t *testing.T) {
	d := sample()
	d.Targets[0].Members = []advisor.Member{
		{Target: evidence.Target{Instance: "a&b:8000"}, Evidence: map[string]float64{"stage.ttft.p99": 2.5, "resource.kv_usage.mean": 0.97}},
		{Target: evidence.Target{Instance: "c:8000"}, Evidence: map[string]float64{"stage.ttft.p99": 0.4}},
	}
	ms := SlackDiagnosis(d, SlackOptions{})
	reply := strings.Join(checkSlack(t, "reply", ms[0].Details[0], false), "\n")
	want := "```member             KV   TTFT p99\ninstance a&amp;b:8000  97%  2.50s\ninstance c:8000    –    400ms```"
	if !strings.Contains(reply, want) {
		t.Errorf("want\n%s\nin\n%s", want, reply)
	}
}

// cutMrkdwn never leaves an entity, a link or a code block broken.
func TestCutMrkdwn(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abc &amp; def", 7, "abc …"},
		{"see <https://x.example/long|the report> now", 20, "see …"},
		{"```a\nb\nc\nd```", 8, "```a…```"},
		{"ééééé", 4, "ééé…"},
	} {
		if got := cutMrkdwn(c.in, c.n); got != c.want || utf8.RuneCountInString(got) > c.n {
			t.Errorf("cutMrkdwn(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// The renderer's JSON shows <, > and & as they are, and reads back as the
// same messages, a backslash in the data included.
func TestWriteSlackReadable(t *testing.T) {
	d := sample()
	d.Targets[0].Target.Model = `a<b>&c \u003c "q"`
	msgs := SlackDiagnosis(d, SlackOptions{ReportURL: "https://r.example/?a=1&b=2"})
	var b bytes.Buffer
	if err := writeSlack(&b, msgs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// (\\u003c is the model's backslash, then u003c.)
	if regexp.MustCompile(`[^\\]\\u00(3c|3e|26)`).MatchString(out) || !strings.Contains(out, "<https://r.example/?a=1&amp;b=2|Full report>") {
		t.Errorf("escaped output:\n%s", out)
	}
	var back []SlackMessage
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(msgs)
	got, _ := json.Marshal(back)
	if !bytes.Equal(want, got) {
		t.Errorf("read back differently:\n%s\n%s", want, got)
	}
	if back[0].Target != `model a<b>&c \u003c "q"` {
		t.Errorf("target %q", back[0].Target)
	}
}
