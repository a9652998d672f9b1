package cli

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/slogate/slogate/internal/fsafe"
	"github.com/slogate/slogate/interop"
	"github.com/slogate/slogate/result"
)

const exportUsage = `slogate export --csv [--gaps] | --vllm [--rate R] RECORD.json [-o FILE]

Writes a run record in a shape other tools read, to FILE (default: standard output):
  --csv          one row per request: i, class, sched_us, send_us, first_us, last_us,
                 end_us, prompt_tokens, output_tokens, chunks, error, slo_met
  --csv --gaps   one row per ITL gap: i, k, gap_us
  --vllm         the JSON 'vllm bench serve --save-result --save-detailed' writes, with
                 vLLM's definitions (TTFT from the send, in seconds); --rate is the
                 request_rate to state (default "inf")
Exit codes: 0 written; 2 bad input (flags, a file that is not a run record); 3 a write
that failed.`

func (a *app) cmdExport(ctx context.Context, args []string) int {
	fs := a.flagSet("export", exportUsage)
	asCSV := fs.Bool("csv", false, "write CSV, one row per request")
	gaps := fs.Bool("gaps", false, "with --csv, one row per ITL gap")
	asVLLM := fs.Bool("vllm", false, "write vLLM's --save-result JSON")
	rate := fs.Float64("rate", math.Inf(1), "with --vllm, the configured request rate to state")
	out := fs.String("o", "", "output `file` (default: standard output)")
	files, code, ok := a.parseWithFiles(fs, args)
	if !ok {
		return code
	}
	switch {
	case *asCSV == *asVLLM:
		a.errorf("export: give exactly one of --csv and --vllm")
		return ExitBadInput
	case *gaps && !*asCSV:
		a.errorf("export: --gaps goes with --csv")
		return ExitBadInput
	case len(files) != 1:
		a.errorf("export: expected one RECORD.json, got %d", len(files))
		return ExitBadInput
	}
	if code := a.checkOutputFile("-o", *out); code != ExitOK {
		return code
	}
	rec, err := result.Read(files[0])
	if err != nil {
		return a.gateError(err)
	}
	var buf bytes.Buffer
	if *asCSV {
		err = interop.WriteCSV(&buf, rec, *gaps)
	} else {
		var data []byte
		data, err = interop.ExportVLLM(rec, *rate)
		buf.Write(data)
	}
	if err != nil {
		a.errorf("export: %v", err)
		return ExitFailure
	}
	if *out == "" {
		if _, err := a.stdout.Write(buf.Bytes()); err != nil {
			return ExitFailure
		}
		return ExitOK
	}
	if err := fsafe.WriteFile(*out, buf.Bytes()); err != nil {
		a.errorf("writing %s: %v", *out, err)
		return writeExit(err)
	}
	fmt.Fprintf(a.stderr, "wrote %s\n", *out)
	return ExitOK
}
