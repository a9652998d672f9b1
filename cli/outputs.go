package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/slogate/slogate/internal/fsafe"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// Every command that measures checks, before it sends anything, that it can write what
// it will write: its output directory takes a file (created if needed) and each file it
// will write there is absent or a regular file (fsafe: never a link, a pipe or a
// device). GPU time is not spent on a run whose records have nowhere to go.

// checkOutputs checks dir and the files paths (each in dir or below it) and reports the
// first that cannot be written: exit 2, nothing sent. ExitOK when all can.
func (a *app) checkOutputs(dir string, paths ...string) int {
	if err := fsafe.ProbeDir(dir); err != nil {
		a.errorf("the output directory %s cannot be written (%v): nothing was sent or written; give a writable directory with -o", dir, err)
		return ExitBadInput
	}
	for _, p := range paths {
		if sub := filepath.Dir(p); sub != filepath.Clean(dir) {
			// A directory slogate makes for its own files (a sweep's steps).
			if err := fsafe.CheckOwnDir(sub); err != nil {
				a.errorf("%v: nothing was sent or written", err)
				return ExitBadInput
			}
		}
		if err := fsafe.CheckPath(p); err != nil {
			a.errorf("%v: nothing was sent or written", err)
			return ExitBadInput
		}
	}
	return ExitOK
}

// checkOutputFile checks, before a command that measures nothing reads its inputs, that
// it can write path (-o, --json, --markdown, --html): exit 2 naming it when it cannot.
// "" and "-" (standard output) are always fine.
func (a *app) checkOutputFile(flag, path string) int {
	if path == "" || path == "-" {
		return ExitOK
	}
	if err := fsafe.CheckWritable(path); err != nil {
		a.errorf("%s %s cannot be written: %v", flag, path, err)
		return ExitBadInput
	}
	return ExitOK
}

// The names of the files the measuring commands write: the writers and the checks
// before measuring both use these, so that what is checked is what is written.

// journalPath is the journal beside a record: .journal.jsonl for .json.
func journalPath(record string) string {
	return strings.TrimSuffix(record, ".json") + ".journal.jsonl"
}

// calRunPath is the record of a calibration's run i of workload w.
func calRunPath(dir, w string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("%s.c%d.json", w, i))
}

// calEngineLog is the log of the engine started for calibration run i.
func calEngineLog(i int) string { return fmt.Sprintf("engine.c%d.log", i) }

// abBlockPath is the record of an A/B job's block k (from 1) of workload w on side.
func abBlockPath(dir, w string, k int, side string) string {
	return filepath.Join(dir, fmt.Sprintf("%s.ab%d.%s.json", w, k, side))
}

// abBlockEngineLog is the log of the engine started for block k (from 1) on side;
// abSideEngineLog that of a side's engine kept through its blocks.
func abBlockEngineLog(k int, side string) string { return fmt.Sprintf("engine.ab%d.%s.log", k, side) }
func abSideEngineLog(side string) string         { return "engine." + side + ".log" }

// engineLogName is the log of a run's k-th engine start: engine.log, then
// engine.start2.log...
func engineLogName(k int) string {
	if k <= 1 {
		return "engine.log"
	}
	return fmt.Sprintf("engine.start%d.log", k)
}

// restartsAt says whether trial (or run) i, from 1, starts the engine afresh when
// every starts it every k (k ≤ 0: never after the first).
func restartsAt(i, k int) bool { return k > 0 && i > 1 && (i-1)%k == 0 }

// withJournals adds each record's journal.
func withJournals(records []string) []string {
	out := make([]string, 0, 2*len(records))
	for _, r := range records {
		out = append(out, r, journalPath(r))
	}
	return out
}

// runOutputs are the files `slogate run` writes in dir for the workloads ws: each
// trial's record and journal, the manifest, and the engines' logs when it starts them
// (one start, or a start every restartEvery trials).
func runOutputs(dir string, ws []*workload.Workload, startsEngine bool, restartEvery int) []string {
	var recs []string
	starts := 1
	for _, w := range ws {
		repeats := max(w.Repeats, 1)
		for trial := 1; trial <= repeats; trial++ {
			recs = append(recs, recordPath(dir, w.Name, trial, repeats))
			if restartsAt(trial, restartEvery) {
				starts++
			}
		}
	}
	out := append(withJournals(recs), filepath.Join(dir, result.ManifestName))
	if startsEngine {
		for k := 1; k <= starts; k++ {
			out = append(out, filepath.Join(dir, engineLogName(k)))
		}
	}
	return out
}

// calibrateOutputs are the files `slogate calibrate` writes in dir: each run's record,
// journal and, when it starts engines, their logs.
func calibrateOutputs(dir string, ws []*workload.Workload, runs int, startsEngine bool) []string {
	var recs, logs []string
	for _, w := range ws {
		for i := 1; i <= runs; i++ {
			recs = append(recs, calRunPath(dir, w.Name, i))
		}
	}
	if startsEngine {
		for i := 1; i <= runs; i++ {
			logs = append(logs, filepath.Join(dir, calEngineLog(i)))
		}
	}
	return append(withJournals(recs), logs...)
}

// abOutputs are the files `slogate ab` writes in dir: each block's record, journal and
// engine log, the engines' logs when swapped, and the job's reports.
func abOutputs(dir string, ws []*workload.Workload, blocks int, layout string) []string {
	var recs, logs []string
	for k := range blocks {
		name := result.SideBaseline
		if layout[k] == 'B' {
			name = result.SideCandidate
		}
		for _, w := range ws {
			recs = append(recs, abBlockPath(dir, w.Name, k+1, name))
		}
		logs = append(logs, filepath.Join(dir, abBlockEngineLog(k+1, name)))
	}
	logs = append(logs, filepath.Join(dir, abSideEngineLog(result.SideBaseline)), filepath.Join(dir, abSideEngineLog(result.SideCandidate)))
	return append(append(withJournals(recs), logs...), reportOutputs(dir)...)
}

// The files writeReports writes in the results directory.
const (
	gateFile    = "gate.json"
	commentFile = "comment.md"
	htmlFile    = "report.html"
)

var reportFiles = []string{gateFile, report.MetaFile, commentFile, htmlFile}

// reportOutputs are the files writeReports writes in dir.
func reportOutputs(dir string) []string {
	out := make([]string, len(reportFiles))
	for i, n := range reportFiles {
		out[i] = filepath.Join(dir, n)
	}
	return out
}

// sweepOutputs are the files `slogate sweep` writes in dir for workload w: the sweep
// record, and its steps' directory (each step's file is checked as it is written).
func sweepOutputs(dir string, w *workload.Workload) []string {
	return []string{filepath.Join(dir, w.Name+".sweep.json"), filepath.Join(dir, w.Name+".sweep", "step1.json")}
}
