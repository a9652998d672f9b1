package envinfo

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// Host files, read through Options.ReadFile.
const (
	osReleasePath = "/etc/os-release"
	kernelPath    = "/proc/sys/kernel/osrelease"
	cpuinfoPath   = "/proc/cpuinfo"
	meminfoPath   = "/proc/meminfo"
)

// collectHost reads what Linux exposes. Elsewhere the files do not exist and the fields
// stay unknown without a note: that is expected, not a problem.
func collectHost(o Options) (Host, []string) {
	h := Host{Cores: o.NumCPU, GOOS: o.GOOS, GOARCH: o.GOARCH}
	if h.Cores < 0 {
		h.Cores = 0
	}
	if o.ReadFile == nil {
		return h, nil
	}
	var missing []string
	read := func(path string) []byte {
		b, err := o.ReadFile(path)
		if err != nil {
			missing = append(missing, path)
			return nil
		}
		return b
	}
	if b := read(osReleasePath); b != nil {
		h.OS = osRelease(b)
	}
	if b := read(kernelPath); b != nil {
		h.Kernel = printable(b, maxQuotedLine)
	}
	if b := read(cpuinfoPath); b != nil {
		h.CPU = cpuModel(b)
	}
	if b := read(meminfoPath); b != nil {
		h.MemoryMiB = memTotalMiB(b)
	}
	var notes []string
	if o.GOOS == "linux" && len(missing) > 0 {
		notes = append(notes, "host facts unknown: cannot read "+strings.Join(missing, ", "))
	}
	return h, notes
}

// osRelease returns PRETTY_NAME from os-release(5), which is shell-quoted.
func osRelease(b []byte) string {
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || k != "PRETTY_NAME" {
			continue
		}
		return printable([]byte(unquoteShell(v)), maxQuotedLine)
	}
	return ""
}

func unquoteShell(v string) string {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return v[1 : len(v)-1]
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
		var sb strings.Builder
		for i := 0; i < len(v); i++ {
			if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("\\\"$`", v[i+1]) >= 0 {
				i++
			}
			sb.WriteByte(v[i])
		}
		return sb.String()
	}
	return v
}

// cpuModel returns the first "model name" of /proc/cpuinfo. arm64 kernels often have
// none; the CPU is then unknown rather than guessed from part numbers.
func cpuModel(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return printable([]byte(v), maxQuotedLine)
		}
	}
	return ""
}

// memTotalMiB reads "MemTotal:  65845632 kB" from /proc/meminfo.
func memTotalMiB(b []byte) int64 {
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "MemTotal" {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return 0
		}
		return kb / 1024
	}
	return 0
}
