package redact

import (
	"net/http"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	var s Secrets
	s.AddURL("http://ops:hunter2-pw@prom:9090/?access_token=qs-secret-1&team=a")
	s.AddURL("admin:p%40ss-word@vllm:8000")
	s.AddURL("https://lone-user-token@host/x")
	s.AddHeader("Bearer hdr-token-2")
	s.AddHeader("team-tenant")
	s.AddBasic("u", "basic-pw-3")
	s.Add("ab") // too short to scrub from free text
	for in, want := range map[string]string{
		"http://ops:hunter2-pw@prom:9090/?access_token=qs-secret-1&team=a": "http://ops:xxxxx@prom:9090/?access_token=xxxxx&team=xxxxx",
		`Get "http://127.0.0.1:1/metrics?token=t&x": connection refused`:   `Get "http://127.0.0.1:1/metrics?token=xxxxx&xxxxx": connection refused`,
		"https://lone-user-token@host/x#access_token=f1&y":                 "https://xxxxx@host/x#access_token=xxxxx&xxxxx",
		"https://host/#section":                                  "https://host/#section",
		"--vllm admin:p@ss-word@vllm:8000 refused":               "--vllm admin:xxxxx@vllm:8000 refused",
		"server said: Authorization: Bearer hdr-token-2":         "server said: Authorization: xxxxx",
		"echo p%40ss-word and hunter2-pw and qs-secret-1":        "echo xxxxx and xxxxx and xxxxx",
		"tenant team-tenant, basic " + basic("u", "basic-pw-3"):  "tenant xxxxx, basic xxxxx",
		"http://prom:9090 has no vLLM metrics between ab and cd": "http://prom:9090 has no vLLM metrics between ab and cd",
		"queue/ttft-dominated: 92% of TTFT, p99 9.45s":           "queue/ttft-dominated: 92% of TTFT, p99 9.45s",
		"": "",
	} {
		if got := s.String(in); got != want {
			t.Errorf("String(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	if got := String("http://u:pw@h/?k=v"); got != "http://u:xxxxx@h/?k=xxxxx" {
		t.Errorf("nil Secrets: %q", got)
	}
}

func basic(u, p string) string {
	r, _ := http.NewRequest("GET", "http://h", nil)
	r.SetBasicAuth(u, p)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

func TestSecretName(t *testing.T) {
	for _, n := range []string{"token", "access_token", "API_KEY", "apikey", "key", "password", "passwd", "Secret", "sig", "X-Amz-Signature", "auth", "Authorization", "code"} {
		if !SecretName(n) {
			t.Errorf("%s should look like a credential", n)
		}
	}
	for _, n := range []string{"match[]", "name", "team", "X-Scope-OrgID"} {
		if SecretName(n) {
			t.Errorf("%s should not look like a credential", n)
		}
	}
}
