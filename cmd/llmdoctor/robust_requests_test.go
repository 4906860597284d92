package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reqFile writes n sound requests (TTFT 50–150 ms, 20 ms per token) in the
// given unit, then the extra lines, and returns the file's path.
func reqFile(t *testing.T, name string, n int, scale float64, extra ...string) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		out := 100 + i%200
		ttft := (0.05 + float64(i%100)/1000) * scale
		fmt.Fprintf(&b, `{"request_id":"r%d","prompt_tokens":%d,"output_tokens":%d,"ttft":%g,"e2e":%g,"streaming":true}`+"\n",
			i, 500+i*37%4000, out, ttft, ttft+float64(out-1)*0.02*scale)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	return tempFile(t, name, b.String())
}

func tempFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// requestsRefused: exit 2, nothing on stdout (no verdict), one line on
// stderr holding every want.
func requestsRefused(t *testing.T, args []string, want ...string) {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	ok := code == 2 && out == "" && strings.Count(strings.TrimSpace(errOut), "\n") == 0
	for _, w := range want {
		ok = ok && strings.Contains(errOut, w)
	}
	if !ok {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2, one line with %q", code, out, errOut, want)
	}
}

type sourceView struct {
	Kind    string
	Path    string
	OK      bool
	Notes   []string
	Rows    int
	Skipped map[string]int
}

// readWithNotes runs diagnose on one request file and checks that the text
// report's source line and the JSON source both carry the notes.
func readWithNotes(t *testing.T, flag, path string, skipped map[string]int, want ...string) {
	t.Helper()
	code, out, errOut := runCLI(t, "diagnose", "--color", "never", flag, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mark := "✓"
	if len(skipped) > 0 {
		mark = "!"
	}
	// The source line, unwrapped: its continuation lines are indented more.
	var line string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); line == "" && len(f) >= 2 && len(l) > 2 && l[2] != ' ' && f[1] == flag[2:] {
			line = strings.TrimSpace(l)
		} else if line != "" && strings.HasPrefix(l, "    ") {
			line += " " + strings.TrimSpace(l)
		} else if line != "" {
			break
		}
	}
	if !strings.HasPrefix(line, mark+" "+flag[2:]+" ") {
		t.Fatalf("source line %q, want it marked %s:\n%s", line, mark, out)
	}
	code, out, errOut = runCLI(t, "diagnose", "--format", "json", flag, path)
	var d struct{ Sources []sourceView }
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || len(d.Sources) != 1 {
		t.Fatalf("exit %d, %v: %s", code, err, errOut)
	}
	s := d.Sources[0]
	notes := strings.Join(s.Notes, " | ")
	for _, w := range want {
		if !strings.Contains(line, w) || !strings.Contains(notes, w) {
			t.Errorf("%q missing: text %q, json notes %q", w, line, notes)
		}
	}
	if fmt.Sprint(s.Skipped) != fmt.Sprint(skipped) {
		t.Errorf("json skipped %v, want %v", s.Skipped, skipped)
	}
}

// benchFileOf writes a detailed vllm bench serve result of n requests;
// edit may change each request's ttft and itl text.
func benchFileOf(t *testing.T, n int, edit func(i int, ttft, itl *string)) string {
	t.Helper()
	var ttfts, itls, outs []string
	for i := range n {
		ttft, itl := fmt.Sprintf("%g", 0.05+float64(i)/1000), "[0.02, 0.021, 0.019, 0.02]"
		if edit != nil {
			edit(i, &ttft, &itl)
		}
		ttfts, itls, outs = append(ttfts, ttft), append(itls, itl), append(outs, "5")
	}
	return tempFile(t, "run.json", fmt.Sprintf(`{"completed": %d, "request_rate": 2.0, "median_ttft_ms": NaN, "ttfts": [%s], "itls": [%s], "output_lens": [%s]}`,
		n, strings.Join(ttfts, ","), strings.Join(itls, ","), strings.Join(outs, ",")))
}

