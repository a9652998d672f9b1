// Package envinfo owns the description of the machine a run happened on: the GPUs (model,
// count, memory, compute capability, driver and CUDA versions, read through nvidia-smi),
// the host (OS, kernel, CPU, cores, memory), the GitHub runner, the tool's own version
// and the engine's container image. It turns that description into the flat, stable keys
// the gate compares for drift, and into the hardware key that names a baseline file.
//
// Every source is handed in through Options (the command runner, the environment, the
// file reader, the clock), so the package never touches the real machine in tests.
// It knows nothing of engines: engine.* and model.* keys come from the engine adapter.
package envinfo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"time"
)

// Env describes the machine a run happened on. Empty strings and zero numbers mean
// "unknown"; Flat omits them.
type Env struct {
	CollectedAt time.Time `json:"collected_at"`
	GPU         GPU       `json:"gpu"`
	Host        Host      `json:"host"`
	Tool        Tool      `json:"tool"`
	Runner      Runner    `json:"runner"`
	Engine      Engine    `json:"engine"`
	// Notes are facts a reader must know (no nvidia-smi, CUDA version unreadable, ...).
	Notes []string `json:"notes,omitempty"`
}

// GPU is what nvidia-smi reported. Present is false when there is no nvidia-smi at all;
// a machine whose nvidia-smi fails is an error from Collect, never Present=false.
type GPU struct {
	Present bool   `json:"present"`
	Count   int    `json:"count"`
	Driver  string `json:"driver,omitempty"`
	// CUDA is the highest CUDA version the driver supports (nvidia-smi's <cuda_version>),
	// not the toolkit inside a container.
	CUDA    string   `json:"cuda,omitempty"`
	Devices []Device `json:"devices,omitempty"`
}

// Device is one GPU. The fields after ComputeCap come from `nvidia-smi -q -x` and are
// empty when that report is missing or lacks them.
type Device struct {
	Index        int     `json:"index"`
	Name         string  `json:"name,omitempty"`
	UUID         string  `json:"uuid,omitempty"`
	MemoryMiB    int64   `json:"memory_mib,omitempty"`
	ComputeCap   string  `json:"compute_cap,omitempty"`
	PCIBusID     string  `json:"pci_bus_id,omitempty"`
	Brand        string  `json:"brand,omitempty"`
	Architecture string  `json:"architecture,omitempty"`
	ECC          string  `json:"ecc,omitempty"`         // current ECC mode: Enabled | Disabled
	MIG          string  `json:"mig,omitempty"`         // current MIG mode: Enabled | Disabled
	Persistence  string  `json:"persistence,omitempty"` // persistence mode: Enabled | Disabled
	PowerLimitW  float64 `json:"power_limit_w,omitempty"`
}

// Host is the machine outside the GPUs.
type Host struct {
	OS        string `json:"os,omitempty"`     // /etc/os-release PRETTY_NAME
	Kernel    string `json:"kernel,omitempty"` // /proc/sys/kernel/osrelease
	CPU       string `json:"cpu,omitempty"`    // /proc/cpuinfo "model name"
	Cores     int    `json:"cores,omitempty"`  // logical CPUs usable by this process
	MemoryMiB int64  `json:"memory_mib,omitempty"`
	GOOS      string `json:"goos,omitempty"`
	GOARCH    string `json:"goarch,omitempty"`
}

// Tool is slogate itself.
type Tool struct {
	Version string `json:"version,omitempty"`
	Commit  string `json:"commit,omitempty"`
}

// Runner is the GitHub Actions runner, when there is one.
type Runner struct {
	Name       string `json:"name,omitempty"`
	OS         string `json:"os,omitempty"`
	Arch       string `json:"arch,omitempty"`
	RunID      string `json:"run_id,omitempty"`
	SHA        string `json:"sha,omitempty"`
	Repository string `json:"repository,omitempty"`
}

// Engine is what envinfo knows of the engine without talking to it.
type Engine struct {
	Image string `json:"image,omitempty"`
}

// Options are the sources Collect reads. A nil function means that source is absent
// (nil LookPath: no nvidia-smi; nil Getenv: an empty environment; nil ReadFile: no
// files), so a test that forgets a field never reaches the real machine. Use
// DefaultOptions for the real machine.
type Options struct {
	LookPath func(file string) (string, error)
	// Run runs a program and returns its standard output. On failure it returns a
	// non-nil error and, in the bytes, everything the program printed on both streams,
	// so the error can quote it.
	Run      func(ctx context.Context, name string, args ...string) ([]byte, error)
	Getenv   func(key string) string
	ReadFile func(path string) ([]byte, error)
	GOOS     string
	GOARCH   string
	NumCPU   int
	Now      func() time.Time

	ToolVersion string
	ToolCommit  string
	// EngineImage is the engine's container image; when empty, SLOGATE_ENGINE_IMAGE.
	EngineImage string
}

// CommandTimeout bounds each nvidia-smi call of the default runner: a GPU that fell off
// the bus makes nvidia-smi hang rather than fail.
const CommandTimeout = 10 * time.Second

// DefaultOptions reads the real machine. The tool version and commit default to the
// Go build information (module version, VCS revision with "-dirty" when the tree was
// modified); the command overrides them when it knows better.
func DefaultOptions() Options {
	o := Options{
		LookPath: exec.LookPath,
		Run:      runCommand,
		Getenv:   os.Getenv,
		ReadFile: os.ReadFile,
		GOOS:     runtime.GOOS,
		GOARCH:   runtime.GOARCH,
		NumCPU:   runtime.NumCPU(),
		Now:      time.Now,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		o.ToolVersion, o.ToolCommit = buildVersion(bi)
	}
	return o
}

func buildVersion(bi *debug.BuildInfo) (version, commit string) {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		version = v
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if commit != "" && modified {
		commit += "-dirty"
	}
	return version, commit
}

// runCommand is the real runner: stdout on success; stdout then stderr on failure.
func runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child that keeps the pipes open must not hold us past the deadline.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	out := append(stdout.Bytes(), stderr.Bytes()...)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out, fmt.Errorf("timed out after %s", CommandTimeout)
	}
	return out, err
}

// Collect describes the machine. Only a GPU stack that is present but broken is an
// error (nvidia-smi fails or prints what it should not); everything else that cannot be
// read is left unknown, with a note where a reader would want to know why.
func Collect(ctx context.Context, o Options) (*Env, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	e := &Env{}
	if o.Now != nil {
		e.CollectedAt = o.Now().UTC()
	}

	gpu, notes, err := collectGPU(ctx, o, getenv)
	if err != nil {
		return nil, err
	}
	e.GPU = gpu
	e.Notes = append(e.Notes, notes...)

	host, notes := collectHost(o)
	e.Host = host
	e.Notes = append(e.Notes, notes...)

	e.Tool = Tool{Version: o.ToolVersion, Commit: o.ToolCommit}
	e.Runner = Runner{
		Name:       getenv("RUNNER_NAME"),
		OS:         getenv("RUNNER_OS"),
		Arch:       getenv("RUNNER_ARCH"),
		RunID:      getenv("GITHUB_RUN_ID"),
		SHA:        getenv("GITHUB_SHA"),
		Repository: getenv("GITHUB_REPOSITORY"),
	}
	e.Engine.Image = o.EngineImage
	if e.Engine.Image == "" {
		e.Engine.Image = getenv("SLOGATE_ENGINE_IMAGE")
	}
	return e, nil
}
