package logs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestReadErrorsKeepTheirType(t *testing.T) {
	for _, in := range []string{
		"INFO 11-30 14:00:00 [api_server.py:1] Started server\n",
		"INFO 06-16 21:24:15 metrics.py:341] Avg prompt throughput: 2706.1 tokens/s, Avg generation throughput: 13395.4 tokens/s, Running: 34 reqs, Swa\n",
	} {
		_, err := Read(strings.NewReader(in), "", 2025, "x.log")
		if !errors.Is(err, ErrNoStats) {
			t.Errorf("Read(%q): got %v, want an error wrapping ErrNoStats", in, err)
		}
	}

	vllm := "INFO 06-16 21:24:%02d metrics.py:341] Avg prompt throughput: 2706.1 tokens/s, Avg generation throughput: 13395.4 tokens/s, Running: 34 reqs, Swapped: 0 reqs, Pending: 9 reqs, GPU KV cache usage: 99.2%%, CPU KV cache usage: 0.0%%.\n"
	sgl := "[2025-06-16 21:24:%02d TP0] Decode batch, #running-req: 42, #token: 150112, token usage: 0.36, cuda graph: True, gen throughput (token/s): 3307.90, #queue-req: 6, \n"
	var b strings.Builder
	for s := 10; s < 13; s++ {
		b.WriteString(fmt.Sprintf(vllm, s) + fmt.Sprintf(sgl, s))
	}
	_, err := Read(strings.NewReader(b.String()), "", 2025, "both.log")
	var me *MixedEnginesError
	if !errors.As(err, &me) || me.VLLM != 3 || me.SGLang != 3 || me.From != "both.log" {
		t.Fatalf("got %#v, want a *MixedEnginesError of 3 and 3 lines", err)
	}
	if strings.Contains(err.Error(), "--") {
		t.Errorf("the library names a command-line flag: %q", err)
	}
}
