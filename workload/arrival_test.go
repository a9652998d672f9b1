package workload

import (
	"math"
	"slices"
	"testing"
	"time"
)

func mustGenerator(t testing.TB, w *Workload) *Generator {
	t.Helper()
	g, err := NewGenerator(w)
	if err != nil {
		t.Fatalf("NewGenerator: %v", err)
	}
	return g
}

// openWorkload is a minimal open-loop workload for arrival tests.
func openWorkload(a Arrival, requests int, duration time.Duration) *Workload {
	return &Workload{
		Name:         "arrivals",
		Seed:         42,
		Requests:     requests,
		Duration:     duration,
		Arrival:      a,
		PromptTokens: LengthDist{Dist: DistFixed, Value: 100},
		OutputTokens: LengthDist{Dist: DistFixed, Value: 10},
	}
}

// gapStats returns the mean rate and the coefficient of variation of the gaps between
// consecutive arrivals.
func gapStats(arr []time.Duration) (rate, cv float64) {
	var sum, sum2 float64
	for i := 1; i < len(arr); i++ {
		g := (arr[i] - arr[i-1]).Seconds()
		sum += g
		sum2 += g * g
	}
	n := float64(len(arr) - 1)
	mean := sum / n
	sd := math.Sqrt(math.Max(sum2/n-mean*mean, 0))
	return 1 / mean, sd / mean
}

func TestArrivalProcesses(t *testing.T) {
	cases := []struct {
		why      string
		a        Arrival
		rateTo   float64 // allowed relative error of the mean rate (about 3.5σ of the estimate)
		cv, cvTo float64 // expected gap CV and allowed absolute deviation
	}{
		{"poisson: exponential gaps have CV 1", Arrival{Process: ArrivalPoisson, Rate: 50}, 0.03, 1, 0.05},
		{"gamma k=0.25: bursty, CV 1/sqrt(k) = 2 (±10%); the mean of such gaps is noisier", Arrival{Process: ArrivalGamma, Rate: 50, Burstiness: 0.25}, 0.05, 2, 0.2},
		{"gamma k=4: smoother than poisson, CV 0.5 (±10%)", Arrival{Process: ArrivalGamma, Rate: 50, Burstiness: 4}, 0.03, 0.5, 0.05},
		{"gamma with burstiness unset defaults to k=1, i.e. poisson-like", Arrival{Process: ArrivalGamma, Rate: 50}, 0.03, 1, 0.05},
		{"constant: evenly spaced (up to nanosecond rounding)", Arrival{Process: ArrivalConstant, Rate: 50}, 1e-6, 0, 1e-6},
	}
	for _, c := range cases {
		t.Run(c.a.Process, func(t *testing.T) {
			g := mustGenerator(t, openWorkload(c.a, 20000, 0))
			arr := g.Arrivals()
			if len(arr) != 20000 {
				t.Fatalf("%d arrivals, want 20000", len(arr))
			}
			if !slices.IsSorted(arr) {
				t.Fatalf("arrivals not ascending")
			}
			rate, cv := gapStats(arr)
			if math.Abs(rate/c.a.Rate-1) > c.rateTo {
				t.Errorf("%s: mean rate %.3f, want %v ± %v%%", c.why, rate, c.a.Rate, 100*c.rateTo)
			}
			if math.Abs(cv-c.cv) > c.cvTo {
				t.Errorf("%s: gap CV %.4f, want %v ± %v", c.why, cv, c.cv, c.cvTo)
			}
		})
	}
}

func TestConstantArrivalsExact(t *testing.T) {
	arr := mustGenerator(t, openWorkload(Arrival{Process: ArrivalConstant, Rate: 4}, 5, 0)).Arrivals()
	want := []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second}
	if !slices.Equal(arr, want) {
		t.Errorf("constant 4/s: %v, want %v", arr, want)
	}
}

func TestArrivalsWithinDuration(t *testing.T) {
	w := openWorkload(Arrival{Process: ArrivalPoisson, Rate: 100}, 0, 30*time.Second)
	arr := mustGenerator(t, w).Arrivals()
	if n := len(arr); n < 2800 || n > 3200 {
		t.Errorf("%d arrivals in 30s at 100/s, want about 3000", n)
	}
	if last := arr[len(arr)-1]; last >= w.Duration {
		t.Errorf("last arrival %v not inside the %v window", last, w.Duration)
	}
}

