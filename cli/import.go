package cli

import (
	"context"
	"fmt"
	"github.com/slogate/slogate/internal/fsafe"
	"path/filepath"
	"slices"

	"github.com/slogate/slogate/interop"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/result"
)

const importUsage = `slogate import --from vllm|guidellm|aiperf FILE... -c FILE -w NAME -o DIR [--hardware ID] [--benchmark N]

Reads the results of another benchmark tool and writes them as slogate run records
(slogate.run/v1) to DIR, filed under workload NAME of the config, whose SLO judges every
request. 'slogate gate', 'baseline update' and 'capacity' accept them like
any other record. Each record keeps its provenance (the tool, its version, the file's
SHA-256, what the source could not give), and its workload hash is derived from what
the source pins, so that only imports of the same benchmark compare.
  vllm      the JSON of 'vllm bench serve --save-result --save-detailed'
  guidellm  a benchmarks.json report (--benchmark N picks one of several)
  aiperf    profile_export.jsonl, with profile_export_aiperf.json beside it
Several FILEs (or an appended vLLM file) become trials 1..n of the workload.
Exit codes: 0 written; 2 bad input (flags, config, a file in a shape this tool does not
read: the message names the file, line and field); 3 a record that cannot be written.`

func (a *app) cmdImport(ctx context.Context, args []string) int {
	fs := a.flagSet("import", importUsage)
	from := fs.String("from", "", "the tool that wrote FILE: "+fmt.Sprint(interop.Tools))
	config := fs.String("c", "slogate.yaml", "workload `file`")
	fs.StringVar(config, "config", "slogate.yaml", "workload `file` (same as -c)")
	name := fs.String("w", "", "workload `name` to file the records under (required)")
	out := fs.String("o", "", "output `dir`ectory for the run records (required)")
	hardware := fs.String("hardware", "imported", "hardware `id` the records are filed under (baselines/<workload>/<id>.json)")
	bench := fs.Int("benchmark", -1, "with a guidellm report of several benchmarks, the 0-based `index` of the one to import")
	files, code, ok := a.parseWithFiles(fs, args)
	if !ok {
		return code
	}
	switch {
	case *from == "inference-perf":
		a.errorf("import: --from inference-perf: slogate does not read inference-perf's reports (it has no reader for them, and no real report to check one against); run the same load with slogate run, or import the per-request results of vllm bench serve --save-detailed, guidellm or AIPerf")
		return ExitBadInput
	case !slices.Contains(interop.Tools, *from):
		a.errorf("import: --from %q: expected one of %s", *from, quoteList(interop.Tools))
		return ExitBadInput
	case len(files) == 0:
		a.errorf("import: no FILE to import")
		return ExitBadInput
	case *name == "":
		a.errorf("import: -w NAME is required: the workload of %s the records are filed under", *config)
		return ExitBadInput
	case *out == "":
		a.errorf("import: -o DIR is required")
		return ExitBadInput
	}
	if code := a.checkOutputs(*out); code != ExitOK {
		return code
	}
	f, code := a.loadConfig(*config)
	if f == nil {
		return code
	}
	sel, err := measure.SelectWorkloads(f, []string{*name})
	if err != nil {
		a.errorf("%v", err)
		return ExitBadInput
	}
	version, _ := ToolVersion()
	opt := interop.Options{Config: f, Workload: sel[0], Hardware: *hardware, ToolVersion: version, Benchmark: *bench}
	var recs []*result.Record
	for _, path := range files {
		data, err := fsafe.ReadFile(path)
		if err != nil {
			a.errorf("%v", err)
			return ExitBadInput
		}
		beside := func(n string) ([]byte, error) { return fsafe.ReadFile(filepath.Join(filepath.Dir(path), n)) }
		rs, err := interop.Import(*from, path, data, beside, opt)
		if err != nil {
			a.errorf("%v", err)
			return ExitBadInput
		}
		recs = append(recs, rs...)
	}
	for i, r := range recs {
		if len(recs) > 1 {
			r.Trial = i + 1
		}
		p := recordPath(*out, r.Workload, r.Trial, len(recs))
		if err := result.Write(p, r); err != nil {
			a.errorf("%v", err)
			return writeExit(err)
		}
		fmt.Fprintf(a.stdout, "%s: %d requests, %d errors, goodput %.3f req/s; %s\n", p, r.Summary.Requests, r.Summary.Requests-r.Summary.Completed, r.Summary.GoodputRPS, r.Source.Line())
		for _, u := range r.Source.Unavailable {
			fmt.Fprintf(a.stdout, "  not in the source: %s\n", u)
		}
	}
	return ExitOK
}
