package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"

	"github.com/llmdoctor/llmdoctor/advisor"
	"github.com/llmdoctor/llmdoctor/probe"
	"github.com/llmdoctor/llmdoctor/view"
)

func init() { Register(junitRenderer{}) }

// junitRenderer writes a checklist as JUnit XML, which CI systems show as tests.
type junitRenderer struct{}

func (junitRenderer) Name() string { return "junit" }
func (junitRenderer) Describe() string {
	return "JUnit XML, so CI shows each item as a test (checklist only)"
}
func (junitRenderer) Renders(doc Document) bool { return doc == ChecklistDoc }
func (junitRenderer) Diagnosis(io.Writer, *advisor.Diagnosis, Options) error {
	return &UnsupportedError{Renderer: "junit", Document: DiagnosisDoc}
}
func (junitRenderer) Probe(io.Writer, *probe.Result, Options) error {
	return &UnsupportedError{"junit", ProbeDoc}
}

func (junitRenderer) Checklist(w io.Writer, c *advisor.Checklist, _ Options) error {
	return ChecklistJUnit(w, c)
}

// JUnit structure (JUnit 4 XML as CI systems read it).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// ChecklistJUnit writes JUnit XML: a failed item is a failure, an item that
// cannot be checked is skipped (a failure under --strict), an advisory
// failure passes with its message in system-out.
func ChecklistJUnit(w io.Writer, c *advisor.Checklist) error {
	out := junitSuites{Name: "llmdoctor checklist"}
	for _, t := range view.ChecklistOf(c).Targets {
		s := junitSuite{Name: "llmdoctor checklist: " + t.Name, Time: "0"}
		for _, it := range t.Items {
			tc := junitCase{Name: it.ID + ": " + it.Title, Classname: "llmdoctor.checklist", Time: "0"}
			body := it.Message
			if len(it.Evidence) > 0 {
				keys := make([]string, 0, len(it.Evidence))
				for k := range it.Evidence {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					body += fmt.Sprintf("\n%s = %s", k, view.Value(k, it.Evidence[k]))
				}
			}
			switch it.Outcome {
			case view.ItemFails:
				tc.Failure = &junitMessage{Message: it.Message, Type: it.Status, Body: body + howText(it.Item)}
				s.Failures++
			case view.ItemUnchecked:
				tc.Skipped = &junitMessage{Message: "cannot check: " + it.Message + howText(it.Item)}
				s.Skipped++
			default:
				tc.SystemOut = it.Message
			}
			s.Cases = append(s.Cases, tc)
			s.Tests++
		}
		out.Suites = append(out.Suites, s)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func howText(it advisor.Item) string {
	if it.How == "" {
		return ""
	}
	return " (how: " + it.How + ")"
}
