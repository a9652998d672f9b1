// Package baselines holds the baselines committed for this repository's own example
// workloads (baselines/<workload>/<hardware>.json), embedded so that `slogate demo` can
// gate against them from anywhere.
package baselines

import "embed"

// FS holds every baseline file under its workload directory.
//
//go:embed all:*
var FS embed.FS
