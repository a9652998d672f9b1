// Command serialsim serves the simulated engine with room for one sequence at a time, for
// scripts/e2e.sh: a server whose capacity is known without a model of batching. With the
// tiny profile's KV cache, max_num_seqs 1 and a fixed step time, a request of P prompt
// tokens and O output tokens holds the engine for about O steps, and every other request
// waits for it: at -step 10ms and 16 output tokens, about 160 ms each, so about 6 req/s.
// It lives under testdata so that `go build ./...` and `go vet ./...` leave it alone.
//
//	serialsim [-addr 127.0.0.1:0] [-step 10ms] [-seed 1]
//
// It logs "slogate sim: serving on http://ADDR" as `slogate sim` does, and serves until
// interrupted.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/slogate/slogate/sim"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("serialsim: ")
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	step := flag.Duration("step", 10*time.Millisecond, "time of one engine step (one output token of the one running sequence)")
	seed := flag.Int64("seed", 1, "seed of the simulator's stop lengths and jitter")
	flag.Parse()
	p, err := sim.LookupProfile("tiny")
	if err != nil {
		log.Fatal(err)
	}
	p.Name = "tiny-serial"
	p.MaxNumSeqs = 1
	// The whole step is the base: one sequence decodes per step, and prefill of a short
	// prompt adds little, so a request's service time is its output length × step.
	p.StepBase = *step
	p.StepPerDecodeSeq = 0
	p.StepPerPrefillToken = 0
	p.Jitter = 0
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sim.Serve(ctx, *addr, sim.Options{Profile: p, Seed: *seed}, os.Stderr); err != nil {
		log.Fatal(err)
	}
}
