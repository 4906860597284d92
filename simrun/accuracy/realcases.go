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

// treeTestdata is diagnosis/testdata/NAME of the source tree the working
// directory is in, found from it up to the module's root: the real cases
// (lines pasted in public threads) and the independent simulator's windows,
// each with a README that says the format.
func treeTestdata(name string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "diagnosis", "testdata", name), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("diagnosis/testdata/%s is read from the source tree: run from inside it", name)
		}
		dir = up
	}
}

// RealCase is one case of the corpus as its YAML file says it.
type RealCase struct {
	Name      string   `yaml:"-"`
	File      string   `yaml:"-"`
	Source    string   `yaml:"source"`
	Posted    string   `yaml:"posted"`
	Engine    string   `yaml:"engine"`
	Version   string   `yaml:"version"`
	Form      string   `yaml:"form"`
	Taken     string   `yaml:"taken"`
	Verdict   string   `yaml:"verdict"`
	Accept    []string `yaml:"accept"`
	Confirmed string   `yaml:"confirmed"`
	Reading   string   `yaml:"reading"`
}

// Outcomes of a real case, as the accuracy table counts them.
const (
	realRight     = "right"
	realTentative = "right, tentative"
	realUnsure    = "inconclusive"
	realWrong     = "wrong"
	realRefused   = "refused"
)

// RealResult is a real case diagnosed.
type RealResult struct {
	Case    RealCase
	Primary advisor.Primary
	// Severity is the verdict finding's; Err the reading's error (refused).
	Severity string
	Err      string
	Outcome  string
	// Next are the next steps the report gives.
	Next []advisor.Step
}

