package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/slogate/slogate/capacity"
	"github.com/slogate/slogate/result"
)

// SweepTable prints a sweep's steps, rate against attainment, goodput and tail latency,
// and what the sweep concluded.
func SweepTable(w io.Writer, s *result.Sweep, path string) {
	p := s.Params
	step := fmt.Sprintf("%d requests", p.StepRequests)
	if p.StepDurationS > 0 {
		step = fmt.Sprintf("%s s", capNum(p.StepDurationS))
	}
	judged := fmt.Sprintf("attainment target %.2f%%", 100*s.SLOAttainmentTarget)
	if slices.ContainsFunc(s.Steps, func(st result.SweepStep) bool {
		return slices.ContainsFunc(st.Targets, func(t result.TargetAttainment) bool { return t.Metric != "all" })
	}) {
		// The file declared no attainment: each target was judged at its own percentile.
		// (A sweep recorded before steps kept their targets was judged by the attainment.)
		judged = "each target judged at its percentile (no attainment declared)"
	}
	fmt.Fprintf(w, "%s: sweep of %s steps of %s, SLO %s, %s", s.Workload, p.Process, step, sweepSLO(s.SLO), judged)
	if path != "" {
		fmt.Fprintf(w, " -> %s", path)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tphase\trate/s\treqs\tattain%\tgoodput/s\tthruput/s\tTTFT p99 ms\tITL p99 ms\terr%\tqueue+\tverdict\t")
	for _, st := range s.Steps {
		q := "-"
		if st.QueueGrowth != nil {
			q = num(*st.QueueGrowth)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%.2f\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t\n", st.Step, st.Phase, capNum(st.RateRPS), st.Requests,
			100*st.SLOAttainment, num(st.GoodputRPS), num(st.ThroughputRPS), num(st.TTFTP99ms), num(st.ITLP99ms), 100*st.ErrorRate, q, st.Verdict)
	}
	tw.Flush()
	for _, st := range s.Steps {
		runs := ""
		if n := len(st.MoreRecords); n > 0 {
			runs = fmt.Sprintf(", %d runs pooled", n+1)
		}
		if st.Reason != "" && (st.Verdict != result.StepPass || st.Undecided) {
			fmt.Fprintf(w, "  step %d (%s req/s%s) %s: %s\n", st.Step, capNum(st.RateRPS), runs, st.Verdict, st.Reason)
			if st.Slowest != nil {
				fmt.Fprintf(w, "    %s\n", st.Slowest)
			}
		}
	}
	switch {
	case s.MaxSustainableRPS != nil:
		fmt.Fprintf(w, "max sustainable rate: %s req/s (bound: %s", capNum(*s.MaxSustainableRPS), s.Bound)
		if s.FirstFailingRPS != nil {
			fmt.Fprintf(w, "; lowest failing rate %s req/s", capNum(*s.FirstFailingRPS))
		}
		fmt.Fprintf(w, "; precision %s%%)\n", capNum(100*p.Precision))
	case s.Bound != "":
		fmt.Fprintf(w, "max sustainable rate: none (bound: %s)\n", s.Bound)
	default:
		fmt.Fprintf(w, "max sustainable rate: none (sweep failed: %s)\n", s.Failure)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w)
}

func sweepSLO(slo []result.SLOTarget) string {
	if len(slo) == 0 {
		return "none (errors only)"
	}
	parts := make([]string, len(slo))
	for i, t := range slo {
		parts[i] = fmt.Sprintf("%s p%s <= %s ms", t.Metric, pct(t.Percentile), num(t.LimitMS))
	}
	return strings.Join(parts, ", ")
}

// Worksheet prints the capacity worksheet step by step, with the arithmetic of each step
// and which bound sets the GPU count. m says where the operating point came from; title
// names the record.
func Worksheet(w io.Writer, ws *capacity.Worksheet, m capacity.Measured, title string) {
	t, op := ws.Traffic, ws.Operating
	g := op.GPUsPerReplica
	fmt.Fprintf(w, "capacity worksheet: %s\n", title)
	fmt.Fprintf(w, "traffic: peak %s req/s, target utilization %s%%, headroom %s%%, redundancy N+%d", capNum(t.PeakRPS), capNum(100*t.TargetUtilization), capNum(100*t.Headroom), t.Redundancy)
	if t.GPUHourUSD > 0 {
		fmt.Fprintf(w, ", %s per GPU-hour", capUSD(t.GPUHourUSD))
	}
	fmt.Fprintln(w)

	how := "the highest rate an SLO-bound sweep passed"
	if !op.FromSweep {
		how = "the throughput of a single run (not SLO-bound: see the warning)"
	}
	fmt.Fprintf(w, " 1. per-replica rate within the SLO: %s req/s, %s\n", capNum(op.SustainableRPS), how)
	if m.AttainmentTarget > 0 {
		fmt.Fprintf(w, "    measured attainment there %.2f%% (target %.2f%%)\n", 100*m.Attainment, 100*m.AttainmentTarget)
	}
	fmt.Fprintf(w, "    GPU-seconds per request = %d GPU%s per replica / %s req/s = %s GPU-s\n", g, capPlural(g), capNum(op.SustainableRPS), capNum(ws.GPUSecondsPerRequest))
	fmt.Fprintf(w, " 2. GPUs by throughput = ceil(%s req/s × %s GPU-s / %s utilization) = %d\n", capNum(t.PeakRPS), capNum(ws.GPUSecondsPerRequest), capNum(t.TargetUtilization), ws.ThroughputGPUs)
	fmt.Fprintf(w, " 3. in flight at peak (Little's law) = %s req/s × %s s mean E2E = %s requests\n", capNum(t.PeakRPS), capNum(op.MeanE2ES), capNum(ws.InFlightNeeded))
	if op.KVConcurrency > 0 {
		if k := m.KV; k != nil && k.PerRequestTokens > 0 {
			fmt.Fprintf(w, " 4. KV per request at p95 context: %d tokens; KV-limited concurrency = ⌊%d tokens / %d⌋ = %d per replica\n", k.PerRequestTokens, k.CapacityTokens, k.PerRequestTokens, op.KVConcurrency)
		} else {
			fmt.Fprintf(w, " 4. KV-limited concurrency: %d per replica\n", op.KVConcurrency)
		}
		fmt.Fprintf(w, "    GPUs by memory = ceil(%s / %d) = %d replica%s × %d GPU%s = %d\n", capNum(ws.InFlightNeeded), op.KVConcurrency, ws.MemoryReplicas, capPlural(ws.MemoryReplicas), g, capPlural(g), ws.MemoryGPUs)
	} else {
		fmt.Fprintf(w, " 4. KV-limited concurrency unknown: no memory bound\n")
	}
	other, otherN := capacity.BoundMemory, strconv.Itoa(ws.MemoryGPUs)
	if op.KVConcurrency == 0 {
		otherN = "unknown"
	}
	if ws.Bound == capacity.BoundMemory {
		other, otherN = capacity.BoundThroughput, strconv.Itoa(ws.ThroughputGPUs)
	}
	fmt.Fprintf(w, " 5. base = %d GPUs: the %s bound wins (%s bound: %s)", ws.BaseGPUs, ws.Bound, other, otherN)
	if g > 1 {
		fmt.Fprintf(w, ", in whole replicas of %d", g)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, " 6. with %s%% headroom = ceil(%d × %s) = %d GPUs\n", capNum(100*t.Headroom), ws.BaseGPUs, capNum(1+t.Headroom), ws.WithHeadroom)
	fmt.Fprintf(w, " 7. with N+%d redundancy = %d + %d × %d = %d GPUs\n", t.Redundancy, ws.WithHeadroom, t.Redundancy, g, ws.TotalGPUs)
	fit := "fits"
	if !ws.FitsKV {
		fit = "DOES NOT FIT"
	}
	if op.KVConcurrency > 0 {
		fmt.Fprintf(w, " 8. Little's-law check: %s in flight over %d replica%s = %s per replica <= %d KV-limited: %s\n",
			capNum(ws.InFlightNeeded), ws.WithHeadroom/g, capPlural(ws.WithHeadroom/g), capNum(ws.InFlightPerReplica), op.KVConcurrency, fit)
	} else {
		fmt.Fprintf(w, " 8. Little's-law check: %s in flight over %d replica%s = %s per replica (KV-limited concurrency unknown)\n",
			capNum(ws.InFlightNeeded), ws.WithHeadroom/g, capPlural(ws.WithHeadroom/g), capNum(ws.InFlightPerReplica))
	}
	if t.GPUHourUSD > 0 {
		att := "no retries or errors counted"
		if op.Attempts > 0 && op.Completed > 0 {
			att = fmt.Sprintf("× %d attempts / %d completed", op.Attempts, op.Completed)
		}
		fmt.Fprintf(w, " 9. cost per completed request = %s GPU-s %s × %s / 3600 s = %s\n", capNum(ws.GPUSecondsPerRequest), att, capUSD(t.GPUHourUSD), capUSD(ws.CostPerCompletedUSD))
		fmt.Fprintf(w, "    per month = %d GPUs × %s h × %s = %s\n", ws.TotalGPUs, capNum(capacity.HoursPerMonth), capUSD(t.GPUHourUSD), capUSD(ws.MonthlyUSD))
	} else {
		fmt.Fprintf(w, " 9. cost: no GPU price given (--gpu-hour-usd or capacity.gpu_hour_usd)\n")
	}
	if op.RequestsPerTask > 0 {
		fmt.Fprintf(w, "10. per completed task: %s requests (turns, retries and failed tasks' requests) × %s GPU-s = %s GPU-s; %s tasks/s per replica",
			capNum(op.RequestsPerTask), capNum(ws.GPUSecondsPerRequest), capNum(ws.GPUSecondsPerTask), capNum(ws.TasksPerReplicaS))
		if t.GPUHourUSD > 0 {
			fmt.Fprintf(w, "; cost per completed task = %s GPU-s × %s / 3600 s = %s", capNum(ws.GPUSecondsPerTask), capUSD(t.GPUHourUSD), capUSD(ws.CostPerTaskUSD))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "GPUs required: %d (%s-bound)\n", ws.TotalGPUs, ws.Bound)
	for _, x := range ws.Warnings {
		fmt.Fprintf(w, "warning: %s\n", x)
	}
}

func capPlural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// usd formats a price: cents for amounts of a dollar or more, else four significant
// figures (a cost per request is a small fraction of a cent).
func capUSD(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 1:
		return "$" + capCommas(fmt.Sprintf("%.2f", v))
	default:
		decimals := 3 - int(math.Floor(math.Log10(v)))
		return "$" + strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.*f", decimals, v), "0"), ".")
	}
}

// commas groups the integer digits of a formatted number in thousands.
func capCommas(s string) string {
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

// capNum formats a worksheet figure with up to four significant digits and no trailing
// zeros: 20, 0.2, 16.67, 43800.
func capNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	case a != 0 && a < 1e-4:
		return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 8, 64), "0"), ".")
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// WarmPool prints the warm pool after the worksheet: the idle replicas that keep the SLO
// while new ones start, and what they cost; a line saying what is missing when pool is
// nil.
func WarmPool(w io.Writer, p *capacity.WarmPool, ws *capacity.Worksheet) {
	if p == nil {
		fmt.Fprintf(w, "warm pool: not sized: it needs a cold start (--cold-start, or a record of an engine slogate started with target.start) and a ramp (--ramp, or arrivals over two whole minutes)\n")
		return
	}
	c := p.ColdStart
	fmt.Fprintf(w, "warm pool: cold start %s s (%s), ramp %s req/s per minute (%s)\n", capNum(c.StartS), c.Source, capNum(c.RampRPSPerMin), c.RampSource)
	fmt.Fprintf(w, " 10. load added during one cold start = %s req/s/min × %s s / 60 = %s req/s\n", capNum(c.RampRPSPerMin), capNum(c.StartS), capNum(p.RiseRPS))
	fmt.Fprintf(w, "     per replica = %s req/s × %s utilization = %s req/s\n", capNum(ws.Operating.SustainableRPS), capNum(ws.Traffic.TargetUtilization), capNum(p.PerReplicaRPS))
	fmt.Fprintf(w, "     warm replicas = ceil(%s / %s) = %d (%d GPU%s), kept idle beside the fleet", capNum(p.RiseRPS), capNum(p.PerReplicaRPS), p.Replicas, p.GPUs, capPlural(p.GPUs))
	if ws.Traffic.GPUHourUSD > 0 {
		fmt.Fprintf(w, ": %d × %s = %s per hour", p.GPUs, capUSD(ws.Traffic.GPUHourUSD), capUSD(p.HourlyUSD))
	}
	fmt.Fprintln(w)
}