func init() {
	robustCases = append(robustCases,
		robustCase{Area: "requests", Input: "--requests rows with a zero or negative TTFT or e2e",
			Want: "those rows are skipped and counted by reason: the source line reads ! requests FILE: N of M rows skipped, with the first bad line, and JSON has rows, skipped and notes; the rest is diagnosed",
			Test: func(t *testing.T) {
				p := reqFile(t, "r.jsonl", 40, 1, `{"ttft": -0.1, "e2e": 2}`, `{"ttft": 0, "e2e": 2}`, `{"ttft": 0.1, "e2e": -3}`)
				readWithNotes(t, "--requests", p, map[string]int{"non_positive": 3}, "3 of 43 rows skipped", "3 zero or negative latency (first line 41: ttft -0.1)")
			}},
		robustCase{Area: "requests", Input: "--requests rows whose e2e is below their TTFT",
			Want: "skipped as e2e < ttft (beyond 1 ms of rounding), counted and named on the source line and in JSON",
			Test: func(t *testing.T) {
				p := reqFile(t, "r.jsonl", 40, 1, `{"ttft": 0.5, "e2e": 0.2}`, `{"ttft": 0.1, "e2e": 0.0995}`)
				readWithNotes(t, "--requests", p, map[string]int{"e2e_below_ttft": 1}, "1 of 42 rows skipped", "1 e2e < ttft (first line 41: e2e 0.2 < ttft 0.5)")
			}},
		robustCase{Area: "requests", Input: "--requests with NaN, Infinity or 1e400 in a field",
			Want: "in ttft or e2e the row is skipped as non-finite; in an optional field (tokens, server-side times, start_time, itl) only that field is dropped, and the source line says how often",
			Test: func(t *testing.T) {
				p := reqFile(t, "r.jsonl", 40, 1, `{"ttft": NaN, "e2e": 2}`, `{"ttft": 0.1, "e2e": 1e400}`,
					`{"ttft": 0.1, "e2e": 0.5, "queue_time": Inf}`, `{"ttft": 0.1, "e2e": 0.5, "itl": [0.1, NaN]}`)
				readWithNotes(t, "--requests", p, map[string]int{"non_finite": 2}, "2 non-finite ttft or e2e (first line 41)",
					"server-side times on 1 (negative or non-finite)", "itl on 1 (a negative, non-finite or non-number gap)")
			}},
		robustCase{Area: "requests", Input: "--requests itl arrays inconsistent with output_tokens or e2e",
			Want: "the itl array is dropped from that row (more gaps than output tokens + 1, or gaps adding up to more than e2e − ttft); the row's TTFT and e2e are kept, and the source line counts the drops",
			Test: func(t *testing.T) {
				p := reqFile(t, "r.jsonl", 40, 1,
					`{"ttft": 0.1, "e2e": 0.5, "output_tokens": 3, "itl": [0.05, 0.05, 0.05, 0.05, 0.05, 0.05]}`,
					`{"ttft": 0.1, "e2e": 0.5, "output_tokens": 9, "itl": [0.3, 0.3]}`,
					`{"ttft": 0.1, "e2e": 0.5, "output_tokens": 9, "itl": [0.1, 0.1]}`)
				readWithNotes(t, "--requests", p, nil, "itl on 1 (more gaps than output tokens + 1)", "itl on 1 (gaps add up to more than e2e − ttft)")
			}},
		robustCase{Area: "requests", Input: "--requests whose ttft and e2e are milliseconds under the seconds names",
			Want: "exit 2, one line: the times look like milliseconds, with the median per-token time that shows it, and the fix (ttft_ms, e2e_ms, itl_ms, or divide by 1000)",
			Test: func(t *testing.T) {
				requestsRefused(t, []string{"diagnose", "--requests", reqFile(t, "r.jsonl", 40, 1000)},
					"look like milliseconds, not seconds", "median of 20 s per token", "ttft_ms")
			}},
		robustCase{Area: "requests", Input: "--requests with only a ttft field, in milliseconds",
			Want: "exit 2, one line: ttft looks like milliseconds (median over 100 s and nine in ten over 10 s); an overloaded server whose per-token times are sane is read as seconds",
			Test: func(t *testing.T) {
				var ms, overload strings.Builder
				for i := range 30 {
					fmt.Fprintf(&ms, `{"ttft": %d}`+"\n", 120+10*i)
					fmt.Fprintf(&overload, `{"ttft": %d, "e2e": %g, "output_tokens": 200}`+"\n", 120+10*i, float64(120+10*i)+199*0.03)
				}
				requestsRefused(t, []string{"diagnose", "--requests", tempFile(t, "r.jsonl", ms.String())}, "ttft looks like milliseconds, not seconds: median 265 s")
				if code, _, errOut := runCLI(t, "diagnose", "--requests", tempFile(t, "o.jsonl", overload.String())); code != 0 {
					t.Fatalf("overload refused: %s", errOut)
				}
			}},
		robustCase{Area: "requests", Input: "--requests ttft_ms and e2e_ms holding seconds",
			Want: "exit 2, one line: they look like seconds, not milliseconds (under 0.5 ms per token, or a first token under 1 ms)",
			Test: func(t *testing.T) {
				p := reqFile(t, "r.jsonl", 40, 1)
				body, _ := os.ReadFile(p)
				s := strings.NewReplacer(`"ttft"`, `"ttft_ms"`, `"e2e"`, `"e2e_ms"`).Replace(string(body))
				requestsRefused(t, []string{"diagnose", "--requests", tempFile(t, "ms.jsonl", s)}, "ttft_ms and e2e_ms look like seconds, not milliseconds")
			}},
		robustCase{Area: "requests", Input: "--bench whose ttfts and itls are milliseconds",
			Want: "exit 2, one line: the times look like milliseconds (median gap between chunks 20 s); vllm bench serve writes seconds",
			Test: func(t *testing.T) {
				p := benchFileOf(t, 30, func(i int, ttft, itl *string) { *ttft, *itl = "50", "[20, 21, 19, 20]" })
				requestsRefused(t, []string{"diagnose", "--bench", p}, "look like milliseconds, not seconds", "vllm bench serve writes ttfts and itls in seconds")
			}},
		robustCase{Area: "requests", Input: "--bench summary statistics (*_ms) holding seconds",
			Want: "exit 2, one line naming the field: a first token in 0.03 ms is implausible",
			Test: func(t *testing.T) {
				p := tempFile(t, "run.json", `{"completed": 100, "median_ttft_ms": 0.031, "median_tpot_ms": 0.012}`)
				requestsRefused(t, []string{"diagnose", "--bench", p}, "median_ttft_ms looks like seconds, not milliseconds")
			}},
		robustCase{Area: "requests", Input: "--requests given a JSON array",
			Want: "exit 2, one line: a JSON array; request files are JSONL: convert with jq -c '.[]', then give it to --requests",
			Test: func(t *testing.T) {
				p := tempFile(t, "r.json", `[{"ttft": 0.1, "e2e": 0.5}, {"ttft": 0.2, "e2e": 0.9}]`)
				requestsRefused(t, []string{"diagnose", "--requests", p}, "is a JSON array; request files are JSONL", "jq -c '.[]'")
			}},
		robustCase{Area: "requests", Input: "--requests given a vllm bench serve result",
			Want: "exit 2, one line: this is vllm bench serve result JSON: use --bench (indented, single-line or appended)",
			Test: func(t *testing.T) {
				requestsRefused(t, []string{"diagnose", "--requests", filepath.Join("..", "..", "collectors", "requests", "testdata", "bench-detailed.json")}, "is vllm bench serve result JSON: use --bench")
				requestsRefused(t, []string{"diagnose", "--requests", filepath.Join("..", "..", "collectors", "requests", "testdata", "bench-appended.jsonl")}, "is vllm bench serve result JSON: use --bench")
			}},
		robustCase{Area: "requests", Input: "--bench given per-request JSONL or CSV",
			Want: "exit 2, one line: this is per-request JSONL (or CSV): use --requests",
			Test: func(t *testing.T) {
				requestsRefused(t, []string{"diagnose", "--bench", reqFile(t, "r.jsonl", 5, 1)}, "is per-request JSONL, not a vllm bench serve result: use --requests")
				requestsRefused(t, []string{"diagnose", "--bench", tempFile(t, "r.csv", "request_id,ttft,e2e\nr1,0.1,0.5\n")}, "is per-request CSV, not a vllm bench serve result: use --requests")
				requestsRefused(t, []string{"diagnose", "--bench", tempFile(t, "a.json", `[{"ttft": 0.1}]`)}, "is a JSON array of requests", "use --requests")
			}},
		robustCase{Area: "requests", Input: "--requests with more than half of the rows bad",
			Want: "exit 2, one line with the counts by reason and the first bad line of each; no report",
			Test: func(t *testing.T) {
				var bad []string
				for i := range 30 {
					bad = append(bad, map[bool]string{true: `{"ttft": 2, "e2e": 1}`, false: `{"ttft": -1}`}[i%3 > 0])
				}
				requestsRefused(t, []string{"diagnose", "--requests", reqFile(t, "r.jsonl", 20, 1, bad...)},
					"30 of 50 rows are invalid", "10 zero or negative latency (first line 21: ttft -1)", "20 e2e < ttft (first line 22: e2e 1 < ttft 2)")
			}},
		robustCase{Area: "requests", Input: "--requests whose rows are all invalid, beside a metrics source",
			Want: "exit 2, one line: none of the rows is a valid request; never a verdict, not even from the metrics",
			Test: func(t *testing.T) {
				p := tempFile(t, "r.jsonl", `{"ttft": -1}`+"\n"+`{"e2e": 3}`+"\n")
				requestsRefused(t, append([]string{"diagnose", "--requests", p}, example("queueing")...), "none of the 2 rows is a valid request")
				requestsRefused(t, []string{"checklist", "--requests", p}, "none of the 2 rows is a valid request")
			}},
		robustCase{Area: "requests", Input: "--bench written by Python with NaN or Infinity",
			Want: "read: a non-finite per-request entry skips its request (counted on the source line), a non-finite summary value is a gap",
			Test: func(t *testing.T) {
				p := benchFileOf(t, 30, func(i int, ttft, itl *string) {
					if i == 4 {
						*ttft = "NaN"
					}
					if i == 5 {
						*itl = "[0.02, Infinity]"
					}
				})
				readWithNotes(t, "--bench", p, map[string]int{"non_finite": 1}, "1 of 30 rows skipped: 1 non-finite ttft or e2e (first index 4)", "itl on 1")
			}},
		robustCase{Area: "requests", Input: "--bench per-request arrays of different lengths",
			Want: "exit 2, one line: ttfts has N entries but output_lens M, the arrays do not line up",
			Test: func(t *testing.T) {
				p := tempFile(t, "run.json", `{"completed": 3, "ttfts": [0.1, 0.2, 0.3], "output_lens": [10, 12]}`)
				requestsRefused(t, []string{"diagnose", "--bench", p}, "ttfts has 3 entries but output_lens has 2")
			}},
	)
}

