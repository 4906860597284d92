package slackkit

import (
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// Message is one target's message as a renderer makes it: Main is
// posted; Details are thread replies when posting with a bot token (a
// webhook posts Main only).
type Message struct {
	// Target names the target as the reports do ("model m, instance i").
	Target string `json:"target"`
	// Severity is critical, warning, healthy or inconclusive: the colour
	// of Main's bar.
	Severity string               `json:"severity"`
	Main     slack.WebhookMessage `json:"main"`
	// Details are the findings, gaps and members Main has no room for.
	Details []slack.WebhookMessage `json:"details,omitempty"`
}

// Slack's limits on one message (Block Kit's reference): every renderer
// and front end lays its blocks out within them.
const (
	// HeaderMax is the longest header block text.
	HeaderMax = 150
	// TextMax is the longest text of a section or a context element.
	TextMax = 3000
	// BlocksMax is the most blocks one message holds.
	BlocksMax = 50
	// CharsMax is the most characters all block texts of one message hold
	// together (Slack refuses a message past about 12,000).
	CharsMax = 12_000
	// ContextElementsMax is the most elements of a context block.
	ContextElementsMax = 10
	// ButtonValueMax is the longest value of a button.
	ButtonValueMax = 2000
)

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Escape escapes what Slack's mrkdwn reads as markup (&, < and >), so
// that text from data (model names, label values, messages) shows as it
// is and cannot form a link or a mention.
func Escape(s string) string { return escaper.Replace(s) }

// BlockChars counts the characters of the blocks' texts, as Slack does
// against CharsMax.
func BlockChars(blocks ...slack.Block) int {
	n := 0
	count := func(t *slack.TextBlockObject) {
		if t != nil {
			n += utf8.RuneCountInString(t.Text)
		}
	}
	for _, b := range blocks {
		switch b := b.(type) {
		case *slack.HeaderBlock:
			count(b.Text)
		case *slack.SectionBlock:
			count(b.Text)
			for _, f := range b.Fields {
				count(f)
			}
		case *slack.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if t, ok := e.(*slack.TextBlockObject); ok {
					count(t)
				}
			}
		}
	}
	return n
}

// Budget says whether a message of these blocks takes n more blocks
// holding chars more characters within Slack's limits.
func Budget(blocks []slack.Block, n, chars int) bool {
	return len(blocks)+n <= BlocksMax && BlockChars(blocks...)+chars <= CharsMax
}
