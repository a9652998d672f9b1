package gate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/slogate/slogate/internal/fsafe"
	"io/fs"
	"math"
	"path"
	"path/filepath"
	"time"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// History kinds: a line is written when a baseline is refreshed, and on a run of the main
// branch.
const (
	HistoryBaseline = "baseline"
	HistoryMain     = "main"
)

// historySuffix ends a history file's name: <hardware>.history.jsonl beside the baseline.
// It does not end in ".json", so a lister of baselines passes over it.
const historySuffix = ".history.jsonl"

// historyVersions are the environment fields a history line keeps.
var historyVersions = []string{"engine.name", "engine.version", "model.id", "model.revision", "gpu.driver", "gpu.cuda", "tool.version"}

// HistoryEntry is one line of a baseline's history file: one baseline refresh or one run
// of the main branch, with its headline metrics (each gated metric's value, in its unit).
type HistoryEntry struct {
	Date         time.Time          `json:"date"`
	Commit       string             `json:"commit,omitempty"`
	Kind         string             `json:"kind"` // HistoryBaseline | HistoryMain
	WorkloadHash string             `json:"workload_hash"`
	Versions     map[string]string  `json:"versions,omitempty"`
	Metrics      map[string]float64 `json:"metrics"`
}

// HistoryRelPath is where the history of a workload's baseline on a hardware lives under
// the baselines directory, slash-separated.
func HistoryRelPath(workload, hardware string) string {
	return path.Join(workload, hardware+historySuffix)
}

// HistoryPath is the path of a history file as shown to a person.
func (s Store) HistoryPath(workload, hardware string) string {
	return filepath.Join(s.Dir, filepath.FromSlash(HistoryRelPath(workload, hardware)))
}

// History reads the history of workload on hardware, oldest first. A missing file is no
// history (nil, no error); a line that is not a history entry is a *FileError naming the
// file and the line.
func (s Store) History(workload, hardware string) ([]HistoryEntry, error) {
	if s.FS == nil {
		return nil, nil
	}
	shown := s.HistoryPath(workload, hardware)
	data, err := fs.ReadFile(s.FS, HistoryRelPath(workload, hardware))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	var out []HistoryEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e HistoryEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, &FileError{Path: fmt.Sprintf("%s:%d", shown, n), Reason: "not a history entry: " + err.Error()}
		}
		if e.Kind == "" || e.Date.IsZero() {
			return nil, &FileError{Path: fmt.Sprintf("%s:%d", shown, n), Reason: "a history entry needs a kind and a date"}
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, &FileError{Path: shown, Reason: err.Error()}
	}
	return out, nil
}

// AppendHistory adds one line to the history file of the entry's workload and hardware
// under dir and returns its path. The file is rewritten atomically with the new line at
// the end, so a reader never sees half a line.
func AppendHistory(dir, workload, hardware string, e HistoryEntry) (string, error) {
	for _, part := range []struct{ what, v string }{{"workload", workload}, {"hardware", hardware}} {
		if !nameable(part.v) {
			return "", fmt.Errorf("history %s %q cannot name a file", part.what, part.v)
		}
	}
	line, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, filepath.FromSlash(HistoryRelPath(workload, hardware)))
	old, err := fsafe.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	if err := fsafe.WriteFile(p, append(append(old, line...), '\n')); err != nil {
		return "", err
	}
	return p, nil
}

// NewHistoryEntry is the history line of the trials of one workload: the value of each
// of the config's gated metrics (the median over trials, as the gate compares them),
// computed as the gate computes them, and the versions of the first trial's environment.
// A metric without a value (no KV capacity) is left out.
func NewHistoryEntry(cfg *workload.File, recs []*result.Record, kind, commit string, now time.Time) (HistoryEntry, error) {
	if len(recs) == 0 {
		return HistoryEntry{}, errors.New("no run records for a history entry")
	}
	e := HistoryEntry{Date: now.UTC().Truncate(time.Second), Commit: commit, Kind: kind, WorkloadHash: recs[0].WorkloadHash, Metrics: map[string]float64{}}
	for _, k := range historyVersions {
		if v, ok := recs[0].Environment[k]; ok {
			if e.Versions == nil {
				e.Versions = map[string]string{}
			}
			e.Versions[k] = v
		}
	}
	rules := cfg.Gate.Rules
	if len(rules) == 0 {
		rules = workload.DefaultRules()
	}
	runs := make([]*run, len(recs))
	for i, r := range recs {
		runs[i] = runOf(r)
	}
	for _, rule := range rules {
		def, err := lookupMetric(rule.Metric)
		if err != nil {
			return HistoryEntry{}, err
		}
		if def.kind == kindSweep {
			continue
		}
		if def.kind == kindStart {
			// The mean over the distinct starts behind the records, as the gate judges it.
			if sv, _ := startValues(def, runs); len(sv) > 0 {
				e.Metrics[rule.Metric] = mean(sv) * def.scale
			}
			continue
		}
		vs := make([]float64, len(runs))
		for i, r := range runs {
			if def.kind == kindExact {
				v, ok := def.exact(r)
				vs[i] = math.NaN()
				if ok {
					vs[i] = v
				}
				continue
			}
			if def.present != nil && !def.present(r) {
				vs[i] = math.NaN()
				continue
			}
			vs[i] = stats.Value(def.build(r))
		}
		if v := medianOf(vs) * def.scale; !math.IsNaN(v) && !math.IsInf(v, 0) {
			e.Metrics[rule.Metric] = v
		}
	}
	return e, nil
}