func init() {
	robustCases = append(robustCases, robustCase{Area: "requests", Input: "--requests with one line of more than 64 MiB (millions of ITL values)",
		Want: "exit 2, one line naming the line and the limit; memory stays bounded",
		Test: func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "huge.jsonl")
			f, _ := os.Create(p)
			if _, err := f.WriteString(`{"ttft": 0.2, "e2e": 3, "output_tokens": 9, "itl": [`); err != nil {
				t.Fatal(err)
			}
			chunk := strings.Repeat("0.01,", 1<<20)
			for i := 0; i < 14; i++ { // 70 MiB
				if _, err := f.WriteString(chunk); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.WriteString("0.01]}\n"); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			oneLine2(t, "line 1 is longer than 64 MiB", "diagnose", "--requests", p)
		}})
}

func init() {
	robustCases = append(robustCases, robustCase{Area: "requests", Input: "--requests of long non-streaming requests (ttft = e2e, two minutes, thousands of tokens)",
		Want: "read as seconds: e2e ÷ output tokens is a sane time per token, whatever TTFT looks like",
		Test: func(t *testing.T) {
			var b strings.Builder
			for i := 0; i < 40; i++ {
				e2e := 110 + float64(i)
				fmt.Fprintf(&b, `{"request_id":"r%d","prompt_tokens":800,"output_tokens":%d,"ttft":%g,"e2e":%g,"streaming":false}`+"\n", i, 3000+50*i, e2e, e2e)
			}
			p := filepath.Join(t.TempDir(), "nonstream.jsonl")
			if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := runCLI(t, "diagnose", "--requests", p, "--format", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
		}})
}