// countIn counts arrivals in [from, to) seconds.
func countIn(arr []time.Duration, from, to float64) int {
	n := 0
	for _, a := range arr {
		if s := a.Seconds(); s >= from && s < to {
			n++
		}
	}
	return n
}

func TestStepsProfile(t *testing.T) {
	prof := &RateProfile{Kind: "steps", Steps: []RateStep{
		{Rate: 40, Duration: 100 * time.Second},
		{Rate: 100, Duration: 100 * time.Second},
		{Rate: 60, Duration: 10 * time.Second}, // the last step holds to the end, past its duration
	}}
	for _, proc := range []string{ArrivalPoisson, ArrivalConstant, ArrivalGamma} {
		w := openWorkload(Arrival{Process: proc, Profile: prof, Burstiness: 2}, 0, 300*time.Second)
		arr := mustGenerator(t, w).Arrivals()
		for _, st := range []struct {
			from, to float64
			want     int
		}{{0, 100, 4000}, {100, 200, 10000}, {200, 300, 6000}} {
			got := countIn(arr, st.from, st.to)
			if math.Abs(float64(got)/float64(st.want)-1) > 0.05 {
				t.Errorf("%s: %d arrivals in [%vs, %vs), want %d ± 5%%", proc, got, st.from, st.to, st.want)
			}
		}
	}
}

func TestRampProfile(t *testing.T) {
	prof := &RateProfile{Kind: "ramp", From: 100, To: 1000, Over: 60 * time.Second}
	w := openWorkload(Arrival{Process: ArrivalPoisson, Profile: prof}, 0, 120*time.Second)
	arr := mustGenerator(t, w).Arrivals()
	// First and last tenth of the ramp: the mean rate there is From + (To-From)×0.05 and
	// From + (To-From)×0.95 (145 and 955/s).
	first := float64(countIn(arr, 0, 6)) / 6
	last := float64(countIn(arr, 54, 60)) / 6
	held := float64(countIn(arr, 60, 120)) / 60
	if math.Abs(first/145-1) > 0.12 {
		t.Errorf("ramp first tenth: %.1f/s, want about 145/s", first)
	}
	if math.Abs(last/prof.To-1) > 0.1 || math.Abs(last/955-1) > 0.05 {
		t.Errorf("ramp last tenth: %.1f/s, want about To = %v/s (955/s exactly)", last, prof.To)
	}
	if math.Abs(held/prof.To-1) > 0.03 {
		t.Errorf("after the ramp: %.1f/s, want To = %v/s held", held, prof.To)
	}
}

func TestDiurnalProfile(t *testing.T) {
	prof := &RateProfile{Kind: "diurnal", Trough: 20, Peak: 100, Period: 100 * time.Second}
	w := openWorkload(Arrival{Process: ArrivalPoisson, Profile: prof}, 0, 3000*time.Second)
	arr := mustGenerator(t, w).Arrivals()
	// Thirty periods starting at the trough: the trough window straddles t = 0 mod 100, the
	// peak window t = 50 mod 100, each 10 s wide.
	var trough, peak int
	for p := 0.0; p < 3000; p += 100 {
		trough += countIn(arr, p, p+5) + countIn(arr, p+95, p+100)
		peak += countIn(arr, p+45, p+55)
	}
	ratio := float64(peak) / float64(trough)
	// Averaged over ±18° of phase the windows see 99.34/s and 20.66/s: a ratio of 4.81.
	if math.Abs(ratio/(prof.Peak/prof.Trough)-1) > 0.1 || math.Abs(ratio/4.808-1) > 0.06 {
		t.Errorf("peak/trough arrivals %d/%d = %.2f, want about Peak/Trough = 5 (4.81 exactly)", peak, trough, ratio)
	}
	if rate := float64(len(arr)) / 3000; math.Abs(rate/60-1) > 0.02 {
		t.Errorf("mean rate %.2f/s, want the sine's mean 60/s", rate)
	}
}

