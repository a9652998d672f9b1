// Package schemas ships the JSON Schemas (draft 2020-12) of the files slogate writes:
// the run record (slogate.run/v1), the baseline (slogate.baseline/v1), the gate result
// (slogate.gate/v1) and the sweep record (slogate.sweep/v1). docs/record.md describes
// every field; the tests validate every golden record and baseline of the repository,
// and files the tool produces, against them, and check that each schema lists every
// field of the Go type it describes.
package schemas

import "embed"

// FS holds the schema files.
//
//go:embed *.v1.json
var FS embed.FS

// Base is the URI the schemas' $id are relative to.
const Base = "https://github.com/slogate/slogate/schemas/"

// Files maps each file schema identifier (the "schema" field of a file) to its JSON
// Schema in FS. A non-additive change to a format bumps its version: a new identifier
// and a new file beside the old one, which readers that accept both keep.
var Files = map[string]string{
	"slogate.run/v1":      "run.v1.json",
	"slogate.baseline/v1": "baseline.v1.json",
	"slogate.gate/v1":     "gate.v1.json",
	"slogate.sweep/v1":    "sweep.v1.json",
}
