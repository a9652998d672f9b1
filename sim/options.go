package sim

import (
	"cmp"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// DefaultVersion is what /version reports unless Options.Version says otherwise.
const DefaultVersion = "0.0.0-slogate-sim"

// Options configure a simulated engine.
type Options struct {
	Profile Profile // the zero Profile means "tiny"
	Seed    int64   // seeds stop lengths, faults and step jitter
	Model   string  // served model name; "" means Profile.Model
	Version string  // reported by /version; "" means DefaultVersion
	Faults  Faults
	// NoPrefixCaching turns the prefix cache off (vLLM's --no-enable-prefix-caching).
	NoPrefixCaching bool
	// NoPromptTokensDetails leaves usage.prompt_tokens_details out of responses: the
	// prompt tokens the prefix cache served at a request's first scheduling, which vLLM
	// reports only when started with --enable-prompt-tokens-details.
	NoPromptTokensDetails bool
	// TokensPerChunk makes each streamed chunk carry this many tokens (the last one of a
	// stream fewer), as speculative decoding does; 0 or 1: one token per chunk when the
	// client keeps up.
	TokensPerChunk int
	// ChatSystemHeader is the length of a default system header the chat template puts
	// before every conversation, as Llama 3.1's does (about 25 tokens, with today's
	// date): every chat prompt opens with the same tokens, which the prefix cache serves
	// from the second request on. 0: none.
	ChatSystemHeader int
	// Noise is between-run noise (noise.go); the zero Noise is none.
	Noise Noise
	// StartTime is how long Serve takes to start before it accepts a connection, as vLLM
	// binds its port only after its engine is initialized; it prints vLLM's startup lines
	// for the phases that split it (starttime.go). 0: it listens at once.
	StartTime time.Duration
	// Swap configures sleep and memory release (swap.go); the zero Swap serves neither
	// vLLM's sleep endpoints nor an effective release.
	Swap Swap
	// Now is the wall clock, used only for the "created" field of responses; the step
	// loop runs on the monotonic clock because simulating time means sleeping in it.
	// Nil means time.Now.
	Now func() time.Time
	// Listen is how Serve binds its address; nil means net.Listen("tcp", addr). A test
	// that holds the port until the engine it started binds it passes one that shares
	// the port.
	Listen func(addr string) (net.Listener, error)
}

// Faults are injected failures and distortions. Every draw is seeded: request i (in
// arrival order) sees the same faults for the same seed.
type Faults struct {
	ErrorRate      float64       // fraction of requests answered HTTP 500
	DisconnectRate float64       // fraction of streams cut after a seeded number of tokens, no [DONE]
	ErrorEventRate float64       // fraction of streams that carry a data: {"error": ...} event mid-stream
	StallProb      float64       // fraction of streams that pause for Stall mid-generation
	Stall          time.Duration // length of a stall
	SlowStart      time.Duration // not ready (503) for this long after New
	Slowdown       float64       // step-time factor; 0 means 1
	KVBlocks       int           // overrides the profile's number of KV blocks when > 0
}

// Validate reports every bad fault setting at once.
func (f Faults) Validate() error {
	var errs []string
	rate := func(name string, v float64) {
		if v < 0 || v > 1 {
			errs = append(errs, fmt.Sprintf("%s %v outside [0, 1]", name, v))
		}
	}
	rate("error rate", f.ErrorRate)
	rate("disconnect rate", f.DisconnectRate)
	rate("error-event rate", f.ErrorEventRate)
	rate("stall probability", f.StallProb)
	if f.Stall < 0 || f.SlowStart < 0 {
		errs = append(errs, "negative stall or slow-start duration")
	}
	if f.StallProb > 0 && f.Stall == 0 {
		errs = append(errs, "stall probability set without a stall length")
	}
	if f.Slowdown < 0 {
		errs = append(errs, fmt.Sprintf("slowdown %v < 0", f.Slowdown))
	}
	if f.KVBlocks < 0 {
		errs = append(errs, fmt.Sprintf("kv blocks %d < 0", f.KVBlocks))
	}
	if len(errs) > 0 {
		return fmt.Errorf("faults: %s", strings.Join(errs, "; "))
	}
	return nil
}

// profileFlag resolves --profile while flags are parsed, so a bad name fails there.
type profileFlag struct{ p *Profile }

func (f profileFlag) String() string {
	if f.p == nil || f.p.Name == "" {
		return "tiny"
	}
	return f.p.Name
}

func (f profileFlag) Set(name string) error {
	p, err := LookupProfile(name)
	if err != nil {
		return err
	}
	*f.p = p
	return nil
}

// rateFlag accepts a fraction in [0, 1].
type rateFlag struct{ v *float64 }

func (f rateFlag) String() string {
	if f.v == nil {
		return "0"
	}
	return strconv.FormatFloat(*f.v, 'g', -1, 64)
}

func (f rateFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 {
		return fmt.Errorf("%q is not a fraction in [0, 1]", s)
	}
	*f.v = v
	return nil
}

// Bind registers the simulator's flags on fs, writing into o.
func (o *Options) Bind(fs *flag.FlagSet) {
	if o.Profile.Name == "" && o.Profile.Model == "" {
		o.Profile = profiles["tiny"]
	}
	fs.Var(profileFlag{&o.Profile}, "profile", "engine profile `name`: one of "+strings.Join(Profiles(), ", ")+" (default tiny; see docs/sim.md)")
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of stop lengths, faults and step jitter")
	fs.StringVar(&o.Model, "model", o.Model, "served model name (default: the profile's model)")
	fs.StringVar(&o.Version, "version", o.Version, "version string reported by /version (default "+DefaultVersion+")")
	fs.BoolVar(&o.NoPrefixCaching, "no-enable-prefix-caching", o.NoPrefixCaching, "turn the prefix cache off (as vLLM's flag of that name)")
	fs.BoolVar(&o.NoPromptTokensDetails, "no-prompt-tokens-details", o.NoPromptTokensDetails, "leave usage.prompt_tokens_details (cached tokens at a request's first scheduling) out of responses, as vLLM without --enable-prompt-tokens-details")
	fs.IntVar(&o.ChatSystemHeader, "chat-system-header", o.ChatSystemHeader, "tokens of a default system header the chat template puts before every conversation (Llama 3.1's is about 25; 0: none)")
	fs.IntVar(&o.TokensPerChunk, "tokens-per-chunk", o.TokensPerChunk, "tokens in each streamed chunk, as speculative decoding sends them (0 or 1: one per chunk)")
	fs.Var(rateFlag{&o.Faults.ErrorRate}, "error-rate", "`fraction` of requests answered HTTP 500")
	fs.Var(rateFlag{&o.Faults.DisconnectRate}, "disconnect-rate", "`fraction` of streams cut mid-stream without [DONE]")
	fs.Var(rateFlag{&o.Faults.ErrorEventRate}, "error-event-rate", "`fraction` of streams that carry a mid-stream data: {\"error\": ...} event")
	fs.Var(rateFlag{&o.Faults.StallProb}, "stall-prob", "`fraction` of streams that pause for --stall mid-generation")
	fs.DurationVar(&o.Faults.Stall, "stall", o.Faults.Stall, "length of a stall (with --stall-prob)")
	fs.DurationVar(&o.Faults.SlowStart, "slow-start", o.Faults.SlowStart, "answer 503 (and /health 503) for this long after start")
	fs.Float64Var(&o.Faults.Slowdown, "slowdown", cmp.Or(o.Faults.Slowdown, 1), "multiply every step time by this factor (shows a regression)")
	fs.IntVar(&o.Faults.KVBlocks, "kv-blocks", o.Faults.KVBlocks, "override the profile's number of KV blocks (0: the profile's)")
	fs.DurationVar(&o.StartTime, "start-time", o.StartTime, "take this long to start (weights, compile, graph capture, engine init, logged as vLLM does) before accepting connections")
	o.bindNoise(fs)
	o.bindSwap(fs)
}

// effective returns the profile after the overrides of o, and the served model name.
func (o Options) effective() (Profile, string, error) {
	p := o.Profile
	if p.Name == "" && p.Model == "" {
		p = profiles["tiny"]
	}
	if o.Faults.KVBlocks > 0 {
		p.NumBlocks = o.Faults.KVBlocks
	}
	if err := p.Validate(); err != nil {
		return p, "", err
	}
	if o.StartTime < 0 {
		return Profile{}, "", fmt.Errorf("start time %s < 0", o.StartTime)
	}
	if o.TokensPerChunk < 0 {
		return Profile{}, "", fmt.Errorf("tokens per chunk %d < 0", o.TokensPerChunk)
	}
	if o.ChatSystemHeader < 0 {
		return Profile{}, "", fmt.Errorf("chat system header %d < 0", o.ChatSystemHeader)
	}
	if err := o.Faults.Validate(); err != nil {
		return p, "", err
	}
	if err := o.Noise.Validate(); err != nil {
		return p, "", err
	}
	if err := o.Swap.validate(); err != nil {
		return p, "", err
	}
	// As vLLM refuses to start when the KV cache cannot hold one max-length sequence,
	// the simulator shortens max_model_len to what its cache holds, so that a lone
	// request can always finish (and is never preempted forever).
	p.MaxModelLen = min(p.MaxModelLen, p.NumBlocks*p.BlockSize)
	model := o.Model
	if model == "" {
		model = p.Model
	}
	p.Model = model
	return p, model, nil
}
