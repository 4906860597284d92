package scrape

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// openMetricsToText rewrites an OpenMetrics 1.0 exposition as Prometheus text
// 0.0.4, so the fast text parser reads both. expfmt's own OpenMetrics decoder
// parses each line against the ABNF grammar and needs seconds for a
// thousand-line vLLM scrape.
//
// The differences handled: counter families are named without _total; info
// families' samples end in _info; *_created samples are creation times, not
// data (dropped); # UNIT and # EOF lines; exemplars after " # "; timestamps
// are seconds, not milliseconds. Gauge-histograms and statesets are dropped:
// vLLM exposes neither.
func openMetricsToText(data []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(data))
	types := map[string]string{}
	skip := map[string]bool{}
	lines := bytes.Split(data, []byte("\n"))
	for i, raw := range lines {
		line := string(raw)
		switch {
		case line == "":
			continue
		case line == "# EOF":
			for _, rest := range lines[i+1:] {
				if len(bytes.TrimSpace(rest)) > 0 {
					return nil, fmt.Errorf("line %d: content after # EOF", i+2)
				}
			}
			return out.Bytes(), nil
		case strings.HasPrefix(line, "# "):
			f := strings.SplitN(line, " ", 4)
			if len(f) < 3 {
				return nil, fmt.Errorf("line %d: malformed comment %q", i+1, line)
			}
			kind, name := f[1], f[2]
			switch kind {
			case "UNIT":
				continue
			case "TYPE":
				if len(f) != 4 {
					return nil, fmt.Errorf("line %d: TYPE without a type", i+1)
				}
				t := f[3]
				types[name] = t
				switch t {
				case "counter":
					fmt.Fprintf(&out, "# TYPE %s_total counter\n", name)
				case "info":
					fmt.Fprintf(&out, "# TYPE %s_info gauge\n", name)
				case "unknown":
					fmt.Fprintf(&out, "# TYPE %s untyped\n", name)
				case "gauge", "histogram", "summary":
					fmt.Fprintf(&out, "# TYPE %s %s\n", name, t)
				default:
					skip[name] = true
				}
				continue
			case "HELP":
				help := ""
				if len(f) == 4 {
					help = f[3]
				}
				switch types[name] {
				case "counter":
					name += "_total"
				case "info":
					name += "_info"
				}
				if !skip[name] {
					fmt.Fprintf(&out, "# HELP %s %s\n", name, help)
				}
				continue
			}
			return nil, fmt.Errorf("line %d: unknown comment %q", i+1, kind)
		}
		sample, err := omSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if sample == "" {
			continue
		}
		name := sampleName(sample)
		if strings.HasSuffix(name, "_created") || skip[familyOf(name, types)] {
			continue
		}
		out.WriteString(sample)
		out.WriteByte('\n')
	}
	return nil, fmt.Errorf("no # EOF line: the exposition is cut off")
}

// omSample drops an exemplar and turns a timestamp in seconds into ms.
func omSample(line string) (string, error) {
	end := labelsEnd(line)
	if end < 0 {
		return "", fmt.Errorf("unterminated label set")
	}
	rest := line[end:]
	if i := strings.Index(rest, " # "); i >= 0 {
		rest = rest[:i]
	}
	f := strings.Fields(rest)
	switch len(f) {
	case 1:
		return line[:end] + " " + f[0], nil
	case 2:
		ts, err := strconv.ParseFloat(f[1], 64)
		if err != nil || math.IsNaN(ts) || math.IsInf(ts, 0) {
			return "", fmt.Errorf("bad timestamp %q", f[1])
		}
		return fmt.Sprintf("%s %s %d", line[:end], f[0], int64(math.Round(ts*1000))), nil
	}
	return "", fmt.Errorf("expected a value")
}

// labelsEnd returns the index just past the metric name and label set.
func labelsEnd(line string) int {
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return len(line)
	}
	if line[i] == ' ' {
		return i
	}
	inQuote := false
	for j := i + 1; j < len(line); j++ {
		switch c := line[j]; {
		case c == '\\' && inQuote:
			j++
		case c == '"':
			inQuote = !inQuote
		case c == '}' && !inQuote:
			return j + 1
		}
	}
	return -1
}

func sampleName(s string) string {
	if i := strings.IndexAny(s, "{ "); i >= 0 {
		return s[:i]
	}
	return s
}

// familyOf finds the declared family a sample name belongs to.
func familyOf(name string, types map[string]string) string {
	if _, ok := types[name]; ok {
		return name
	}
	for _, suf := range []string{"_total", "_info", "_bucket", "_count", "_sum", "_gcount", "_gsum"} {
		if b := strings.TrimSuffix(name, suf); b != name {
			if _, ok := types[b]; ok {
				return b
			}
		}
	}
	return name
}