// LoadRealCases reads every case of dir, checking each names what the
// table needs.
func LoadRealCases(dir string) ([]RealCase, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []RealCase
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var c RealCase
		if err := yaml.UnmarshalWithOptions(data, &c, yaml.Strict()); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		c.Name = strings.TrimSuffix(filepath.Base(p), ".yaml")
		for _, ext := range []string{".log", ".prom"} {
			if _, err := os.Stat(filepath.Join(dir, c.Name+ext)); err == nil {
				c.File = filepath.Join(dir, c.Name+ext)
			}
		}
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (c RealCase) check() error {
	verdicts := append([]string{"inconclusive"}, rules.Bottlenecks...)
	switch {
	case c.File == "":
		return fmt.Errorf("no %s.log or %s.prom beside it", c.Name, c.Name)
	case !strings.HasPrefix(c.Source, "https://"):
		return fmt.Errorf("source %q is no address", c.Source)
	case c.Engine != "vllm" && c.Engine != "sglang":
		return fmt.Errorf("engine %q: want vllm or sglang", c.Engine)
	case c.Form != "log" && c.Form != "metrics":
		return fmt.Errorf("form %q: want log or metrics", c.Form)
	case c.Form == "log" && !strings.HasSuffix(c.File, ".log"), c.Form == "metrics" && !strings.HasSuffix(c.File, ".prom"):
		return fmt.Errorf("form %s, file %s", c.Form, c.File)
	case !slices.Contains(verdicts, c.Verdict):
		return fmt.Errorf("verdict %q is not in the vocabulary", c.Verdict)
	case c.Confirmed != "thread" && c.Confirmed != "numbers":
		return fmt.Errorf("confirmed %q: want thread or numbers", c.Confirmed)
	case strings.TrimSpace(c.Taken) == "" || strings.TrimSpace(c.Reading) == "":
		return fmt.Errorf("taken and reading must say what was taken and what the numbers show")
	}
	for _, a := range c.Accept {
		if !slices.Contains(verdicts, a) {
			return fmt.Errorf("accept %q is not in the vocabulary", a)
		}
	}
	if _, err := time.Parse("2006-01-02", c.Posted); err != nil {
		return fmt.Errorf("posted %q: want YYYY-MM-DD", c.Posted)
	}
	return nil
}

// TreeRealCases reads the real cases of the source tree the working
// directory is in.
func TreeRealCases() ([]RealCase, error) {
	dir, err := treeTestdata("realcases")
	if err != nil {
		return nil, err
	}
	return LoadRealCases(dir)
}

// RunRealCases diagnoses every case as diagnose --log or --snapshot does,
// the log's year taken from the post.
func RunRealCases(set *rules.Set, cfg *rules.Config, cases []RealCase) []RealResult {
	out := make([]RealResult, 0, len(cases))
	for _, c := range cases {
		posted, _ := time.Parse("2006-01-02", c.Posted)
		var src diagnosis.Sources
		if c.Form == "log" {
			src.Log = &diagnosis.LogSource{Path: c.File, Year: posted.Year()}
		} else {
			src.Snapshots = []string{c.File}
		}
		r := RealResult{Case: c}
		d, err := diagnosis.Run(context.Background(), src, set, cfg, nil)
		switch {
		case err != nil:
			r.Err, r.Outcome = oneLineErr(err), realRefused
		default:
			t := d.Targets[0]
			r.Primary, r.Next = t.Primary, t.Next
			r.Severity = findingSeverityOf(t, t.Primary.Rule)
			r.Outcome = c.judge(t.Primary)
		}
		out = append(out, r)
	}
	return out
}

func oneLineErr(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func findingSeverityOf(t advisor.TargetReport, rule string) string {
	for _, f := range t.Findings {
		if f.Rule == rule {
			return f.Severity
		}
	}
	return ""
}

// judge sorts a verdict: right when it is the case's verdict or one it
// accepts (tentative counts as right, and is told apart), inconclusive
// when it names nothing (right where the case says the lines do not settle
// it), wrong otherwise.
func (c RealCase) judge(p advisor.Primary) string {
	got := p.Bottleneck
	if p.Status == "inconclusive" {
		got = "inconclusive"
	}
	ok := got == c.Verdict || slices.Contains(c.Accept, got)
	switch {
	case ok && p.Status == "tentative":
		return realTentative
	case ok:
		return realRight
	case got == "inconclusive":
		return realUnsure
	}
	return realWrong
}

// RealCasesSection renders the "Real cases" part of docs/accuracy.md.
func RealCasesSection(rs []RealResult) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	count := map[string]int{}
	confirmed := 0
	for _, r := range rs {
		count[r.Outcome]++
		if r.Case.Confirmed == "thread" {
			confirmed++
		}
	}
	p("## Real cases\n\n")
	p("%d cases of machine-written lines pasted in public threads (vLLM, SGLang and forks of them:\n", len(rs))
	p("stats logs of every vintage, scheduler lines, warnings, `/metrics` dumps), kept exactly as posted in\n")
	p("`diagnosis/testdata/realcases` with the thread, the verdict a serving engineer reads from the lines\n")
	p("and the other verdicts that would also be right. %d are confirmed by the thread (a maintainer's\n", confirmed)
	p("diagnosis or a fix that worked); the rest by the numbers alone. None of them was made by us.\n\n")
	right := count[realRight] + count[realTentative]
	p("**%d of %d right (%.0f%%)**: %d right, %d right but tentative, %d inconclusive, %d wrong, %d refused.\n\n",
		right, len(rs), 100*float64(right)/float64(max(1, len(rs))), count[realRight], count[realTentative],
		count[realUnsure], count[realWrong], count[realRefused])
	p("| case | engine | form | the lines support | llmdoctor says | outcome |\n|---|---|---|---|---|---|\n")
	for _, r := range rs {
		want := "`" + r.Case.Verdict + "`"
		if len(r.Case.Accept) > 0 {
			want += " (or " + codeList(r.Case.Accept) + ")"
		}
		got := "—"
		switch {
		case r.Err != "":
			got = "refused: " + mdCell(r.Err)
		case r.Primary.Status == "inconclusive":
			got = "inconclusive"
		default:
			got = "`" + r.Primary.Bottleneck + "`"
			if r.Primary.Status == "tentative" {
				got += " (tentative)"
			}
			if r.Primary.Rule != "" {
				got += " by `" + r.Primary.Rule + "`"
			}
		}
		p("| [%s](%s) | %s | %s | %s | %s | %s |\n", r.Case.Name, r.Case.Source, r.Case.Engine, r.Case.Form, want, got, r.Outcome)
	}
	return b.String()
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	if len(s) > 120 {
		s = s[:117] + "…"
	}
	return s
}
