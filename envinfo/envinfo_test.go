package envinfo

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var fixedNow = time.Date(2024, 3, 11, 10, 12, 4, 0, time.UTC)

// hostFiles are a Linux host's files as envinfo reads them.
var hostFiles = map[string]string{
	"/etc/os-release": `PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
ID=ubuntu
`,
	"/proc/sys/kernel/osrelease": "5.15.0-101-generic\n",
	"/proc/cpuinfo": `processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 25
model		: 1
model name	: AMD EPYC 7763 64-Core Processor
stepping	: 1

processor	: 1
vendor_id	: AuthenticAMD
model name	: AMD EPYC 7763 64-Core Processor
`,
	"/proc/meminfo": "MemTotal:       2113642040 kB\nMemFree:        2080000000 kB\n",
}

func fakeReadFile(files map[string]string) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		s, ok := files[path]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
		}
		return []byte(s), nil
	}
}

func fakeGetenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

var runnerEnv = map[string]string{
	"RUNNER_NAME":       "gpu-h100-01",
	"RUNNER_OS":         "Linux",
	"RUNNER_ARCH":       "X64",
	"GITHUB_RUN_ID":     "8234567890",
	"GITHUB_SHA":        "4f1c2a9e0b7d3c5e8f6a1b2c3d4e5f60718293a4",
	"GITHUB_REPOSITORY": "acme/serving",
}

// testOptions is a fully fake machine; each test swaps in its GPU source.
func testOptions() Options {
	return Options{
		Getenv:      fakeGetenv(runnerEnv),
		ReadFile:    fakeReadFile(hostFiles),
		GOOS:        "linux",
		GOARCH:      "amd64",
		NumCPU:      128,
		Now:         func() time.Time { return fixedNow },
		ToolVersion: "v0.3.0",
		ToolCommit:  "9c2e4b1d7a3f5e6081924a3b5c7d9e0f1a2b3c4d",
		EngineImage: "vllm/vllm-openai:v0.6.3",
	}
}

func fixtureDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "nvidia-smi", name))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "nvidia-smi"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&0o111 == 0 {
		t.Fatalf("%s/nvidia-smi is not executable (chmod +x it)", dir)
	}
	return dir
}

// execOptions are the real exec path (DefaultOptions: exec.LookPath and the real runner)
// with PATH pointing at a fake nvidia-smi first, and the rest of the machine faked.
func execOptions(t *testing.T, pathDirs ...string) Options {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake nvidia-smi is a shell script")
	}
	t.Setenv("PATH", strings.Join(pathDirs, string(os.PathListSeparator)))
	d := DefaultOptions()
	o := testOptions()
	o.LookPath, o.Run = d.LookPath, d.Run
	return o
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, d)
	}
}

