package result

import "time"

// Startup is one start of an engine by slogate (target.start): when, counted from the
// exec of its command, it reached each step of becoming ready, and the startup phases its
// own output named. The records measured on one start share it; StartedAt tells starts
// apart, so that the gate counts each start once.
type Startup struct {
	StartedAt time.Time `json:"started_at"`
	// Start is which engine start of the run this is, from 1 (slogate run
	// --restart-every starts the engine afresh every K trials): the trials of a workload
	// that share a number shared one engine start; absent where the command numbers no
	// starts.
	Start int `json:"start,omitempty"`
	// PortMS: the port first accepted a TCP connection.
	PortMS float64 `json:"port_ms"`
	// HealthMS: /health first answered 200; absent for an engine without /health.
	HealthMS float64 `json:"health_ms,omitempty"`
	// ModelMS: /v1/models first listed a model.
	ModelMS float64 `json:"model_ms"`
	// ReadyMS is when the engine was ready: HealthMS, or ModelMS without /health. The
	// gate's engine_start.
	ReadyMS float64 `json:"ready_ms"`
	// FirstTokenMS: the first generated text of a first request, sent once ready; the
	// gate's first_token_after_start. Absent when that request failed
	// (FirstTokenError says why).
	FirstTokenMS    float64 `json:"first_token_ms,omitempty"`
	FirstTokenError string  `json:"first_token_error,omitempty"`
	// Phases are the steps the engine's output named, in the order it printed them.
	Phases []StartPhase `json:"phases,omitempty"`
}

// StartPhase is one startup step the engine's output named.
type StartPhase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// Source is "log" when the line states the duration, "seen" when it is the time
	// between reading the line that began the step and the one that ended it.
	Source string `json:"source"`
	// AtMS is when the line was read, from exec.
	AtMS float64 `json:"at_ms"`
	Line string  `json:"line"`
}
