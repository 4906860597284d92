package logs

import (
	"bufio"
	"io"
	"regexp"
	"strings"
	"unicode"
)

// Lines as they really arrive: prefixes of any kind, progress bars glued in
// front, colour codes, carriage returns, and records a terminal wrapped at
// its width. The assembler gives whole records: a record whose stats head
// is there but whose fields are cut short is joined with the lines that
// continue it.

// ansi matches colour and cursor escape sequences, and colour codes whose
// escape character a paste lost ("[1;36m(APIServer pid=1)[0;0m"): vLLM
// wrote its process prefix in colour even to files until 2025-11.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\[[0-9]{1,3}(?:;[0-9]{1,3})*m`)

// recordStart matches the start of a new log record, whatever the prefix:
// a level word, a bracketed or ISO timestamp, a process tag, a compose
// service name, journald's month and day, uvicorn's access line.
var recordStart = regexp.MustCompile(`^\s*(?:` +
	`\((?:[A-Za-z_]+ )?pid=\d+[^)]*\)|` + // (APIServer pid=1), (pid=1), (RayWorkerWrapper pid=1, ip=…)
	`(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL|TRACE)\b|` +
	`\[\d{4}-\d\d-\d\d|` + // [2024-09-12 10:01:02 TP0]
	`\d{4}-\d\d-\d\d[T ]\d\d:\d\d|` + // ISO, kubectl --timestamps
	`[A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d|` + // journald
	`[\w.-]+\s+\|\s|` + // docker compose: "vllm-1  | "
	`[\w.-]+\s*\|\s*(?:INFO|WARNING|DEBUG|ERROR)|` +
	`Processed prompts|Traceback|File "|` +
	`\d+%\|` + // tqdm bar
	`)`)

// headTable lists the phrases that make a line a record worth reading, and
// the record each starts.
var headTable = []struct {
	phrase string
	kind   kind
}{
	{"Avg prompt throughput", vllmStats},
	{"Prefill batch", sglPrefill},
	{"Prefil batch", sglPrefill}, // SGLang v0.1.17 spelled it so
	{"Decode batch", sglDecode},
	{"is preempted by", vllmPreempt},
	{"SpecDecoding metrics", specDecode},
	{"Speculative metrics", specDecode},
	{"Decode out of memory", sglRetract},
	{"KV cache pool is full", sglRetract},
	{"Prefix cache hit rate: GPU:", vllmPrefix},
	{"KV Transfer metrics", kvTransfer},
}

// heads are headTable's phrases written without spaces: a wrap may fall
// inside one and lose its space.
var heads = func() []string {
	out := make([]string, len(headTable))
	for i, h := range headTable {
		out[i] = squeeze(h.phrase)
	}
	return out
}()

// lookalike marks a line that looks like an engine stats line, read or not.
var lookalike = regexp.MustCompile(`(?i)avg\s*prompt|avg\s*generation|generation\s*throughput|` +
	`#running-req|#queue-req|prefill\s*batch|decode\s*batch|gpu\s*kv\s*cache\s*usage|token\s*usage:`)

// squeeze lowercases s and drops its whitespace, so that a wrap that lost
// a space still matches.
func squeeze(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if !unicode.IsSpace(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// headOf returns the index in heads of the record head the line holds, or -1.
func headOf(line string) int {
	sq := squeeze(line)
	for i, h := range heads {
		if strings.Contains(sq, h) {
			return i
		}
	}
	return -1
}

// continuation reports whether a line can continue a wrapped record: not
// blank, not the start of a record of its own, no head of its own.
func continuation(line string) bool {
	if strings.TrimSpace(line) == "" || recordStart.MatchString(line) || headOf(line) >= 0 {
		return false
	}
	return true
}

// clean removes what a terminal adds to a line: colour codes and a
// carriage return at its end.
func clean(s string) string {
	if strings.IndexByte(s, 0x1b) >= 0 || strings.Contains(s, "m(") || strings.Contains(s, "[0") {
		s = ansi.ReplaceAllString(s, "")
	}
	return strings.TrimRight(s, "\r")
}

// physical reads a log's lines, a carriage return inside a line (a
// progress bar redrawn) splitting it as a newline would.
type physical struct {
	sc      *bufio.Scanner
	pending []string
	n       int
}

func newPhysical(r io.Reader) *physical {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	return &physical{sc: sc}
}

// next returns the next line; false at the end.
func (p *physical) next() (string, bool) {
	for len(p.pending) == 0 {
		if !p.sc.Scan() {
			return "", false
		}
		p.n++
		line := strings.TrimRight(p.sc.Text(), "\r")
		if strings.IndexByte(line, '\r') >= 0 {
			p.pending = strings.Split(line, "\r")
		} else {
			p.pending = []string{line}
		}
	}
	l := clean(p.pending[0])
	p.pending = p.pending[1:]
	return l, true
}

// peek returns the next line without taking it.
func (p *physical) peek() (string, bool) { return p.peekAt(0) }

// peekAt returns the line i lines ahead without taking it.
func (p *physical) peekAt(i int) (string, bool) {
	var taken []string
	for len(taken) <= i {
		l, ok := p.next()
		if !ok {
			break
		}
		taken = append(taken, l)
	}
	p.pending = append(taken, p.pending...)
	if i < len(taken) {
		return taken[i], true
	}
	return "", false
}

// joinHead joins a line with the lines that continue it when only
// together they hold a stats head (a wrap fell inside "Avg prompt
// throughput" or before it). It returns the joined text and the lengths of
// the lines it joined, having taken them, or the line and nil, having taken
// nothing. A line that starts a record takes the next piece even where that
// holds the head whole (the wrap fell before it, the prefix is the
// record's); any other line only where the head is split between pieces.
func (p *physical) joinHead(line string) (string, []int) {
	text := line
	pieces := []int{len(line)}
	starts := recordStart.MatchString(line)
	for i := 0; i < maxJoin-1; i++ {
		nx, ok := p.peekAt(i)
		if !ok || strings.TrimSpace(nx) == "" || recordStart.MatchString(nx) || !starts && headOf(nx) >= 0 {
			return line, nil
		}
		text += strings.TrimLeft(nx, " \t")
		pieces = append(pieces, len(nx))
		if headOf(text) >= 0 {
			for j := 0; j <= i; j++ {
				p.next()
			}
			return text, pieces
		}
	}
	return line, nil
}

// maxJoin is the most lines one record is joined from: a 450-character
// stats line wrapped at 30 columns.
const maxJoin = 16
