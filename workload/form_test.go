package workload

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFormChangesNamesTheKeys: two definitions of a workload that hash differently are
// told apart key by key, with the old and new values, durations as durations; the same
// definition restyled shows no change; a long list of numbers is stored as its count
// and SHA-256, and a change inside it still shows.
func TestFormChangesNamesTheKeys(t *testing.T) {
	a, b := loadHashBase(t, hashBase), loadHashBase(t, hashBaseRestyled)
	for i := range a.Workloads {
		ch, err := FormChanges(Form(a, &a.Workloads[i]), Form(b, &b.Workloads[i]))
		if err != nil || len(ch) != 0 {
			t.Errorf("workload %s restyled: changes %q (%v), want none", a.Workloads[i].Name, ch, err)
		}
	}

	edited := strings.NewReplacer("p50: 100, p95: 300", "p50: 110, p95: 300", "slo: {ttft: {p95: 500ms}", "slo: {ttft: {p95: 400ms}", "seed: 7", "seed: 8").Replace(hashBase)
	c := loadHashBase(t, edited)
	ch, err := FormChanges(Form(a, &a.Workloads[0]), Form(c, &c.Workloads[0]))
	// Classes inherit the workload's prompt lengths and SLO: each shows the change.
	want := []string{
		"classes[a].prompt_tokens.p50: 100 → 110", "classes[a].slo.targets[ttft p95].limit: 500ms → 400ms",
		"classes[b].prompt_tokens.p50: 100 → 110",
		"prompt_tokens.p50: 100 → 110", "seed: 7 → 8", "slo.targets[ttft p95].limit: 500ms → 400ms",
	}
	if err != nil || !cmp.Equal(ch, want) {
		t.Errorf("changes %q (%v), want %q", ch, err, want)
	}

	// An empirical distribution of 40 values is kept as its count and hash.
	vals := make([]string, 40)
	for i := range vals {
		vals[i] = fmt.Sprint(10 + i)
	}
	long := strings.Replace(hashBase, "values: [10, 20, 30]", "values: ["+strings.Join(vals, ", ")+"]", 1)
	vals[39] = "99"
	longer := strings.Replace(hashBase, "values: [10, 20, 30]", "values: ["+strings.Join(vals, ", ")+"]", 1)
	l1, l2 := loadHashBase(t, long), loadHashBase(t, longer)
	f1, f2 := Form(l1, &l1.Workloads[0]), Form(l2, &l2.Workloads[0])
	if strings.Contains(string(f1), "10,11,12") || !strings.Contains(string(f1), `"40 values, sha256:`) {
		t.Errorf("a list of 40 lengths is stored as it is: %s", f1)
	}
	ch, err = FormChanges(f1, f2)
	if err != nil || len(ch) != 2 || !strings.HasPrefix(ch[1], `output_tokens.values: "40 values, sha256:`) {
		t.Errorf("changes %q (%v), want the lengths named", ch, err)
	}
	if _, err := FormChanges(json.RawMessage(`{`), f1); err == nil {
		t.Error("a broken form gave no error")
	}
}
