package sim

import (
	"flag"
	"io"
	"math"
	"testing"
	"time"
)

func TestNoiseDrawIsSeeded(t *testing.T) {
	t.Parallel()
	n := NoisePresets["gpu"]
	a, b, c := n.Draw(7), n.Draw(7), n.Draw(8)
	if a.Speed != b.Speed || a.Drift != b.Drift {
		t.Fatalf("seed 7 drew speed %v/%v drift %v/%v", a.Speed, b.Speed, a.Drift, b.Drift)
	}
	if a.Speed == c.Speed {
		t.Fatalf("seeds 7 and 8 drew the same speed %v", a.Speed)
	}
	// The spread of the speed factor over many starts is the preset's.
	var s, s2 float64
	const starts = 4000
	for i := range starts {
		l := math.Log(n.Draw(int64(i + 1)).Speed)
		s += l
		s2 += l * l
	}
	sd := math.Sqrt(s2/starts - (s/starts)*(s/starts))
	if math.Abs(sd-n.SpeedSD) > 0.1*n.SpeedSD {
		t.Fatalf("log-sd of the speed over %d starts %.4f, want %.4f", starts, sd, n.SpeedSD)
	}
}

func TestNoiseDriftAndStalls(t *testing.T) {
	t.Parallel()
	n := Noise{Drift: 0.10, DriftOver: time.Minute, StallEvery: time.Second, StallFor: 10 * time.Millisecond}
	rn := n.Draw(1)
	if rn.Speed != 1 {
		t.Fatalf("speed %v without a speed sd", rn.Speed)
	}
	if f := rn.Factor(30 * time.Second); math.Abs(f-1.05) > 1e-12 {
		t.Fatalf("factor after half the drift period %v, want 1.05", f)
	}
	// Stalls arrive at about one a second: over 1000 s, 1000 ± a few sd of a Poisson count.
	var total time.Duration
	for s := range 1000 * 100 {
		total += rn.StallsUntil(time.Duration(s) * 10 * time.Millisecond)
	}
	k := float64(total / n.StallFor)
	if math.Abs(k-1000) > 5*math.Sqrt(1000) {
		t.Fatalf("%v stalls in 1000 s at one a second", k)
	}
	if (Noise{}).Draw(1).Factor(time.Hour) != 1 || (Noise{}).Enabled() {
		t.Fatal("the zero Noise adds noise")
	}
}

func TestNoiseValidateAndFlags(t *testing.T) {
	t.Parallel()
	if err := (Noise{SpeedSD: -1, StallEvery: time.Second}).Validate(); err == nil {
		t.Fatal("a negative speed sd and a stall without length pass")
	}
	var o Options
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Bind(fs)
	if err := fs.Parse([]string{"--noise", "gpu", "--noise-speed-sd", "0.05", "--noise-seed", "9"}); err != nil {
		t.Fatal(err)
	}
	want := NoisePresets["gpu"]
	want.SpeedSD, want.Seed = 0.05, 9
	if o.Noise != want {
		t.Fatalf("flags gave %+v, want %+v", o.Noise, want)
	}
	if err := fs.Parse([]string{"--noise", "loud"}); err == nil {
		t.Fatal("an unknown level passes")
	}
}

// TestNoiseScalesSteps: two starts with different noise seeds run the same requests at
// different speeds, by the drawn factors. The step times compared are the modelled ones,
// which a loaded machine does not distort.
func TestNoiseScalesSteps(t *testing.T) {
	t.Parallel()
	mean := func(seed int64) (time.Duration, float64) {
		o := tinyOpts()
		o.Noise = Noise{Seed: seed, SpeedSD: 0.5}
		r, c, ctx := start(t, o)
		x := post(ctx, c, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: "hi", MaxTokens: 20, IgnoreEOS: true, Stream: true})
		if x.Err != nil || x.OutputTokens() != 20 {
			t.Fatalf("err %v tokens %d", x.Err, x.OutputTokens())
		}
		st := r.Server.Stats()
		return st.Modelled / time.Duration(st.Steps), r.Server.Noise().Speed
	}
	a, fa := mean(1)
	b, fb := mean(2)
	got, want := float64(b)/float64(a), fb/fa
	t.Logf("mean modelled step %v at speed ×%.3f, %v at ×%.3f", a, fa, b, fb)
	if math.Abs(got/want-1) > 0.05 {
		t.Fatalf("step ratio %.3f, want the speed ratio %.3f", got, want)
	}
}

// SpeedDF keeps the speed factor's spread and fattens its tails: over 20,000 starts the
// log-sd stays near SpeedSD while far more starts land beyond three of it; SpeedDF 2 or
// less is refused (a t of 2 df has no variance to scale).
func TestNoiseSpeedDFHasHeavierTails(t *testing.T) {
	stats := func(n Noise) (sd, beyond3 float64) {
		var ss float64
		for i := range 20000 {
			x := math.Log(n.Draw(int64(i + 1)).Speed)
			ss += x * x
			if math.Abs(x) > 3*n.SpeedSD {
				beyond3++
			}
		}
		return math.Sqrt(ss / 20000), beyond3 / 20000
	}
	nsd, ntail := stats(Noise{SpeedSD: 0.1})
	tsd, ttail := stats(Noise{SpeedSD: 0.1, SpeedDF: 3})
	t.Logf("normal: log-sd %.4f, %.2f%% beyond 3 sd; t3: log-sd %.4f, %.2f%%", nsd, 100*ntail, tsd, 100*ttail)
	if math.Abs(nsd-0.1) > 0.005 || math.Abs(tsd-0.1) > 0.02 {
		t.Errorf("log-sd normal %.4f, t3 %.4f: want both near 0.1", nsd, tsd)
	}
	if !(ttail > 3*ntail) {
		t.Errorf("beyond 3 sd: t3 %.4f, normal %.4f: want the t's tails at least three times as heavy", ttail, ntail)
	}
	for _, df := range []int{1, 2, -1} {
		if err := (Noise{SpeedSD: 0.1, SpeedDF: df}).Validate(); err == nil {
			t.Errorf("SpeedDF %d accepted", df)
		}
	}
}
