package probe

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
)

// words are common English words that most tokenizers keep whole, and that
// a word-splitting tokenizer (a simulator's) counts one each.
var words = strings.Fields(`time year people way day man thing woman life child world school state family
student group country problem hand part place case week company system program question work government
number night point home water room mother area money story fact month lot right study book eye job word
business issue side kind head house service friend father power hour game line end member law car city
community name president team minute idea kid body information back parent face others level office door
health person art war history party result change morning reason research girl guy moment air teacher
force education foot boy age policy process music market sense nation plan college interest death
experience effect use class control care field development role effort rate heart drug show leader light
voice wife police mind price report decision son view relationship town road arm difference value
building action model season society tax director position player record paper space ground form event`)

// prompts builds prompts of a planned length. Each starts with text no
// other request of this or an earlier probe has, so a prefix cache cannot
// serve any of it, unless shared asks for one common start per length.
type prompts struct {
	rng *rand.Rand
	run string
	n   int
	// Tokens ≈ Fixed + PerWord × words, measured on the server.
	Fixed, PerWord float64
	shared         bool
}

func newPrompts(seed int64, shared bool) *prompts {
	rng := rand.New(rand.NewSource(seed))
	return &prompts{rng: rng, run: fmt.Sprintf("%08x", rng.Uint32()), PerWord: 1, shared: shared}
}

// words gives the number of filler words for a prompt of tokens tokens.
func (p *prompts) words(tokens int) int {
	w := (float64(tokens) - p.Fixed) / p.PerWord
	return max(1, int(math.Round(w)))
}

// make returns a prompt of about tokens tokens, and the words it holds.
func (p *prompts) make(tokens int) (string, int) {
	n := p.words(tokens)
	p.n++
	var b strings.Builder
	b.Grow(n * 8)
	// The distinct part: the run and the request's number, then words
	// drawn at random. With shared, the start is the same for a length and
	// the request's number ends the prompt instead.
	head := fmt.Sprintf("Request %d of probe %s.", p.n, p.run)
	rng := p.rng
	if p.shared {
		head = fmt.Sprintf("Shared start %d of probe %s.", tokens, p.run)
		rng = rand.New(rand.NewSource(int64(tokens)))
	}
	b.WriteString(head)
	used := 7 // the head's own words and marks, counted as the filler is
	for i := used; i < n; i++ {
		b.WriteByte(' ')
		b.WriteString(words[rng.Intn(len(words))])
	}
	if p.shared {
		fmt.Fprintf(&b, " end %d", p.n)
	}
	return b.String(), max(n, used)
}

// calibrate fits tokens = Fixed + PerWord × words from measured pairs
// (least squares); one pair sets PerWord alone.
func (p *prompts) calibrate(pairs [][2]float64) {
	var pts [][2]float64
	for _, q := range pairs {
		if q[0] > 0 && q[1] > 0 {
			pts = append(pts, q)
		}
	}
	switch {
	case len(pts) == 0:
		return
	case len(pts) == 1:
		p.Fixed, p.PerWord = 0, pts[0][1]/pts[0][0]
		return
	}
	slope, icpt, ok := lineFit(pts)
	if ok && slope > 0.2 && slope < 10 {
		p.Fixed, p.PerWord = math.Max(0, icpt), slope
	}
}

// lineFit is ordinary least squares of y on x.
func lineFit(pts [][2]float64) (slope, intercept float64, ok bool) {
	var n, sx, sy, sxx, sxy float64
	for _, q := range pts {
		n++
		sx += q[0]
		sy += q[1]
		sxx += q[0] * q[0]
		sxy += q[0] * q[1]
	}
	d := n*sxx - sx*sx
	if n < 2 || d == 0 {
		return 0, 0, false
	}
	slope = (n*sxy - sx*sy) / d
	return slope, (sy - slope*sx) / n, true
}
