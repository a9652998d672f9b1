package gate

import (
	"errors"
	"strings"
	"testing"

	"github.com/slogate/slogate/workload"
)

// Both gates read the rules the same way: an unknown direction is bad input in the A/B
// gate too (it was silently taken as the metric's default there), and an unknown metric
// in either.
func TestRuleDefsRefuseBadRules(t *testing.T) {
	for _, c := range []struct {
		rule workload.Rule
		want string
	}{
		{workload.Rule{Metric: "itl_p99", Direction: "sideways"}, "gate.rules.itl_p99"},
		{workload.Rule{Metric: "no_such_metric"}, "gate.rules"},
	} {
		cfg := &workload.File{Path: "slogate.yaml", Gate: workload.GateConfig{Rules: []workload.Rule{c.rule}}}
		for name, eval := range map[string]func() error{
			"Evaluate":   func() error { _, err := Evaluate(Input{Config: cfg}); return err },
			"EvaluateAB": func() error { _, err := EvaluateAB(cfg, nil, nil); return err },
		} {
			err := eval()
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s with rule %+v: %v, want an input error naming %q", name, c.rule, err, c.want)
			}
		}
	}
}
