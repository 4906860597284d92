package probe

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzStream feeds arbitrary bytes to the stream reader: it must never
// panic, and what it returns must be sound whatever the server sent.
func FuzzStream(f *testing.F) {
	for _, seed := range []string{
		"data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: {\"choices\":[{\"text\":\" b\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
		": keep-alive\n\nevent: message\ndata: {\"error\":{\"message\":\"boom\"}}\n\n",
		"data: not json\n\n",
		"data: {\"usage\":{\"prompt_tokens\":-3,\"completion_tokens\":1}}\n\n",
		"data: [DONE]",
		"",
		"data:" + strings.Repeat("x", 70000) + "\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		clock := time.Unix(0, 0)
		now := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
		st, err := readStream(bytes.NewReader(b), time.Unix(0, 0), now)
		if st.chunks < 0 || len(st.itls) != max(0, st.chunks-1) || st.ttft < 0 {
			t.Fatalf("chunks %d, %d gaps, ttft %v", st.chunks, len(st.itls), st.ttft)
		}
		if st.prompt < 0 || st.output < 0 {
			t.Fatalf("negative counts kept: %+v", st)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("a multi-line error: %q", err)
		}
	})
}
