package cli

import (
	"fmt"
	"reflect"
	"testing"
)

// The sharded workflow scripts/action-test.sh runs under act (testdata/action) is the
// documented one (examples/workflows) with test plumbing: the same jobs, needs and
// matrix, the same action steps with the same mode, shard, start-at and shards inputs,
// and the same artifact names. Only the test's baseline step is its own.
func TestShardedWorkflowUnderTestIsTheDocumentedOne(t *testing.T) {
	t.Parallel()
	doc := k8sDocs(t, "../examples/workflows/scale-out.yml")[0]
	test := k8sDocs(t, "../testdata/action/scale-out.yml")[0]
	type step struct{ Uses, Mode, Shard, StartAt, Shards, Artifact string }
	shape := func(wf map[string]any, action string) map[string][]any {
		out := map[string][]any{}
		for name, j := range wf["jobs"].(map[string]any) {
			job := j.(map[string]any)
			var steps []step
			for _, s := range job["steps"].([]any) {
				s := s.(map[string]any)
				uses, _ := s["uses"].(string)
				with, _ := s["with"].(map[string]any)
				get := func(k string) string {
					if v, ok := with[k]; ok {
						return fmt.Sprint(v)
					}
					return ""
				}
				switch uses {
				case action:
					if get("mode") == "baseline" {
						continue // the test repository's own baseline
					}
					steps = append(steps, step{Uses: "slogate", Mode: get("mode"), Shard: get("shard"), StartAt: get("start-at"), Shards: get("shards")})
				case "actions/upload-artifact@v4", "actions/download-artifact@v4":
					steps = append(steps, step{Uses: uses, Artifact: get("name") + get("pattern")})
				}
			}
			out[name] = []any{job["needs"], dig(job, "strategy", "matrix"), steps}
		}
		return out
	}
	d, x := shape(doc, "slogate/slogate@v1"), shape(test, "./")
	if !reflect.DeepEqual(d, x) {
		t.Errorf("the tested workflow differs from the documented one:\ndocumented %v\ntested     %v", d, x)
	}
	if len(d["shard"]) == 0 || len(d["gate"][2].([]step)) == 0 {
		t.Errorf("no shard or gate job in %v", d)
	}
}