// TestCollectExec runs the fake nvidia-smi scripts through exec.LookPath and the real
// runner, as on a runner.
func TestCollectExec(t *testing.T) {
	sysPath := os.Getenv("PATH") // the scripts need cat and dirname

	t.Run("one-gpu", func(t *testing.T) {
		o := execOptions(t, fixtureDir(t, "one-gpu"), sysPath)
		e, err := Collect(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		want := GPU{Present: true, Count: 1, Driver: "550.54.15", CUDA: "12.4", Devices: []Device{{
			Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-5f3b1c2e-7a9d-4e61-b0c8-2d4e6f8a1b3c",
			MemoryMiB: 81559, ComputeCap: "9.0", PCIBusID: "00000000:18:00.0", Brand: "NVIDIA", Architecture: "Hopper",
			ECC: "Enabled", MIG: "Disabled", Persistence: "Enabled", PowerLimitW: 700,
		}}}
		if d := cmp.Diff(want, e.GPU); d != "" {
			t.Errorf("GPU (-want +got):\n%s", d)
		}
		if k := HardwareKey(e); k != "h100-80gb-hbm3-x1" {
			t.Errorf("HardwareKey = %q, want h100-80gb-hbm3-x1", k)
		}
		if len(e.Notes) != 0 {
			t.Errorf("notes = %q, want none", e.Notes)
		}
		golden(t, "one-gpu.env.golden.json", mustJSON(t, e))
	})

	t.Run("eight-gpus", func(t *testing.T) {
		o := execOptions(t, fixtureDir(t, "eight-gpus"), sysPath)
		e, err := Collect(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if e.GPU.Count != 8 || len(e.GPU.Devices) != 8 {
			t.Fatalf("count %d, devices %d, want 8", e.GPU.Count, len(e.GPU.Devices))
		}
		buses := []string{"07", "0F", "47", "4E", "87", "90", "B7", "BD"}
		for i, d := range e.GPU.Devices {
			// Every device got its own XML facts: matching by UUID, not all from GPU 0.
			if d.Index != i || d.Architecture != "Ampere" || d.PowerLimitW != 400 ||
				!strings.HasPrefix(d.UUID, fmt.Sprintf("GPU-%d", i)) || d.PCIBusID != "00000000:"+buses[i]+":00.0" {
				t.Errorf("device %d = %+v", i, d)
			}
		}
		if k := HardwareKey(e); k != "a100-sxm4-80gb-x8" {
			t.Errorf("HardwareKey = %q, want a100-sxm4-80gb-x8", k)
		}
		want := map[string]string{
			"gpu.name": "NVIDIA A100-SXM4-80GB", "gpu.count": "8", "gpu.memory_mib": "81920",
			"gpu.compute_cap": "8.0", "gpu.driver": "535.161.08", "gpu.cuda": "12.2",
		}
		flat := e.Flat()
		for k, v := range want {
			if flat[k] != v {
				t.Errorf("Flat()[%q] = %q, want %q", k, flat[k], v)
			}
		}
		golden(t, "eight-gpus.env.golden.json", mustJSON(t, e))
	})

	t.Run("missing", func(t *testing.T) {
		o := execOptions(t, t.TempDir())
		e, err := Collect(context.Background(), o)
		if err != nil {
			t.Fatalf("no nvidia-smi must not be an error: %v", err)
		}
		if e.GPU.Present || e.GPU.Count != 0 || len(e.GPU.Devices) != 0 {
			t.Errorf("GPU = %+v, want absent", e.GPU)
		}
		if !hasNote(e, "nvidia-smi not found") {
			t.Errorf("notes = %q, want one saying nvidia-smi was not found", e.Notes)
		}
		if k := HardwareKey(e); k != "cpu" {
			t.Errorf("HardwareKey = %q, want cpu", k)
		}
	})

	t.Run("garbage", func(t *testing.T) {
		o := execOptions(t, fixtureDir(t, "garbage"), sysPath)
		_, err := Collect(context.Background(), o)
		want := `nvidia-smi: unexpected output on line 1: "Mon Mar 11 10:12:03 2024" (expected 6 comma-separated fields: index, name, uuid, driver_version, memory.total, compute_cap)`
		if err == nil || err.Error() != want {
			t.Errorf("err = %v\nwant %s", err, want)
		}
	})

	t.Run("failing", func(t *testing.T) {
		dir := fixtureDir(t, "failing")
		o := execOptions(t, dir, sysPath)
		_, err := Collect(context.Background(), o)
		if err == nil {
			t.Fatal("nvidia-smi exiting 9 must be an error")
		}
		for _, s := range []string{
			filepath.Join(dir, "nvidia-smi") + " --query-gpu=index,name,uuid,driver_version,memory.total,compute_cap --format=csv,noheader,nounits",
			"exit status 9",
			`"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."`,
		} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q\ndoes not contain %q", err, s)
			}
		}
	})
}

