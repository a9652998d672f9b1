package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/slogate/slogate/internal/fsafe"
)

// ManifestSchema and ManifestName: the file `slogate run` writes beside its records,
// listing exactly the records that run wrote. Readers of a results directory judge those
// and pass over older records of the same workloads left by an earlier run.
const (
	ManifestSchema = "slogate.manifest/v1"
	ManifestName   = "slogate-manifest.json"
)

// Manifest lists the records of one run.
type Manifest struct {
	Schema  string          `json:"schema"`
	Start   time.Time       `json:"start"`
	Records []ManifestEntry `json:"records"`
}

// ManifestEntry is one record a run wrote.
type ManifestEntry struct {
	File     string `json:"file"` // base name in the directory
	Workload string `json:"workload"`
	Trial    int    `json:"trial,omitempty"`
}

// WriteManifest writes m as dir's manifest, atomically.
func WriteManifest(dir string, m *Manifest) error {
	m.Schema = ManifestSchema
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return fsafe.WriteFile(filepath.Join(dir, ManifestName), append(data, '\n'))
}

// ReadManifest reads dir's manifest; nil (and no error) when dir has none.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	data, err := fsafe.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil || m.Schema != ManifestSchema {
		return nil, &FormatError{Path: path, Reason: fmt.Sprintf("not a slogate run manifest (expected schema %q)", ManifestSchema)}
	}
	for _, e := range m.Records {
		if e.File == "" || filepath.Base(e.File) != e.File {
			return nil, &FormatError{Path: path, Reason: fmt.Sprintf("record %q is not a file name in the directory", e.File)}
		}
	}
	return &m, nil
}

// ReadRun reads the run records of dir as ReadDir does; where dir holds a manifest, the
// records of the workloads it names are exactly those it lists (one that is missing is
// an error), and stale names the other records of those workloads, left by an earlier
// run, which are not returned. Records of other workloads are returned as they are.
func ReadRun(dir string) (recs []*Record, stale []string, err error) {
	all, files, err := readDir(dir)
	if err != nil {
		return nil, nil, err
	}
	m, err := ReadManifest(dir)
	if err != nil || m == nil {
		return all, nil, err
	}
	listed := map[string]bool{}
	workloads := map[string]bool{}
	for _, e := range m.Records {
		listed[e.File] = true
		workloads[e.Workload] = true
		if _, err := os.Stat(filepath.Join(dir, e.File)); err != nil {
			return nil, nil, &FormatError{Path: filepath.Join(dir, ManifestName), Reason: fmt.Sprintf("lists %s, which cannot be read: %v", e.File, err)}
		}
	}
	for i, r := range all {
		name := files[i]
		if workloads[r.Workload] && !listed[name] {
			stale = append(stale, name)
			continue
		}
		recs = append(recs, r)
	}
	slices.Sort(stale)
	return recs, stale, nil
}
