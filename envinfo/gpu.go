package envinfo

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// queryFields are asked of `nvidia-smi --query-gpu`, in this order.
var queryFields = []string{"index", "name", "uuid", "driver_version", "memory.total", "compute_cap"}

func queryArgs(fields []string) []string {
	return []string{"--query-gpu=" + strings.Join(fields, ","), "--format=csv,noheader,nounits"}
}

// Output quoted in errors and notes is capped: nvidia-smi can print a whole table, and
// the message ends up in a PR comment.
const (
	maxQuotedOutput = 300
	maxQuotedLine   = 120
)

func collectGPU(ctx context.Context, o Options, getenv func(string) string) (GPU, []string, error) {
	var notes []string
	if o.LookPath == nil {
		return GPU{}, []string{"nvidia-smi not found: no GPU recorded"}, nil
	}
	path, err := o.LookPath("nvidia-smi")
	if err != nil {
		return GPU{}, []string{"nvidia-smi not found: no GPU recorded"}, nil
	}
	if o.Run == nil {
		return GPU{}, nil, errors.New("envinfo: nvidia-smi found but Options.Run is nil")
	}

	fields := queryFields
	out, err := o.Run(ctx, path, queryArgs(fields)...)
	if err != nil && bytes.Contains(out, []byte(`"compute_cap" is not a valid field`)) {
		// Drivers before 510 cannot report the compute capability; the rest is still
		// worth having.
		fields = queryFields[:len(queryFields)-1]
		out, err = o.Run(ctx, path, queryArgs(fields)...)
		notes = append(notes, "this NVIDIA driver cannot report the compute capability (nvidia-smi has no compute_cap field)")
	}
	if err != nil {
		return GPU{}, nil, commandError(path, queryArgs(fields), out, err)
	}
	devices, driver, err := parseQuery(out, fields)
	if err != nil {
		return GPU{}, nil, err
	}
	g := GPU{Present: true, Count: len(devices), Driver: driver, Devices: devices}

	// The CUDA version is only in the full report. Without it the run is still
	// measurable; gpu.cuda is then unknown and left out of drift, and a note says why.
	xout, err := o.Run(ctx, path, "-q", "-x")
	if err != nil {
		notes = append(notes, "CUDA version unknown: "+commandError(path, []string{"-q", "-x"}, xout, err).Error())
	} else if log, err := parseReport(xout); err != nil {
		notes = append(notes, "CUDA version unknown: nvidia-smi -q -x: "+err.Error())
	} else {
		g.CUDA = known(log.CUDAVersion)
		if g.Driver == "" {
			g.Driver = known(log.DriverVersion)
		}
		mergeReport(g.Devices, log.GPUs)
		if g.CUDA == "" {
			notes = append(notes, "CUDA version unknown: nvidia-smi -q -x has no <cuda_version>")
		}
	}

	for _, d := range g.Devices {
		if d.MIG == "Enabled" {
			notes = append(notes, fmt.Sprintf("MIG is enabled on GPU %d: engines see MIG slices, not the whole GPU", d.Index))
		}
	}
	if v := getenv("CUDA_VISIBLE_DEVICES"); v != "" {
		notes = append(notes, fmt.Sprintf("CUDA_VISIBLE_DEVICES=%q is set; gpu.count counts every GPU nvidia-smi lists", printable([]byte(v), maxQuotedLine)))
	}
	return g, notes, nil
}

// commandError says which command failed, how, and what it printed.
func commandError(path string, args []string, out []byte, err error) error {
	cmd := path + " " + strings.Join(args, " ")
	if p := printable(out, maxQuotedOutput); p != "" {
		return fmt.Errorf("%s failed (%v): it printed %q", cmd, err, p)
	}
	return fmt.Errorf("%s failed (%v) and printed nothing", cmd, err)
}

// parseQuery reads `--query-gpu ... --format=csv,noheader,nounits`: one line per GPU,
// fields separated by ", ".
func parseQuery(out []byte, fields []string) ([]Device, string, error) {
	var devices []Device
	var driver string
	for n, line := range strings.Split(string(out), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("nvidia-smi: unexpected output on line %d: %q (%s)", n+1, printable([]byte(line), maxQuotedLine), why)
		}
		parts := strings.Split(line, ",")
		if len(parts) != len(fields) {
			return nil, "", bad(fmt.Sprintf("expected %d comma-separated fields: %s", len(fields), strings.Join(fields, ", ")))
		}
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		var d Device
		idx, err := strconv.Atoi(parts[0])
		if err != nil || idx < 0 {
			return nil, "", bad(fmt.Sprintf("index %q is not a GPU index", parts[0]))
		}
		d.Index = idx
		d.Name = known(parts[1])
		d.UUID = known(parts[2])
		if v := known(parts[3]); v != "" && driver == "" {
			driver = v
		}
		if v := known(parts[4]); v != "" {
			mib, err := strconv.ParseInt(v, 10, 64)
			if err != nil || mib < 0 {
				return nil, "", bad(fmt.Sprintf("memory.total %q is not a number of MiB", v))
			}
			d.MemoryMiB = mib
		}
		if len(parts) > 5 {
			if v := known(parts[5]); v != "" {
				if !isComputeCap(v) {
					return nil, "", bad(fmt.Sprintf("compute_cap %q is not MAJOR.MINOR", v))
				}
				d.ComputeCap = v
			}
		}
		devices = append(devices, d)
	}
	if len(devices) == 0 {
		return nil, "", errors.New("nvidia-smi: --query-gpu printed no GPUs")
	}
	return devices, driver, nil
}