func hasNote(e *Env, sub string) bool {
	for _, n := range e.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// fakeSMI is an injected runner answering the two nvidia-smi calls.
type fakeSMI struct {
	query    string
	queryErr error
	// legacy makes the six-field query fail as drivers before 510 do.
	legacy bool
	xml    string
	xmlErr error
	calls  []string
}

func (f *fakeSMI) run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, strings.Join(args, " "))
	if name != "/usr/bin/nvidia-smi" {
		return nil, fmt.Errorf("ran %q, not the path LookPath gave", name)
	}
	switch {
	case len(args) == 2 && args[0] == "-q" && args[1] == "-x":
		return []byte(f.xml), f.xmlErr
	case len(args) == 2 && strings.HasPrefix(args[0], "--query-gpu="):
		if f.legacy && strings.Contains(args[0], "compute_cap") {
			return []byte("Field \"compute_cap\" is not a valid field to query.\n\n"), errors.New("exit status 2")
		}
		return []byte(f.query), f.queryErr
	}
	return nil, fmt.Errorf("unexpected call %q", args)
}

func injected(f *fakeSMI) Options {
	o := testOptions()
	o.LookPath = func(file string) (string, error) { return "/usr/bin/" + file, nil }
	o.Run = f.run
	return o
}

const xmlH100 = `<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
	<driver_version>550.54.15</driver_version>
	<cuda_version>12.4</cuda_version>
	<gpu id="00000000:18:00.0">
		<product_name>NVIDIA H100 80GB HBM3</product_name>
		<uuid>GPU-aaaa</uuid>
		<mig_mode><current_mig>Enabled</current_mig></mig_mode>
	</gpu>
</nvidia_smi_log>
`

