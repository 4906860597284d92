package accuracy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/diagnosis"
	"github.com/llmdoctor/llmdoctor/rules"
)

// PeerCase is one window recorded from the independent simulator
// (llm-d-inference-sim): its /metrics every few seconds and the verdict the
// latencies it was configured with give (diagnosis/testdata/peersim).
type PeerCase struct {
	Name    string    `yaml:"name"`
	Dir     string    `yaml:"-"`
	Command string    `yaml:"command"`
	Offsets []float64 `yaml:"scrape_offsets_s"`
	Verdict string    `yaml:"verdict"`
	Accept  []string  `yaml:"accept"`
	Reading string    `yaml:"reading"`
}

// Snapshots are the case's /metrics files, oldest first.
func (c PeerCase) Snapshots() []string {
	paths, _ := filepath.Glob(filepath.Join(c.Dir, "snap-*.prom"))
	sort.Strings(paths)
	return paths
}

// The forms a peer window is read in.
const (
	peerTwo    = "two snapshots"
	peerSeries = "5 s series"
)

// Sources is the case read as two snapshots (first and last) or as its
// whole series.
func (c PeerCase) Sources(form string) diagnosis.Sources {
	snaps := c.Snapshots()
	if form == peerTwo {
		span := c.Offsets[len(c.Offsets)-1] - c.Offsets[0]
		return diagnosis.Sources{Snapshots: []string{snaps[0], snaps[len(snaps)-1]},
			SnapshotInterval: time.Duration(span * float64(time.Second)).Round(time.Second)}
	}
	return diagnosis.Sources{Snapshots: snaps, SnapshotInterval: 5 * time.Second}
}

// LoadPeerCases reads every case directory under dir.
func LoadPeerCases(dir string) ([]PeerCase, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*", "case.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []PeerCase
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var c PeerCase
		if err := yaml.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		c.Dir = filepath.Dir(p)
		if c.Name == "" {
			c.Name = filepath.Base(c.Dir)
		}
		if c.Verdict == "" || len(c.Offsets) < 2 || len(c.Snapshots()) != len(c.Offsets) {
			return nil, fmt.Errorf("%s: needs a verdict and one scrape offset per snapshot", p)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no peer cases under %s", dir)
	}
	return out, nil
}

// TreePeerCases reads the peer cases of the source tree.
func TreePeerCases() ([]PeerCase, error) {
	dir, err := treeTestdata("peersim")
	if err != nil {
		return nil, err
	}
	return LoadPeerCases(dir)
}

// PeerResult is one case read in one form.
type PeerResult struct {
	Case    PeerCase
	Form    string
	Primary advisor.Primary
	Err     string
	Right   bool
	// Critical names the critical findings, which a healthy case must not
	// have.
	Critical []string
}

// RunPeerCases diagnoses every case in both forms.
func RunPeerCases(set *rules.Set, cfg *rules.Config, cases []PeerCase) []PeerResult {
	var out []PeerResult
	for _, c := range cases {
		for _, form := range []string{peerTwo, peerSeries} {
			r := PeerResult{Case: c, Form: form}
			d, err := diagnosis.Run(context.Background(), c.Sources(form), set, cfg, nil)
			if err != nil {
				r.Err = oneLineErr(err)
				out = append(out, r)
				continue
			}
			t := d.Targets[0]
			r.Primary = t.Primary
			for _, f := range t.Findings {
				if f.Severity == "critical" {
					r.Critical = append(r.Critical, f.Rule)
				}
			}
			got := t.Primary.Bottleneck
			if t.Primary.Status == "inconclusive" {
				got = "inconclusive"
			}
			r.Right = got == c.Verdict || slices.Contains(c.Accept, got)
			out = append(out, r)
		}
	}
	return out
}

// PeerSection renders the "Independent simulator" part of docs/accuracy.md.
func PeerSection(rs []PeerResult) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	right := map[string]int{}
	n := map[string]int{}
	for _, r := range rs {
		n[r.Form]++
		if r.Right {
			right[r.Form]++
		}
	}
	p("## Independent simulator\n\n")
	p("%d windows recorded from llm-d-inference-sim, a vLLM-compatible serving simulator we did not\n", n[peerSeries])
	p("write, under open-loop load of our design (`diagnosis/testdata/peersim`: its README says how). It\n")
	p("counts time its own way: its TTFT starts when a request is scheduled while end-to-end starts at\n")
	p("arrival, and its queue-time histogram counts only requests that waited. Each window is labelled\n")
	p("from the latencies it was configured with, and read as two snapshots (first and last) and as its\n")
	p("whole 5-second series. No rule knows this simulator: the verdicts come from the latency budget\n")
	p("adding up and from the evidence it has.\n\n")
	for _, f := range []string{peerTwo, peerSeries} {
		p("- %s: **%d of %d right (%.0f%%)**\n", f, right[f], n[f], 100*float64(right[f])/float64(max(1, n[f])))
	}
	p("\n| window | configured to show | %s | %s |\n|---|---|---|---|\n", peerTwo, peerSeries)
	for i := 0; i+1 < len(rs); i += 2 {
		c := rs[i].Case
		want := "`" + c.Verdict + "`"
		if len(c.Accept) > 0 {
			want += " (or " + codeList(c.Accept) + ")"
		}
		p("| %s | %s | %s | %s |\n", c.Name, want, peerCell(rs[i]), peerCell(rs[i+1]))
	}
	return b.String()
}

func peerCell(r PeerResult) string {
	if r.Err != "" {
		return "refused: " + mdCell(r.Err)
	}
	got := "`" + r.Primary.Bottleneck + "`"
	switch {
	case r.Primary.Status == "inconclusive":
		got = "inconclusive"
	case r.Primary.Status == "healthy":
		got = "`none` (healthy)"
	}
	if r.Primary.Rule != "" {
		got += " by `" + r.Primary.Rule + "`"
	}
	if r.Right {
		return got + " ✓"
	}
	return got + " ✗"
}
