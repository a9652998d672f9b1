package gate

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/slogate/slogate/workload"
)

// AuditInput is what an audit reads.
type AuditInput struct {
	Config *workload.File
	Store  Store
	// Env is the environment baselines are compared with: a run record's, or this
	// machine's. Hardware is its hardware key; baselines of other hardware are listed
	// but not compared (another GPU is not drift, it is another baseline).
	Env       map[string]string
	Hardware  string
	Reference string // what Env is, for a reader: "record out/chat.json", "this machine"
	Now       time.Time
}

// Audit is the state of the committed baselines of a workload file.
type Audit struct {
	Reference string `json:"reference"`
	Hardware  string `json:"hardware"`
	// MaxAge is gate.max_baseline_age; 0 for no limit.
	MaxAge  time.Duration `json:"max_age_ns"`
	Now     time.Time     `json:"now"`
	Entries []AuditEntry  `json:"entries"`
	// Missing are the workloads of the file without any baseline.
	Missing []string `json:"missing,omitempty"`
	// Compared counts the baselines whose environment was compared with the reference
	// (those of its hardware).
	Compared int `json:"compared"`
	// Verdict: fail when a baseline is too old or drifted on a field whose policy is
	// fail; warn on other drift; incomparable when no baseline could be compared (none on
	// the reference's hardware, or none at all): an audit that compared nothing is not a
	// pass; pass otherwise.
	Verdict Verdict `json:"verdict"`
}

// AuditEntry is one baseline file.
type AuditEntry struct {
	Workload     string            `json:"workload"`
	Hardware     string            `json:"hardware"`
	Path         string            `json:"path"`
	WorkloadHash string            `json:"workload_hash"`
	Created      time.Time         `json:"created"`
	Age          time.Duration     `json:"age_ns"`
	TooOld       bool              `json:"too_old"`
	ToolVersion  string            `json:"tool_version"`
	Environment  map[string]string `json:"environment,omitempty"`
	// Stale: the workload's definition changed since the baseline was made (its hash
	// differs from the file's), so every gate against it is incomparable.
	Stale bool `json:"stale"`
	// Compared is false for a baseline of other hardware than the reference.
	Compared bool          `json:"compared"`
	Drift    []DriftResult `json:"drift,omitempty"`
	Verdict  Verdict       `json:"verdict"`
}

// AuditBaselines lists every baseline of the file's workloads with its versions and
// age, and compares its environment with in.Env. A baseline file that cannot be used is a
// *FileError.
func AuditBaselines(in AuditInput) (*Audit, error) {
	cfg := in.Config
	a := &Audit{Reference: in.Reference, Hardware: in.Hardware, MaxAge: cfg.Gate.MaxBaselineAge, Now: in.Now.UTC()}
	for i := range cfg.Workloads {
		w := &cfg.Workloads[i]
		names, err := baselineFiles(in.Store, w.Name)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			a.Missing = append(a.Missing, w.Name)
			continue
		}
		for _, n := range names {
			hw := strings.TrimSuffix(n, ".json")
			b, shown, err := in.Store.Lookup(w.Name, hw)
			if err != nil {
				return nil, err
			}
			if b == nil {
				continue // removed while we read
			}
			e := AuditEntry{
				Workload: w.Name, Hardware: hw, Path: shown, WorkloadHash: b.WorkloadHash,
				Created: b.Created, Age: in.Now.Sub(b.Created), ToolVersion: b.ToolVersion,
				// An imported baseline's identity is its source's, not the config's: the
				// config cannot make it stale.
				Environment: b.Environment, Stale: b.Source == nil && b.WorkloadHash != workload.Hash(cfg, w),
				Verdict: Pass,
			}
			if a.MaxAge > 0 && e.Age > a.MaxAge {
				e.TooOld = true
				e.Verdict = Fail
			}
			if hw == in.Hardware {
				e.Compared = true
				a.Compared++
				e.Drift = CompareEnv(b.Environment, in.Env, cfg.Gate.Drift)
				for _, d := range e.Drift {
					e.Verdict = Worst(e.Verdict, d.Verdict)
				}
			}
			if e.Stale {
				e.Verdict = Worst(e.Verdict, Warn)
			}
			a.Entries = append(a.Entries, e)
		}
	}
	vs := []Verdict{Pass}
	for _, e := range a.Entries {
		vs = append(vs, e.Verdict)
	}
	if a.Compared == 0 {
		vs = append(vs, Incomparable)
	}
	a.Verdict = Worst(vs...)
	return a, nil
}

// baselineFiles lists the baseline files of one workload, by name.
func baselineFiles(s Store, name string) ([]string, error) {
	if s.FS == nil {
		return nil, nil
	}
	entries, err := fs.ReadDir(s.FS, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(s.Dir, name), err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		// Sweep baselines (<hardware>.sweep.json) sit beside run baselines; they are not
		// hardware of their own.
		if !e.IsDir() && strings.HasSuffix(n, ".json") && !strings.HasSuffix(n, ".sweep.json") && !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}