// TestCollectInjected covers what the fixtures do not, through the injected runner.
func TestCollectInjected(t *testing.T) {
	tests := []struct {
		name      string
		smi       fakeSMI
		getenv    map[string]string
		wantErr   string // substring; "" for success
		wantGPU   *GPU
		wantNote  string
		wantCalls int
		wantFlat  map[string]string // keys checked; "" means the key must be absent
	}{
		{
			// Some GPUs (vGPU, some SXM boards) print [N/A] for fields: unknown, not garbage.
			name: "n/a fields",
			smi:  fakeSMI{query: "0, NVIDIA H100 80GB HBM3, [N/A], [N/A], [N/A], [N/A]\n", xml: "<nvidia_smi_log><driver_version>550.54.15</driver_version><cuda_version>12.4</cuda_version></nvidia_smi_log>"},
			wantGPU: &GPU{Present: true, Count: 1, Driver: "550.54.15", CUDA: "12.4",
				Devices: []Device{{Index: 0, Name: "NVIDIA H100 80GB HBM3"}}},
			wantFlat: map[string]string{"gpu.memory_mib": "", "gpu.compute_cap": "", "gpu.driver": "550.54.15"},
		},
		{
			// A report without UUIDs (older drivers, some vGPU hosts) is matched by
			// position; drivers before 530 put the power limit under <power_readings>.
			name: "xml without uuids",
			smi: fakeSMI{query: "0, NVIDIA A100-PCIE-40GB, GPU-p, 470.82.01, 40536, 8.0\n",
				xml: `<nvidia_smi_log><cuda_version>11.4</cuda_version><gpu id="00000000:3B:00.0"><product_architecture>Ampere</product_architecture><ecc_mode><current_ecc>Disabled</current_ecc></ecc_mode><power_readings><power_limit>250.00 W</power_limit></power_readings></gpu></nvidia_smi_log>`},
			wantGPU: &GPU{Present: true, Count: 1, Driver: "470.82.01", CUDA: "11.4", Devices: []Device{{
				Index: 0, Name: "NVIDIA A100-PCIE-40GB", UUID: "GPU-p", MemoryMiB: 40536, ComputeCap: "8.0",
				PCIBusID: "00000000:3B:00.0", Architecture: "Ampere", ECC: "Disabled", PowerLimitW: 250,
			}}},
		},
		{
			// A mixed machine: every model named, sorted; distinct memory sizes in numeric order.
			name: "mixed models",
			smi: fakeSMI{query: "0, NVIDIA H100 80GB HBM3, GPU-b, 550.54.15, 81559, 9.0\n" +
				"1, NVIDIA GeForce RTX 4090, GPU-a, 550.54.15, 24564, 8.9\n" +
				"2, NVIDIA H100 80GB HBM3, GPU-c, 550.54.15, 81559, 9.0\n", xml: "<nvidia_smi_log><cuda_version>12.4</cuda_version></nvidia_smi_log>"},
			wantFlat: map[string]string{
				"gpu.name":        "NVIDIA GeForce RTX 4090+NVIDIA H100 80GB HBM3",
				"gpu.count":       "3",
				"gpu.memory_mib":  "24564+81559",
				"gpu.compute_cap": "8.9+9.0",
			},
		},
		{
			// Windows nvidia-smi ends lines with CRLF; a trailing blank line is not a GPU.
			name:     "crlf",
			smi:      fakeSMI{query: "0, NVIDIA L4, GPU-x, 551.61, 23034, 8.9\r\n\r\n", xml: xmlH100},
			wantFlat: map[string]string{"gpu.name": "NVIDIA L4", "gpu.compute_cap": "8.9", "gpu.cuda": "12.4"},
		},
		{
			// Drivers before 510 reject compute_cap: retry without it instead of failing.
			name:      "legacy driver",
			smi:       fakeSMI{legacy: true, query: "0, Tesla V100-SXM2-16GB, GPU-v, 470.82.01, 16160\n", xml: "<nvidia_smi_log><cuda_version>11.4</cuda_version></nvidia_smi_log>"},
			wantNote:  "cannot report the compute capability",
			wantCalls: 3,
			wantFlat:  map[string]string{"gpu.name": "Tesla V100-SXM2-16GB", "gpu.memory_mib": "16160", "gpu.compute_cap": "", "gpu.cuda": "11.4"},
		},
		{
			// The full report failing costs only the CUDA version, with a note quoting why.
			name:     "xml fails",
			smi:      fakeSMI{query: "0, NVIDIA H100 80GB HBM3, GPU-aaaa, 550.54.15, 81559, 9.0\n", xml: "Unable to determine the device handle for GPU0000:18:00.0: Unknown Error\n", xmlErr: errors.New("exit status 255")},
			wantNote: `CUDA version unknown: /usr/bin/nvidia-smi -q -x failed (exit status 255): it printed "Unable to determine the device handle for GPU0000:18:00.0: Unknown Error"`,
			wantFlat: map[string]string{"gpu.cuda": "", "gpu.driver": "550.54.15"},
		},
		{
			// An unreadable report: same as failing, and says what it printed.
			name:     "xml garbage",
			smi:      fakeSMI{query: "0, NVIDIA H100 80GB HBM3, GPU-aaaa, 550.54.15, 81559, 9.0\n", xml: "<nvidia_smi_log><gpu>"},
			wantNote: `CUDA version unknown: nvidia-smi -q -x: unreadable XML: XML syntax error on line 1: unexpected EOF (it printed "<nvidia_smi_log><gpu>")`,
			wantFlat: map[string]string{"gpu.cuda": ""},
		},
		{
			// MIG and CUDA_VISIBLE_DEVICES change what an engine sees without changing
			// what nvidia-smi lists: a reader must be told.
			name:     "mig and visible devices",
			smi:      fakeSMI{query: "0, NVIDIA H100 80GB HBM3, GPU-aaaa, 550.54.15, 81559, 9.0\n", xml: xmlH100},
			getenv:   map[string]string{"CUDA_VISIBLE_DEVICES": "0"},
			wantNote: "MIG is enabled on GPU 0",
		},
		{
			// Exit 0 with nothing printed is not "no GPU": nvidia-smi is there and broken.
			name:    "empty output",
			smi:     fakeSMI{query: ""},
			wantErr: "nvidia-smi: --query-gpu printed no GPUs",
		},
		{
			// A structurally valid line with a nonsense index is still garbage.
			name:    "bad index",
			smi:     fakeSMI{query: "GPU0, NVIDIA H100 80GB HBM3, GPU-a, 550.54.15, 81559, 9.0\n"},
			wantErr: `nvidia-smi: unexpected output on line 1: "GPU0, NVIDIA H100 80GB HBM3, GPU-a, 550.54.15, 81559, 9.0" (index "GPU0" is not a GPU index)`,
		},
		{
			// Memory in the wrong unit (someone dropped nounits) must not parse as MiB.
			name:    "memory with units",
			smi:     fakeSMI{query: "0, NVIDIA H100 80GB HBM3, GPU-a, 550.54.15, 81559 MiB, 9.0\n"},
			wantErr: `(memory.total "81559 MiB" is not a number of MiB)`,
		},
		{
			// The second line is the bad one: the line number says so.
			name:    "bad second line",
			smi:     fakeSMI{query: "0, NVIDIA H100 80GB HBM3, GPU-a, 550.54.15, 81559, 9.0\n1, NVIDIA H100 80GB HBM3\n"},
			wantErr: `unexpected output on line 2: "1, NVIDIA H100 80GB HBM3"`,
		},
		{
			// Terminal escapes and a huge dump are stripped and capped before quoting.
			name:    "noisy failure",
			smi:     fakeSMI{query: "\x1b[31mFailed to initialize NVML: Driver/library version mismatch\x1b[0m\n" + strings.Repeat("x", 5000), queryErr: errors.New("exit status 18")},
			wantErr: `failed (exit status 18): it printed "[31mFailed to initialize NVML: Driver/library version mismatch[0m xxx`,
		},
		{
			// A failure that printed nothing says so rather than quoting "".
			name:    "silent failure",
			smi:     fakeSMI{queryErr: errors.New("signal: killed")},
			wantErr: "failed (signal: killed) and printed nothing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.smi
			o := injected(&f)
			if tt.getenv != nil {
				o.Getenv = fakeGetenv(tt.getenv)
			}
			e, err := Collect(context.Background(), o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %s", err, tt.wantErr)
				}
				if n := len([]rune(err.Error())); n > 600 {
					t.Errorf("error is %d characters long; quoted output must be capped", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantGPU != nil {
				if d := cmp.Diff(*tt.wantGPU, e.GPU); d != "" {
					t.Errorf("GPU (-want +got):\n%s", d)
				}
			}
			if tt.wantNote != "" && !hasNote(e, tt.wantNote) {
				t.Errorf("notes = %q, want one containing %q", e.Notes, tt.wantNote)
			}
			if tt.wantCalls != 0 && len(f.calls) != tt.wantCalls {
				t.Errorf("calls = %q, want %d", f.calls, tt.wantCalls)
			}
			flat := e.Flat()
			for k, v := range tt.wantFlat {
				got, ok := flat[k]
				if v == "" && ok {
					t.Errorf("Flat()[%q] = %q, want the key absent", k, got)
				} else if v != "" && got != v {
					t.Errorf("Flat()[%q] = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestCollectVisibleDevicesNote(t *testing.T) {
	f := fakeSMI{query: "0, NVIDIA L4, GPU-x, 551.61, 23034, 8.9\n", xml: "<nvidia_smi_log/>"}
	o := injected(&f)
	o.Getenv = fakeGetenv(map[string]string{"CUDA_VISIBLE_DEVICES": "1,2"})
	e, err := Collect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(e, `CUDA_VISIBLE_DEVICES="1,2" is set`) {
		t.Errorf("notes = %q", e.Notes)
	}
	// An XML report without <cuda_version> (very old drivers) leaves CUDA unknown, noted.
	if !hasNote(e, "has no <cuda_version>") || e.GPU.CUDA != "" {
		t.Errorf("CUDA %q, notes = %q", e.GPU.CUDA, e.Notes)
	}
}

func TestRunCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses /bin/sh")
	}
	out, err := runCommand(context.Background(), "/bin/sh", "-c", "echo out; echo err >&2")
	if err != nil || string(out) != "out\n" {
		t.Errorf("success: out %q err %v; want stdout only", out, err)
	}
	// On failure both streams come back, so the error can quote what went wrong.
	out, err = runCommand(context.Background(), "/bin/sh", "-c", "echo out; echo err >&2; exit 3")
	if err == nil || err.Error() != "exit status 3" || string(out) != "out\nerr\n" {
		t.Errorf("failure: out %q err %v; want both streams and exit status 3", out, err)
	}
}

func TestHost(t *testing.T) {
	tests := []struct {
		name     string
		goos     string
		files    map[string]string
		want     Host
		wantNote string
	}{
		{
			// The usual Ubuntu runner.
			name:  "linux",
			goos:  "linux",
			files: hostFiles,
			want: Host{OS: "Ubuntu 22.04.4 LTS", Kernel: "5.15.0-101-generic", CPU: "AMD EPYC 7763 64-Core Processor",
				Cores: 8, MemoryMiB: 2064103, GOOS: "linux", GOARCH: "amd64"},
		},
		{
			// os-release allows single quotes and backslash escapes; arm64 cpuinfo has no
			// model name, so the CPU stays unknown rather than guessed.
			name: "arm64 quoting",
			goos: "linux",
			files: map[string]string{
				"/etc/os-release":            "NAME='Rocky'\nPRETTY_NAME='Rocky Linux 9.3 (Blue Onyx)'\n",
				"/proc/sys/kernel/osrelease": "5.14.0-362.el9.aarch64",
				"/proc/cpuinfo":              "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n",
				"/proc/meminfo":              "MemTotal:       1048576 kB\n",
			},
			want: Host{OS: "Rocky Linux 9.3 (Blue Onyx)", Kernel: "5.14.0-362.el9.aarch64", Cores: 8, MemoryMiB: 1024, GOOS: "linux", GOARCH: "amd64"},
		},
		{
			// Escaped quotes inside a double-quoted value.
			name:  "escaped",
			goos:  "linux",
			files: map[string]string{"/etc/os-release": `PRETTY_NAME="Debian \"bookworm\" 12"` + "\n", "/proc/sys/kernel/osrelease": "6.1.0", "/proc/cpuinfo": "", "/proc/meminfo": "MemTotal: 12 MB\n"},
			want:  Host{OS: `Debian "bookworm" 12`, Kernel: "6.1.0", Cores: 8, GOOS: "linux", GOARCH: "amd64"},
		},
		{
			// A Linux container without /etc/os-release: unknown, and said.
			name:     "linux missing files",
			goos:     "linux",
			files:    map[string]string{"/proc/sys/kernel/osrelease": "6.8.0-1015-aws\n"},
			want:     Host{Kernel: "6.8.0-1015-aws", Cores: 8, GOOS: "linux", GOARCH: "amd64"},
			wantNote: "host facts unknown: cannot read /etc/os-release, /proc/cpuinfo, /proc/meminfo",
		},
		{
			// macOS has none of these files, and that is not worth a note.
			name:  "darwin",
			goos:  "darwin",
			files: map[string]string{},
			want:  Host{Cores: 8, GOOS: "darwin", GOARCH: "amd64"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{ReadFile: fakeReadFile(tt.files), GOOS: tt.goos, GOARCH: "amd64", NumCPU: 8}
			e, err := Collect(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, e.Host); d != "" {
				t.Errorf("Host (-want +got):\n%s", d)
			}
			if tt.wantNote != "" && !hasNote(e, tt.wantNote) {
				t.Errorf("notes = %q, want %q", e.Notes, tt.wantNote)
			}
			if tt.wantNote == "" && hasNote(e, "host facts") {
				t.Errorf("unexpected note: %q", e.Notes)
			}
		})
	}
}

func TestRunnerAndImage(t *testing.T) {
	o := testOptions()
	o.Getenv = fakeGetenv(map[string]string{
		"RUNNER_NAME": "gpu-a100-07", "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64",
		"GITHUB_RUN_ID": "42", "GITHUB_SHA": "abc", "GITHUB_REPOSITORY": "acme/serving",
		"SLOGATE_ENGINE_IMAGE": "from-env:1",
	})
	e, err := Collect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	want := Runner{Name: "gpu-a100-07", OS: "Linux", Arch: "X64", RunID: "42", SHA: "abc", Repository: "acme/serving"}
	if d := cmp.Diff(want, e.Runner); d != "" {
		t.Errorf("Runner (-want +got):\n%s", d)
	}
	// The image handed in wins over the environment.
	if e.Engine.Image != "vllm/vllm-openai:v0.6.3" {
		t.Errorf("image = %q, want the one from Options", e.Engine.Image)
	}
	o.EngineImage = ""
	if e, _ = Collect(context.Background(), o); e.Engine.Image != "from-env:1" {
		t.Errorf("image = %q, want SLOGATE_ENGINE_IMAGE's", e.Engine.Image)
	}
	if !e.CollectedAt.Equal(fixedNow) {
		t.Errorf("CollectedAt = %v, want the injected clock's %v", e.CollectedAt, fixedNow)
	}
}

// TestZeroOptions: nil sources mean absent, never the real machine.
func TestZeroOptions(t *testing.T) {
	e, err := Collect(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"gpu.name": "none", "gpu.count": "0"}
	if d := cmp.Diff(want, e.Flat()); d != "" {
		t.Errorf("Flat (-want +got):\n%s", d)
	}
}

func TestFlat(t *testing.T) {
	full := &Env{
		GPU: GPU{Present: true, Count: 2, Driver: "550.54.15", CUDA: "12.4", Devices: []Device{
			{Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-a", MemoryMiB: 81559, ComputeCap: "9.0"},
			{Index: 1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-b", MemoryMiB: 81559, ComputeCap: "9.0"},
		}},
		Host:   Host{OS: "Ubuntu 22.04.4 LTS", Kernel: "5.15.0-101-generic", CPU: "AMD EPYC 7763 64-Core Processor", Cores: 128, MemoryMiB: 2064103},
		Tool:   Tool{Version: "v0.3.0", Commit: "9c2e4b1"},
		Runner: Runner{Name: "gpu-h100-01", OS: "Linux", Arch: "X64", RunID: "1", SHA: "abc", Repository: "acme/serving"},
		Engine: Engine{Image: "vllm/vllm-openai:v0.6.3"},
	}
	tests := []struct {
		name string
		env  *Env
		want map[string]string
	}{
		{
			// Every key known: exactly these keys, nothing run-specific (UUIDs, run id, SHA).
			name: "full",
			env:  full,
			want: map[string]string{
				"gpu.name": "NVIDIA H100 80GB HBM3", "gpu.count": "2", "gpu.memory_mib": "81559",
				"gpu.compute_cap": "9.0", "gpu.driver": "550.54.15", "gpu.cuda": "12.4",
				"host.os": "Ubuntu 22.04.4 LTS", "host.kernel": "5.15.0-101-generic",
				"host.cpu": "AMD EPYC 7763 64-Core Processor", "host.cores": "128",
				"tool.version": "v0.3.0", "tool.commit": "9c2e4b1",
				"runner.name": "gpu-h100-01", "runner.os": "Linux", "engine.image": "vllm/vllm-openai:v0.6.3",
			},
		},
		{
			// No GPU: an explicit none/0, so a GPU baseline against a CPU run shows drift.
			name: "no gpu",
			env:  &Env{Host: Host{Cores: 4}},
			want: map[string]string{"gpu.name": "none", "gpu.count": "0", "host.cores": "4"},
		},
		{
			// One device of two without memory: the key goes, a partial set would look
			// like drift.
			name: "partly unknown",
			env: &Env{GPU: GPU{Present: true, Count: 2, Devices: []Device{
				{Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, ComputeCap: "9.0"},
				{Index: 1, Name: "NVIDIA H100 80GB HBM3", ComputeCap: "9.0"},
			}}},
			want: map[string]string{"gpu.name": "NVIDIA H100 80GB HBM3", "gpu.count": "2", "gpu.compute_cap": "9.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, tt.env.Flat()); d != "" {
				t.Errorf("Flat (-want +got):\n%s", d)
			}
		})
	}
}

func gpus(name string, n int) *Env {
	e := &Env{GPU: GPU{Present: true, Count: n}}
	for i := range n {
		e.GPU.Devices = append(e.GPU.Devices, Device{Index: i, Name: name})
	}
	return e
}

func TestHardwareKey(t *testing.T) {
	mixed := gpus("NVIDIA H100 80GB HBM3", 1)
	mixed.GPU.Devices = append(mixed.GPU.Devices, gpus("NVIDIA A100-SXM4-80GB", 2).GPU.Devices...)
	tests := []struct {
		name string
		env  *Env
		want string
	}{
		// Spaces become dashes; the memory class is already in the name.
		{"h100", gpus("NVIDIA H100 80GB HBM3", 1), "h100-80gb-hbm3-x1"},
		// Dashes are kept, the count says eight.
		{"a100 x8", gpus("NVIDIA A100-SXM4-40GB", 8), "a100-sxm4-40gb-x8"},
		// No memory class is invented when the name has none.
		{"h200", gpus("NVIDIA H200", 1), "h200-x1"},
		// A consumer card keeps its brand words.
		{"rtx 4090", gpus("NVIDIA GeForce RTX 4090", 1), "geforce-rtx-4090-x1"},
		// Only the NVIDIA prefix is dropped; older names start with Tesla.
		{"tesla", gpus("Tesla V100-SXM2-16GB", 4), "tesla-v100-sxm2-16gb-x4"},
		// Runs of punctuation collapse to one dash, and none is left at the ends.
		{"punctuation", gpus("  NVIDIA RTX 6000 Ada Generation (rev. 2)  ", 2), "rtx-6000-ada-generation-rev-2-x2"},
		// The prefix check ignores case, since names are lower-cased anyway.
		{"lowercase prefix", gpus("nvidia L40S", 1), "l40s-x1"},
		// Mixed models: each model with its count, sorted, joined with +.
		{"mixed", mixed, "a100-sxm4-80gb-x2+h100-80gb-hbm3-x1"},
		// nvidia-smi printed [N/A] for the name: still a usable, honest file name.
		{"unknown name", gpus("", 1), "unknown-gpu-x1"},
		// No GPU at all.
		{"cpu", &Env{}, "cpu"},
		// A nil Env is a caller's mistake, but it must not panic.
		{"nil", nil, "cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HardwareKey(tt.env); got != tt.want {
				t.Errorf("HardwareKey = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPrintable(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		// Newlines and tabs become single spaces; ends are trimmed.
		{"whitespace", "  a\n\n\tb  \r\n", 100, "a b"},
		// Escape and NUL are dropped.
		{"controls", "\x1b[1mbold\x00", 100, "[1mbold"},
		// Invalid UTF-8 is replaced, not passed on.
		{"invalid utf8", "a\xffb", 100, "a\uFFFDb"},
		// The cap counts runes and marks the cut.
		{"cap", "héllo wörld", 5, "héllo…"},
		// Exactly at the cap: no mark.
		{"at cap", "hello", 5, "hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := printable([]byte(tt.in), tt.max); got != tt.want {
				t.Errorf("printable(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestBuildVersion(t *testing.T) {
	tests := []struct {
		name        string
		bi          debug.BuildInfo
		wantVersion string
		wantCommit  string
	}{
		// go install module@v0.3.0 from a clean tree.
		{"release", debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}}, "v0.3.0", "abc"},
		// A local build: "(devel)" is not a version; a modified tree is marked dirty.
		{"devel dirty", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}}, "", "abc-dirty"},
		// Built without VCS stamping (-buildvcs=false): nothing is made up.
		{"no vcs", debug.BuildInfo{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, c := buildVersion(&tt.bi)
			if v != tt.wantVersion || c != tt.wantCommit {
				t.Errorf("buildVersion = %q, %q; want %q, %q", v, c, tt.wantVersion, tt.wantCommit)
			}
		})
	}
}
