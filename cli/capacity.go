package cli

import (
	"context"
	"flag"
	"fmt"
	"github.com/slogate/slogate/internal/fsafe"
	"math"
	"strconv"
	"time"

	"github.com/slogate/slogate/capacity"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
)

const capacityUsage = `slogate capacity -r RECORD [-c FILE] [--peak-rps R] [--target-utilization U]
                 [--headroom H] [--redundancy N] [--gpu-hour-usd P] [--gpus-per-replica G]
                 [--cold-start S] [--ramp R]

Prints the capacity worksheet: the GPUs a traffic profile needs and what they cost, step
by step. RECORD is a sweep record (DIR/<name>.sweep.json: the per-replica rate is the
highest rate within the SLO) or a run record (its throughput at the rate it happened to
send, with a warning: that is not the highest rate the SLO allows). The traffic profile
comes from the flags, else from the capacity: section of FILE. The warm pool (idle
replicas that keep the SLO while new ones start) is sized from the cold start (--cold-start,
else the start of the record's engine when slogate started it) and the ramp (--ramp, else
the steepest minute of the record's arrivals).
Exit codes: 0 the worksheet, 2 bad input (record, config, flags).`

func (a *app) cmdCapacity(_ context.Context, args []string) int {
	fs := a.flagSet("capacity", capacityUsage)
	var recPath, config string
	var t capacity.Traffic
	gpus := 1
	fs.StringVar(&recPath, "r", "", "sweep or run `record` (required)")
	fs.StringVar(&recPath, "record", "", "sweep or run `record` (same as -r)")
	fs.StringVar(&config, "c", "", "workload `file` whose capacity: section gives the traffic profile")
	fs.StringVar(&config, "config", "", "workload `file` (same as -c)")
	fs.Float64Var(&t.PeakRPS, "peak-rps", 0, "peak arrival `rate` to serve within the SLO, requests/s")
	fs.Var(fractionFlag{&t.TargetUtilization}, "target-utilization", "fraction of the measured rate each replica is loaded to, e.g. 60% (default 100%)")
	fs.Var(fractionFlag{&t.Headroom}, "headroom", "extra capacity for growth and bursts, e.g. 30%")
	fs.IntVar(&t.Redundancy, "redundancy", 0, "spare `replicas` (1 for N+1)")
	fs.Float64Var(&t.GPUHourUSD, "gpu-hour-usd", 0, "`price` of one GPU-hour in USD")
	fs.IntVar(&gpus, "gpus-per-replica", 1, "GPUs one engine replica uses (tensor parallelism)")
	var cold capacity.ColdStart
	fs.Var(secondsFlag{&cold.StartS}, "cold-start", "`seconds` (or a duration: 3m) from launching a replica to its first token (default: the record's measured start)")
	fs.Float64Var(&cold.RampRPSPerMin, "ramp", 0, "steepest rise of the arrival `rate`, req/s per minute (default: the record's steepest minute)")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	if recPath == "" {
		a.errorf("capacity: name the sweep or run record with -r")
		return ExitBadInput
	}
	if gpus < 1 {
		a.errorf("capacity: --gpus-per-replica %d: must be at least 1", gpus)
		return ExitBadInput
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	m, title, env, code := a.readMeasured(recPath)
	if code != ExitOK {
		return code
	}
	m.Operating.GPUsPerReplica = gpus
	gpuNote(&m, env)
	if config != "" {
		f, code := a.loadConfig(config)
		if f == nil {
			return code
		}
		if f.Capacity == nil && !set["peak-rps"] {
			a.errorf("%s has no capacity: section; pass --peak-rps (and the other traffic flags)", f.Path)
			return ExitBadInput
		}
		// The flags override the section field by field.
		ct := capacity.TrafficFrom(f.Capacity)
		if !set["peak-rps"] {
			t.PeakRPS = ct.PeakRPS
		}
		if !set["target-utilization"] {
			t.TargetUtilization = ct.TargetUtilization
		}
		if !set["headroom"] {
			t.Headroom = ct.Headroom
		}
		if !set["redundancy"] {
			t.Redundancy = ct.Redundancy
		}
		if !set["gpu-hour-usd"] {
			t.GPUHourUSD = ct.GPUHourUSD
		}
	}
	if t.PeakRPS == 0 {
		a.errorf("capacity: no traffic profile: pass --peak-rps, or -c with a config that has a capacity: section")
		return ExitBadInput
	}
	ws, err := m.Worksheet(t)
	if err != nil {
		a.errorf("capacity: %v", err)
		return ExitBadInput
	}
	if set["cold-start"] {
		cold.Source = "--cold-start"
	} else {
		cold.StartS, cold.Source = m.ColdStart.StartS, m.ColdStart.Source
	}
	if set["ramp"] {
		cold.RampSource = "--ramp"
	} else {
		cold.RampRPSPerMin, cold.RampSource = m.ColdStart.RampRPSPerMin, m.ColdStart.RampSource
	}
	var pool *capacity.WarmPool
	switch {
	case cold.StartS > 0 && cold.RampSource != "":
		if pool, err = ws.SizeWarmPool(cold); err != nil {
			a.errorf("capacity: %v", err)
			return ExitBadInput
		}
	case set["ramp"] || set["cold-start"]:
		a.errorf("capacity: the warm pool needs both a cold start (--cold-start, or a record of an engine slogate started) and a ramp (--ramp, or a record whose arrivals span two whole minutes); have cold start %q, ramp %q",
			cold.Source, cold.RampSource)
		return ExitBadInput
	}
	report.Worksheet(a.stdout, ws, m, title)
	report.WarmPool(a.stdout, pool, ws)
	return ExitOK
}

// secondsFlag is a time in seconds: a number (90) or a Go duration (90s, 3m).
type secondsFlag struct{ s *float64 }

func (f secondsFlag) String() string {
	if f.s == nil {
		return "0"
	}
	return strconv.FormatFloat(*f.s, 'g', -1, 64)
}

func (f secondsFlag) Set(v string) error {
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 && !math.IsInf(s, 0) {
		*f.s = s
		return nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		*f.s = d.Seconds()
		return nil
	}
	return fmt.Errorf("%q: expected seconds above 0 (90) or a duration (90s, 3m)", v)
}

// readMeasured reads a sweep or run record and its operating point.
func (a *app) readMeasured(path string) (m capacity.Measured, title string, env map[string]string, code int) {
	data, err := fsafe.ReadFile(path)
	if err != nil {
		a.errorf("%v", err)
		return m, "", nil, ExitBadInput
	}
	schema, err := result.SchemaOf(path, data)
	if err != nil {
		a.errorf("%v", err)
		return m, "", nil, ExitBadInput
	}
	switch schema {
	case result.SweepSchema:
		sw, err := result.DecodeSweep(path, data)
		if err != nil {
			a.errorf("%v", err)
			return m, "", nil, ExitBadInput
		}
		if m, err = capacity.FromSweep(sw); err != nil {
			a.errorf("%s: %v", path, err)
			return m, "", nil, ExitBadInput
		}
		title = fmt.Sprintf("%s, sweep %s (%s)", sw.Workload, path, hardwareOf(sw.Hardware, sw.Environment))
		env = sw.Environment
	case result.Schema:
		rec, err := result.Decode(path, data)
		if err != nil {
			a.errorf("%v", err)
			return m, "", nil, ExitBadInput
		}
		if m, err = capacity.FromRun(rec); err != nil {
			a.errorf("%s: %v", path, err)
			return m, "", nil, ExitBadInput
		}
		title = fmt.Sprintf("%s, run %s (%s)", rec.Workload, path, hardwareOf(rec.Hardware, rec.Environment))
		env = rec.Environment
	default:
		a.errorf("%s: not a slogate run or sweep record (schema %q; expected %q or %q)", path, schema, result.Schema, result.SweepSchema)
		return m, "", nil, ExitBadInput
	}
	return m, title, env, ExitOK
}

func hardwareOf(hw string, env map[string]string) string {
	if hw == "" {
		hw = "hardware unknown"
	}
	if e := env["engine.name"]; e != "" {
		hw += ", " + e + " " + env["engine.version"]
	}
	return hw
}

// gpuNote warns when the machine had several GPUs: whether a replica used all of them
// (tensor parallelism) is not in the record, and --gpus-per-replica says it.
func gpuNote(m *capacity.Measured, env map[string]string) {
	if n, err := strconv.Atoi(env["gpu.count"]); err == nil && n > 1 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("the measured machine had %d GPUs: the rate is per replica, and --gpus-per-replica (%d) says how many GPUs a replica uses", n, max(m.Operating.GPUsPerReplica, 1)))
	}
}