func isComputeCap(s string) bool {
	major, minor, ok := strings.Cut(s, ".")
	return ok && isDigits(major) && isDigits(minor)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// known returns "" for the placeholders nvidia-smi prints instead of a value.
func known(s string) string {
	s = strings.TrimSpace(s)
	switch strings.ToLower(strings.Trim(s, "[]")) {
	case "", "n/a", "not supported", "unknown error", "insufficient permissions",
		"not found", "requested functionality has been deprecated":
		return ""
	}
	return s
}

// smiLog is the part of `nvidia-smi -q -x` (nvsmi_device_v*.dtd) that is read. Older
// drivers put the power limit under <power_readings><power_limit>, newer ones under
// <gpu_power_readings><current_power_limit>.
type smiLog struct {
	XMLName       xml.Name `xml:"nvidia_smi_log"`
	DriverVersion string   `xml:"driver_version"`
	CUDAVersion   string   `xml:"cuda_version"`
	GPUs          []smiGPU `xml:"gpu"`
}

type smiGPU struct {
	BusID           string `xml:"id,attr"`
	ProductName     string `xml:"product_name"`
	Brand           string `xml:"product_brand"`
	Architecture    string `xml:"product_architecture"`
	UUID            string `xml:"uuid"`
	Persistence     string `xml:"persistence_mode"`
	MIG             string `xml:"mig_mode>current_mig"`
	ECC             string `xml:"ecc_mode>current_ecc"`
	PowerLimit      string `xml:"gpu_power_readings>current_power_limit"`
	PowerLimitOlder string `xml:"power_readings>power_limit"`
}

func parseReport(out []byte) (*smiLog, error) {
	var log smiLog
	if err := xml.Unmarshal(out, &log); err != nil {
		var p string
		if q := printable(out, maxQuotedLine); q != "" {
			p = fmt.Sprintf(" (it printed %q)", q)
		}
		return nil, fmt.Errorf("unreadable XML: %v%s", err, p)
	}
	return &log, nil
}

// mergeReport adds what only the XML report has to the devices from the query, matched
// by UUID, or by position when the report carries no UUIDs.
func mergeReport(devices []Device, gpus []smiGPU) {
	byUUID := make(map[string]*smiGPU, len(gpus))
	for i := range gpus {
		if u := known(gpus[i].UUID); u != "" {
			byUUID[u] = &gpus[i]
		}
	}
	for i := range devices {
		var x *smiGPU
		switch {
		case devices[i].UUID != "" && len(byUUID) > 0:
			x = byUUID[devices[i].UUID]
		case len(byUUID) == 0 && len(gpus) == len(devices):
			x = &gpus[i]
		}
		if x == nil {
			continue
		}
		d := &devices[i]
		d.PCIBusID = known(x.BusID)
		d.Brand = known(x.Brand)
		d.Architecture = known(x.Architecture)
		d.ECC = known(x.ECC)
		d.MIG = known(x.MIG)
		d.Persistence = known(x.Persistence)
		d.PowerLimitW = watts(x.PowerLimit)
		if d.PowerLimitW == 0 {
			d.PowerLimitW = watts(x.PowerLimitOlder)
		}
	}
}

// watts reads "700.00 W"; 0 when unknown.
func watts(s string) float64 {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "W"))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// printable makes program output safe to quote on one line: invalid UTF-8 replaced,
// control characters (a terminal escape's ESC included) dropped, whitespace runs
// collapsed to one space, and the result capped at max runes.
func printable(b []byte, max int) string {
	var sb strings.Builder
	n, space := 0, false
	for _, r := range strings.ToValidUTF8(string(b), "\uFFFD") {
		if unicode.IsSpace(r) {
			space = n > 0
			continue
		}
		if unicode.IsControl(r) {
			continue
		}
		if n >= max {
			sb.WriteString("…")
			break
		}
		if space {
			sb.WriteByte(' ')
			space = false
		}
		sb.WriteRune(r)
		n++
	}
	return sb.String()
}
