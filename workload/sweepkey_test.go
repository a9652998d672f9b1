package workload

import (
	"strings"
	"testing"
	"time"
)

func TestSweepKey(t *testing.T) {
	base := "version: 1\ntarget: {url: http://127.0.0.1:8000, api: completions}\nmodel: {name: m}\nworkloads:\n  - name: w\n    requests: 10\n    arrival: {process: poisson, rate: 5}\n    prompt_tokens: 10\n    output_tokens: 10\n"
	f, err := Parse("ok.yaml", []byte(base+"    sweep: {min_rate: 2, max_rate: 50, precision: 10%, step_duration: 5s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sw := f.Workloads[0].Sweep; sw == nil || sw.MinRate != 2 || sw.MaxRate != 50 || sw.Precision != 0.1 || sw.StepDuration != 5*time.Second {
		t.Errorf("sweep %+v", sw)
	}
	for _, c := range []struct{ body, want string }{
		{"    sweep: {min_rate: -1}\n", `ok.yaml:10:23: invalid sweep.min_rate "-1": must be more than 0`},
		{"    sweep: {min_rate: 10, max_rate: 5}\n", "must be at least min_rate"},
		{"    sweep: {step_requests: 10, step_duration: 5s}\n", "not given with step_duration"},
		{"    sweep: {rate: 5}\n", `unknown key "rate"`},
	} {
		_, err := Parse("ok.yaml", []byte(base+c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
}
