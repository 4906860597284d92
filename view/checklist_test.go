package view

import (
	"testing"

	"github.com/llmdoctor/llmdoctor/advisor"
)

// Only items whose evidence is absent altogether, and only the engine's,
// are grouped under "need the serving engine's metrics": one whose evidence
// came too thin (a benchmark of eight requests) is shown whole.
func TestChecklistFirstScreenGroupsOnlyAbsentEngineEvidence(t *testing.T) {
	c := &advisor.Checklist{Status: advisor.Unverified, Targets: []advisor.ChecklistTarget{{Items: []advisor.Item{
		{ID: "check/kv-headroom", Status: advisor.CannotCheck, Missing: []string{"resource.kv_usage"}, Absent: true},
		{ID: "check/long-prompt-guard", Status: advisor.CannotCheck, Missing: []string{"cond.prompt_tokens"}, Absent: false},
		{ID: "measurement/early-stop", Status: advisor.CannotCheck, Missing: []string{"cond.output_max_ratio"}, Absent: true},
	}}}}
	shown, engine, _ := ChecklistOf(c).Targets[0].FirstScreen()
	if len(engine) != 1 || engine[0] != "check/kv-headroom" || len(shown) != 2 {
		t.Fatalf("grouped %v, shown %d", engine, len(shown))
	}
}
