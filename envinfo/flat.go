package envinfo

import (
	"sort"
	"strconv"
	"strings"
)

// Flat keys, as compared for drift and named in a workload's drift policy.
const (
	KeyGPUName       = "gpu.name"
	KeyGPUCount      = "gpu.count"
	KeyGPUMemoryMiB  = "gpu.memory_mib"
	KeyGPUComputeCap = "gpu.compute_cap"
	KeyGPUDriver     = "gpu.driver"
	KeyGPUCUDA       = "gpu.cuda"
	KeyHostOS        = "host.os"
	KeyHostKernel    = "host.kernel"
	KeyHostCPU       = "host.cpu"
	KeyHostCores     = "host.cores"
	KeyToolVersion   = "tool.version"
	KeyToolCommit    = "tool.commit"
	KeyRunnerName    = "runner.name"
	KeyRunnerOS      = "runner.os"
	KeyEngineImage   = "engine.image"
)

// NoGPU is gpu.name on a machine without nvidia-smi.
const NoGPU = "none"

// Flat returns the environment as flat, stable keys for drift. A key whose value is
// unknown is left out, so drift compares only what both sides know: a baseline recorded
// where /etc/os-release was unreadable does not report host.os as changed.
//
// Per-device values (gpu.name, gpu.memory_mib, gpu.compute_cap) are the distinct values
// over all GPUs, sorted and joined with "+": one model gives "NVIDIA H100 80GB HBM3", a
// mixed machine "NVIDIA A100-SXM4-80GB+NVIDIA H100 80GB HBM3". Such a key is left out
// when any GPU does not know its value, since a partial set would look like a change.
// Without a GPU: gpu.name "none" and gpu.count "0", and no other gpu.* key.
//
// Run-specific values (UUIDs, run id, commit SHA under test) are in Env but never in
// Flat: they differ every time and would drown real drift.
func (e *Env) Flat() map[string]string {
	m := make(map[string]string)
	put := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	if !e.GPU.Present {
		m[KeyGPUName] = NoGPU
		m[KeyGPUCount] = "0"
	} else {
		m[KeyGPUCount] = strconv.Itoa(e.GPU.Count)
		put(KeyGPUName, distinct(e.GPU.Devices, func(d Device) string { return d.Name }, false))
		put(KeyGPUMemoryMiB, distinct(e.GPU.Devices, func(d Device) string {
			if d.MemoryMiB <= 0 {
				return ""
			}
			return strconv.FormatInt(d.MemoryMiB, 10)
		}, true))
		put(KeyGPUComputeCap, distinct(e.GPU.Devices, func(d Device) string { return d.ComputeCap }, true))
		put(KeyGPUDriver, e.GPU.Driver)
		put(KeyGPUCUDA, e.GPU.CUDA)
	}
	put(KeyHostOS, e.Host.OS)
	put(KeyHostKernel, e.Host.Kernel)
	put(KeyHostCPU, e.Host.CPU)
	if e.Host.Cores > 0 {
		m[KeyHostCores] = strconv.Itoa(e.Host.Cores)
	}
	put(KeyToolVersion, e.Tool.Version)
	put(KeyToolCommit, e.Tool.Commit)
	put(KeyRunnerName, e.Runner.Name)
	put(KeyRunnerOS, e.Runner.OS)
	put(KeyEngineImage, e.Engine.Image)
	return m
}

// distinct joins the sorted distinct values of f over devices with "+"; "" when any
// device's value is unknown. numeric orders by value first, so that compute
// capabilities read "8.9+10.0" and memory sizes "24564+81559", not by their text.
func distinct(devices []Device, f func(Device) string, numeric bool) string {
	seen := make(map[string]bool)
	var vals []string
	for _, d := range devices {
		v := f(d)
		if v == "" {
			return ""
		}
		if !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	sort.Slice(vals, func(i, j int) bool {
		if numeric {
			a, errA := strconv.ParseFloat(vals[i], 64)
			b, errB := strconv.ParseFloat(vals[j], 64)
			if errA == nil && errB == nil && a != b {
				return a < b
			}
		}
		return vals[i] < vals[j]
	})
	return strings.Join(vals, "+")
}

// HardwareKey is the normalised hardware id that names a baseline file
// (baselines/<workload>/<hardware>.json): the GPU model lower-cased, without the
// "NVIDIA " prefix, every run of other characters than a-z and 0-9 turned into one "-",
// then "-x" and the count. "NVIDIA H100 80GB HBM3" ×1 gives "h100-80gb-hbm3-x1".
//
// The memory size is not added when the name lacks it ("NVIDIA H200" gives "h200-x1"):
// the model name already identifies the part, and memory.total moves with the driver
// and the ECC mode, which would split one machine's baselines over several files.
// A mixed machine joins each model's key, sorted, with "+"
// ("a100-sxm4-80gb-x2+h100-80gb-hbm3-x1"). No GPU gives "cpu"; a GPU whose name
// nvidia-smi would not tell gives "unknown-gpu".
func HardwareKey(e *Env) string {
	if e == nil || !e.GPU.Present || len(e.GPU.Devices) == 0 {
		return "cpu"
	}
	counts := make(map[string]int)
	for _, d := range e.GPU.Devices {
		counts[normalizeModel(d.Name)]++
	}
	keys := make([]string, 0, len(counts))
	for m, n := range counts {
		keys = append(keys, m+"-x"+strconv.Itoa(n))
	}
	sort.Strings(keys)
	return strings.Join(keys, "+")
}

func normalizeModel(name string) string {
	name = strings.TrimSpace(name)
	if len(name) >= 7 && strings.EqualFold(name[:7], "nvidia ") {
		name = name[7:]
	}
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && sb.Len() > 0 {
				sb.WriteByte('-')
			}
			dash = false
			sb.WriteRune(r)
			continue
		}
		dash = true
	}
	if sb.Len() == 0 {
		return "unknown-gpu"
	}
	return sb.String()
}
