package report

import (
	"encoding/json"
	"fmt"
	"github.com/slogate/slogate/internal/fsafe"
	"time"
)

// MetaSchema identifies a report meta file (report-meta.json in the results directory).
const MetaSchema = "slogate.report-meta/v1"

// MetaFile is the meta file's name in the results directory.
const MetaFile = "report-meta.json"

// Meta is what the comment and the HTML report say beyond the gate result and the run
// records: where the run came from (commits, the workflow run), what the baselines are
// (the commit that last changed each), when it was rendered. `slogate ci` writes it
// beside gate.json, so that `slogate report` renders the same bytes from files alone.
type Meta struct {
	Schema    string    `json:"schema"`
	Generated time.Time `json:"generated"`
	// Marker is the sticky comment's hidden marker ("" outside a pull request).
	Marker string `json:"marker,omitempty"`
	// Config is the workload file as the commands in the comment should name it.
	Config string `json:"config,omitempty"`
	// RepoURL is https://github.com/OWNER/REPO; files are linked under it.
	RepoURL string `json:"repo_url,omitempty"`
	// RunURL is the workflow run; ReportURL the HTML report artifact (else the run's
	// artifacts).
	RunURL    string `json:"run_url,omitempty"`
	ReportURL string `json:"report_url,omitempty"`
	// HeadSHA is the pull request's head (the candidate), BaseSHA its base.
	HeadSHA string `json:"head_sha,omitempty"`
	BaseSHA string `json:"base_sha,omitempty"`
	// Baselines say where each baseline file came from, by its path.
	Baselines []BaselineOrigin `json:"baselines,omitempty"`
}

// BaselineOrigin is the commit that last changed a baseline file.
type BaselineOrigin struct {
	Path   string    `json:"path"`
	Commit string    `json:"commit,omitempty"`
	Date   time.Time `json:"date,omitzero"`
	// Shallow: the clone is shallow, so the commit found is the oldest one fetched and the
	// file may be older.
	Shallow bool `json:"shallow,omitempty"`
	// Error says why the commit is unknown (not a git checkout, the file is not
	// committed).
	Error string `json:"error,omitempty"`
}

// Origin is the origin of the baseline at path, nil when unknown.
func (m *Meta) Origin(path string) *BaselineOrigin {
	if m == nil {
		return nil
	}
	for i := range m.Baselines {
		if m.Baselines[i].Path == path {
			return &m.Baselines[i]
		}
	}
	return nil
}

// ReadMeta reads a meta file.
func ReadMeta(path string) (*Meta, error) {
	data, err := fsafe.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if m.Schema != MetaSchema {
		return nil, fmt.Errorf("%s: schema %q, not a report meta file (%q)", path, m.Schema, MetaSchema)
	}
	return &m, nil
}