func TestRateCurvesInvert(t *testing.T) {
	steps, err := newStepRate([]RateStep{{Rate: 5, Duration: 2 * time.Second}, {Rate: 0, Duration: 3 * time.Second}, {Rate: 7}})
	if err != nil {
		t.Fatal(err)
	}
	curves := []struct {
		why string
		c   rateCurve
	}{
		{"flat", flatRate{3}},
		{"steps with a silent step in the middle", steps},
		{"ramp up", rampRate{1, 10, 20}},
		{"ramp down to zero keeps Λ monotone", rampRate{10, 0, 20}},
		{"ramp from zero: the root's b = 0", rampRate{0, 10, 20}},
		{"flat ramp: a = 0", rampRate{4, 4, 20}},
		{"diurnal touching zero at the trough", diurnalRate{5, 5, 30}},
		{"diurnal", diurnalRate{50, 10, 7}},
	}
	for _, c := range curves {
		for ts := 0.0; ts < 19.9; ts += 0.37 {
			// In a silent interval Λ is flat and the inverse is the interval's end.
			if c.why == "steps with a silent step in the middle" && ts > 2 && ts <= 5 {
				continue
			}
			s := c.c.cumulative(ts)
			if got := c.c.invert(s); math.Abs(got-ts) > 1e-6 {
				t.Errorf("%s: invert(Λ(%v) = %v) = %v", c.why, ts, s, got)
			}
		}
	}
	// The silent step is skipped: just past Λ(2) the next arrival lands after t = 5.
	if got := steps.invert(steps.cumulative(2) + 1e-9); got < 5 {
		t.Errorf("steps: invert just past the silent step = %v, want >= 5", got)
	}
}

func TestRateFallsToZeroForGood(t *testing.T) {
	// Requests outnumber what the profile ever allows: generation must stop, not spin.
	prof := &RateProfile{Kind: "steps", Steps: []RateStep{{Rate: 10, Duration: 10 * time.Second}, {Rate: 0}}}
	arr := mustGenerator(t, openWorkload(Arrival{Process: ArrivalPoisson, Profile: prof}, 1000, 0)).Arrivals()
	if len(arr) < 70 || len(arr) > 130 {
		t.Errorf("%d arrivals, want the ~100 that fit in the first 10 s", len(arr))
	}
	if arr[len(arr)-1] >= 10*time.Second {
		t.Errorf("arrival at %v after the rate fell to zero", arr[len(arr)-1])
	}
}

func TestTraceArrivals(t *testing.T) {
	offsets := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second}
	cases := []struct {
		why      string
		requests int
		duration time.Duration
		want     int
	}{
		{"neither bound: the whole trace", 0, 0, 5},
		{"requests cut the trace", 3, 0, 3},
		{"duration cuts the trace (an offset at the end is outside)", 0, 3 * time.Second, 3},
		{"requests beyond the trace: only what the trace has", 10, 0, 5},
	}
	for _, c := range cases {
		w := openWorkload(Arrival{Process: ArrivalTrace, Offsets: offsets}, c.requests, c.duration)
		arr := mustGenerator(t, w).Arrivals()
		if !slices.Equal(arr, offsets[:c.want]) {
			t.Errorf("%s: %v, want %v", c.why, arr, offsets[:c.want])
		}
		if len(arr) > 0 {
			arr[0] = time.Hour
			if offsets[0] != 0 {
				t.Fatalf("%s: Arrivals shares the workload's offsets", c.why)
			}
		}
	}
}

func TestClosedLoop(t *testing.T) {
	w := openWorkload(Arrival{Process: ArrivalClosed, Users: 4, Think: 2 * time.Second}, 100, 0)
	g := mustGenerator(t, w)
	if arr := g.Arrivals(); arr != nil {
		t.Errorf("closed loop: Arrivals = %v, want nil", arr)
	}
	if d := g.ThinkTime(3, 7); d != 2*time.Second {
		t.Errorf("fixed think time = %v, want 2s", d)
	}

	w.Arrival.ThinkDist = "exponential"
	g = mustGenerator(t, w)
	var sum float64
	distinct := map[time.Duration]bool{}
	const users, per = 50, 400
	for u := range users {
		for n := range per {
			d := g.ThinkTime(u, n)
			if d != g.ThinkTime(u, n) {
				t.Fatalf("ThinkTime(%d, %d) not deterministic", u, n)
			}
			sum += d.Seconds()
			distinct[d] = true
		}
	}
	if mean := sum / (users * per); math.Abs(mean/2-1) > 0.03 {
		t.Errorf("exponential think mean %.3fs, want 2s ± 3%%", mean)
	}
	if len(distinct) < users*per*9/10 {
		t.Errorf("only %d distinct think times of %d: users share a stream", len(distinct), users*per)
	}
}
