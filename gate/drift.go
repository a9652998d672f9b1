package gate

import (
	"maps"
	"slices"

	"github.com/slogate/slogate/workload"
)

// Drift field statuses.
const (
	DriftSame    = "same"
	DriftChanged = "changed"
	// DriftUnknown: the field is known on one side only. That is not drift (a baseline
	// recorded where the CUDA version was unreadable has not changed CUDA), but a reader
	// should see that it could not be checked.
	DriftUnknown = "unknown"
)

// Drift policies (gate.drift).
const (
	PolicyExpected = "expected" // the change under test: shown, fine
	PolicyWarn     = "warn"
	PolicyFail     = "fail" // fails the gate
	PolicyIgnore   = "ignore"
)

// DefaultDriftPolicy is the policy of a field gate.drift does not list: a change nobody
// declared is worth a look, not a failure.
const DefaultDriftPolicy = PolicyWarn

// DriftResult is one environment field compared between a baseline and a run.
type DriftResult struct {
	Field     string  `json:"field"`
	Baseline  string  `json:"baseline,omitempty"`
	Candidate string  `json:"candidate,omitempty"`
	Status    string  `json:"status"` // same | changed | unknown
	Policy    string  `json:"policy"` // expected | warn | fail | ignore
	Verdict   Verdict `json:"verdict"`
}

// Drifted reports whether the field changed in a way the policy does not accept
// silently: changed, and neither expected nor ignored.
func (d DriftResult) Drifted() bool {
	return d.Status == DriftChanged && (d.Policy == PolicyWarn || d.Policy == PolicyFail)
}

// CompareEnv compares two flat environments field by field, over every field either side
// has, in field order. A changed field's verdict follows its policy (warn, fail; pass
// for expected and ignore); an unchanged or unknown field passes.
func CompareEnv(base, cand map[string]string, policies []workload.DriftPolicy) []DriftResult {
	policy := map[string]string{}
	for _, p := range policies {
		policy[p.Field] = p.Policy
	}
	fields := slices.Sorted(maps.Keys(base))
	for k := range cand {
		if _, dup := base[k]; !dup {
			fields = append(fields, k)
		}
	}
	slices.Sort(fields)
	out := make([]DriftResult, 0, len(fields))
	for _, f := range fields {
		// An empty value is as unknown as a missing key.
		b, c := base[f], cand[f]
		inB, inC := b != "", c != ""
		d := DriftResult{Field: f, Baseline: b, Candidate: c, Policy: policy[f], Verdict: Pass}
		if d.Policy == "" {
			d.Policy = DefaultDriftPolicy
		}
		switch {
		case !inB || !inC:
			d.Status = DriftUnknown
		case b == c:
			d.Status = DriftSame
		default:
			d.Status = DriftChanged
			switch d.Policy {
			case PolicyWarn:
				d.Verdict = Warn
			case PolicyFail:
				d.Verdict = Fail
			}
		}
		out = append(out, d)
	}
	return out
}
