package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/slogate/slogate/internal/fsafe"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Valid values of the enumerations of the file. They are listed in error messages in this
// order, so keep them in the order a reader would expect.
var (
	validAPIs         = []string{"chat", "completions"}
	validEngines      = []string{"auto", "vllm", "sglang", "tgi", "trtllm", "llamacpp", "ollama", "sim", "openai"}
	validProcesses    = []string{ArrivalConstant, ArrivalPoisson, ArrivalGamma, ArrivalTrace, ArrivalClosed}
	validThinkDists   = []string{"fixed", "exponential"}
	validDists        = []string{DistFixed, DistUniform, DistLognormal, DistEmpirical}
	validPrefixModes  = []string{PrefixCold, PrefixShared, PrefixRAG, PrefixWarm}
	validTraceFormats = []string{TraceOffsets, TraceMooncake, TraceAzure, TraceBurstGPT}
	validSLOMetrics   = []string{"ttft", "tpot", "itl", "e2e"}
	validDirections   = []string{"higher", "lower"}
	validPolicies     = []string{"expected", "warn", "fail", "ignore"}
	validMissing      = []string{"fail", "allow", "warn"}
)

var topKeys = []string{"version", "target", "model", "workloads", "gate", "capacity"}

// percentileKeys maps the accepted SLO percentile keys to percentiles.
var percentileKeys = []struct {
	key string
	p   float64
}{
	{"p50", 50}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p999", 99.9}, {"p99.9", 99.9},
}

// distKeys are the keys each length distribution accepts, so that a key that belongs to
// another distribution (p95 on a uniform) is reported instead of silently ignored.
var distKeys = map[string][]string{
	DistFixed:     {"dist", "value"},
	DistUniform:   {"dist", "min", "max"},
	DistLognormal: {"dist", "p50", "p95", "max", "min"},
	DistEmpirical: {"dist", "values", "file", "max"},
}

// Defaults of the file; docs/workload.md lists the same values.
const (
	defaultAPI             = "chat"
	defaultEngine          = "auto"
	defaultMetricsInterval = time.Second
	defaultReadyTimeout    = 20 * time.Minute
	defaultSleepTimeout    = 2 * time.Minute
	defaultWakeTimeout     = 10 * time.Minute
	defaultSleepLevel      = 1
	defaultTimeout         = 120 * time.Second
	defaultAttainment      = 0.99
	defaultBurstiness      = 1
	defaultThinkDist       = "fixed"
	defaultRepeats         = 1
	defaultSeed            = 1
	defaultBaselines       = "baselines"
	defaultMissing         = "fail"
	defaultResamples       = 2000
	defaultConfidence      = 0.95
	defaultGateSeed        = 1
	defaultGPUMemUtil      = 0.9
	defaultBlockSize       = 16
	defaultTensorParallel  = 1
	defaultSharedTokens    = 512
	defaultSharedGroups    = 1
	defaultBlockTokens     = 512
)

// maxFileErrors caps the errors reported from one trace or lengths file: a file of the
// wrong kind would otherwise bury the config's own errors under thousands of lines.
const maxFileErrors = 10

// Load reads and checks a workload file. On any problem it returns Errors holding every
// problem of the file (and of the trace and length files it names), in file order.
func Load(path string) (*File, error) {
	data, err := ReadLimited(path, MaxConfigBytes)
	if err != nil {
		return nil, Errors{{File: path, Msg: "cannot read: " + ioReason(err)}}
	}
	return Parse(path, data)
}

// Size limits of the files a config reads. A config is a page of YAML and a trace or a
// lengths file holds at most a schedule's worth of lines (MaxScheduledRequests); the
// limits keep a wrong path (/dev/zero, a model file) from exhausting memory.
const (
	MaxConfigBytes   = 4 << 20
	MaxDataFileBytes = 64 << 20
)

// ReadLimited reads a regular file of at most limit bytes. Devices, FIFOs and
// directories are refused before they are opened (a FIFO would block the open, a
// device never ends).
func ReadLimited(path string, limit int64) ([]byte, error) {
	data, err := fsafe.ReadLimited(path, limit)
	var nr *fsafe.NotRegularError
	var tl *fsafe.TooLargeError
	switch {
	case errors.As(err, &nr):
		return nil, fmt.Errorf("not a regular file: %s", fsafe.Kind(nr.Mode))
	case errors.As(err, &tl) && tl.Size >= 0:
		return nil, fmt.Errorf("%d bytes, over the limit of %d bytes (%d MiB)", tl.Size, limit, limit>>20)
	case errors.As(err, &tl):
		return nil, fmt.Errorf("over the limit of %d bytes (%d MiB)", limit, limit>>20)
	}
	return data, err
}

// Parse checks a workload file held in memory. name is used in error messages and in
// File.Path; relative trace and length files are resolved against its directory and read.
func Parse(name string, data []byte) (*File, error) {
	d := &decoder{
		name:     name,
		dir:      filepath.Dir(name),
		readFile: func(p string) ([]byte, error) { return ReadLimited(p, MaxDataFileBytes) },
		nodes:    map[string]*yaml.Node{},
		keys:     map[string]*yaml.Node{},
		bad:      map[string]bool{},
		lengths:  map[string]LengthDist{},
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil && err != io.EOF {
		return nil, d.syntaxError(err)
	}
	f := d.file(&root)
	// A second document ("---") would be silently ignored by a plain unmarshal.
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		d.errorf(&extra, "a workload file holds one YAML document; a second one starts here")
	} else if err != io.EOF {
		return nil, d.syntaxError(err)
	}
	d.validate(f)
	if len(d.errs) > 0 {
		return nil, d.errors()
	}
	for i := range f.Workloads {
		inheritClasses(&f.Workloads[i])
	}
	return f, nil
}

// decoder walks the YAML tree by hand: yaml.v3's struct decoding stops at the first
// problem and cannot say which keys were unknown, where, or which were given.
type decoder struct {
	name     string
	dir      string
	readFile func(string) ([]byte, error)
	errs     []pendingError
	seq      int
	// nodes holds the value node of every key given in the file (null values excluded),
	// by path ("workloads[0].arrival.rate"): validation uses it for presence and positions.
	nodes map[string]*yaml.Node
	// keys holds the key node of the same paths, for problems with the key's presence
	// ("does not apply", "exclusive") rather than with its value.
	keys map[string]*yaml.Node
	// bad marks paths whose value was already reported as malformed, so that validation
	// does not add a second, confusing error about the zero value left behind.
	bad map[string]bool
	// lengths holds every decoded length distribution by path, for validation.
	lengths map[string]LengthDist
	// visits counts the mappings and lists walked. Aliases make a small file expand into
	// a huge tree (a list of aliases to lists of aliases); the walk stops at maxVisits.
	visits int
}

// maxVisits bounds the work of one file; real files walk a few hundred mappings.
const maxVisits = 10_000

// maxErrors bounds the report: past it, more lines help nobody fix the file.
const maxErrors = 200

// visit counts one mapping or list and reports, once, when the budget is spent.
func (d *decoder) visit(n *yaml.Node) bool {
	d.visits++
	if d.visits == maxVisits+1 {
		d.errorf(n, "the file expands to more than %d mappings and lists (through YAML aliases?); stopped reading here", maxVisits)
	}
	return d.visits <= maxVisits
}

// pendingError is an Error with the position it sorts at: errors inside a trace or
// lengths file sort at the key that names the file.
type pendingError struct {
	Error
	sortLine, sortCol, seq int
}

func (d *decoder) add(e Error, sortLine, sortCol int) {
	d.seq++
	d.errs = append(d.errs, pendingError{e, sortLine, sortCol, d.seq})
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	line, col := 1, 1
	if n != nil {
		line, col = n.Line, n.Column
	}
	d.add(Error{File: d.name, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}, line, col)
}

func (d *decoder) errors() Errors {
	sort.SliceStable(d.errs, func(i, j int) bool {
		a, b := d.errs[i], d.errs[j]
		if a.sortLine != b.sortLine {
			return a.sortLine < b.sortLine
		}
		if a.sortCol != b.sortCol {
			return a.sortCol < b.sortCol
		}
		return a.seq < b.seq
	})
	out := make(Errors, 0, min(len(d.errs), maxErrors+1))
	for _, e := range d.errs[:min(len(d.errs), maxErrors)] {
		out = append(out, e.Error)
	}
	if n := len(d.errs) - maxErrors; n > 0 {
		out = append(out, Error{File: d.name, Msg: fmt.Sprintf("%d more errors not shown", n)})
	}
	return out
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlParserProblems are the problems that yaml.v3's parser (not its scanner) reports.
// For these it prints the 0-based line of the construct being parsed; scanner errors
// are already 1-based.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// syntaxError puts a YAML parser error into the file:line:col format. yaml.v3 reports
// the line but not the column, so the column is 1: the line is still right, and tools
// that match "file:line:col: message" keep working. For an unclosed bracket the line is
// the one that opens it.
func (d *decoder) syntaxError(err error) error {
	msg := err.Error()
	line := 1
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if slices.Contains(yamlParserProblems, msg) {
			line++
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return Errors{{File: d.name, Line: line, Col: 1, Msg: "YAML syntax error: " + msg}}
}

// field is one accepted key of a mapping and what to do with its (non-null) value.
type field struct {
	name string
	fn   func(path string, v *yaml.Node)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// disp is the name of a path in messages. Inside a workload the path is shown from the
// workload down ("arrival.rate"): the position already says which workload.
func disp(path string) string {
	if strings.HasPrefix(path, "workloads[") {
		if i := strings.Index(path, "]."); i >= 0 {
			return path[i+2:]
		}
	}
	return path
}

func where(path string) string {
	if path == "" {
		return "at the top level"
	}
	return fmt.Sprintf("in %q", disp(path))
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

// resolve follows an alias to its anchor so that YAML anchors can share a block (an SLO,
// a length distribution) between workloads.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// show is how a value is quoted in a message.
func show(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "(a mapping)"
	case yaml.SequenceNode:
		return "(a list)"
	}
	return strconv.Quote(n.Value)
}

// mapping checks that n is a mapping, reports unknown and duplicate keys, and calls the
// field of each known key whose value is not null. A null value ("timeout:") is the same
// as leaving the key out. It returns false when n is not a mapping.
func (d *decoder) mapping(n *yaml.Node, path, context string, fs []field) bool {
	n = resolve(n)
	if !d.visit(n) {
		d.bad[path] = true
		return false
	}
	if n.Kind != yaml.MappingNode {
		if path == "" {
			d.errorf(n, "invalid file: expected a mapping with %s", quoteList(topKeys))
		} else {
			d.errorf(n, "invalid %s %s: expected a mapping", disp(path), show(n))
		}
		d.bad[path] = true
		return false
	}
	if context == "" {
		context = where(path)
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "invalid key %s %s: keys are names", show(k), context)
			continue
		}
		if first, ok := seen[k.Value]; ok {
			d.errorf(k, "duplicate key %q %s; first given at line %d", k.Value, context, first.Line)
			continue
		}
		seen[k.Value] = k
		var f *field
		for j := range fs {
			if fs[j].name == k.Value {
				f = &fs[j]
				break
			}
		}
		if f == nil {
			names := make([]string, len(fs))
			for j := range fs {
				names[j] = fs[j].name
			}
			d.errorf(k, "unknown key %q %s; expected one of %s", k.Value, context, quoteList(names))
			continue
		}
		if isNull(v) {
			continue
		}
		p := join(path, k.Value)
		d.nodes[p] = v
		d.keys[p] = k
		f.fn(p, v)
	}
	return true
}

// sequence checks that n is a list and returns its items.
func (d *decoder) sequence(path string, n *yaml.Node) []*yaml.Node {
	n = resolve(n)
	if !d.visit(n) {
		d.bad[path] = true
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "invalid %s %s: expected a list", disp(path), show(n))
		d.bad[path] = true
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, it := range n.Content {
		out[i] = resolve(it)
	}
	return out
}

func (d *decoder) fail(path string, n *yaml.Node, format string, args ...any) {
	d.bad[path] = true
	d.errorf(n, "invalid %s %s: %s", disp(path), show(n), fmt.Sprintf(format, args...))
}

func (d *decoder) str(path string, n *yaml.Node) string {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		d.fail(path, n, "expected a string")
		return ""
	}
	return n.Value
}

func (d *decoder) integer(path string, n *yaml.Node) int64 {
	n = resolve(n)
	var v int64
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" && digitsOnly.MatchString(n.Value) {
		// Digits alone that YAML reads as a float: too large for an integer.
		d.fail(path, n, "out of range: integers go from %d to %d", int64(math.MinInt64), int64(math.MaxInt64))
		return 0
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.fail(path, n, "expected an integer")
		return 0
	}
	if n.Decode(&v) != nil {
		// The tag says integer: only its size is wrong.
		d.fail(path, n, "out of range: integers go from %d to %d", int64(math.MinInt64), int64(math.MaxInt64))
		return 0
	}
	return v
}

func (d *decoder) int(path string, n *yaml.Node) int {
	v := d.integer(path, n)
	if v > math.MaxInt32 || v < math.MinInt32 {
		d.fail(path, n, "out of range: must be from %d to %d", math.MinInt32, math.MaxInt32)
		return 0
	}
	return int(v)
}

func (d *decoder) number(path string, n *yaml.Node) float64 {
	n = resolve(n)
	var v float64
	if n.Kind == yaml.ScalarNode && n.Style == 0 {
		if _, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); errors.Is(err, strconv.ErrRange) {
			d.fail(path, n, "out of range: numbers go up to %g", math.MaxFloat64)
			return 0
		}
	}
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil || math.IsNaN(v) {
		d.fail(path, n, "expected a number")
		return 0
	}
	if math.IsInf(v, 0) {
		if strings.Contains(strings.ToLower(n.Value), "inf") {
			d.fail(path, n, "expected a finite number")
		} else {
			d.fail(path, n, "out of range: numbers go up to %g", math.MaxFloat64)
		}
		return 0
	}
	return v
}

func (d *decoder) boolean(path string, n *yaml.Node) bool {
	n = resolve(n)
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		d.fail(path, n, "expected true or false")
		return false
	}
	return v
}

var digitsOnly = regexp.MustCompile(`^[-+]?[0-9]+$`)

// durationSyntax matches what time.ParseDuration reads; a value that matches and still
// fails to parse overflows.
var durationSyntax = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// duration accepts Go durations only. A bare number is refused: "timeout: 120" could be
// seconds or milliseconds, and a pinned spec must not be read two ways.
func (d *decoder) duration(path string, n *yaml.Node) time.Duration {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		d.fail(path, n, "expected a duration such as \"500ms\", \"30s\", \"10m\" or \"1h30m\"")
		return 0
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		if durationSyntax.MatchString(n.Value) {
			d.fail(path, n, "out of range: durations go up to %s (about 292 years)", time.Duration(math.MaxInt64))
			return 0
		}
		if _, nerr := strconv.ParseFloat(n.Value, 64); nerr == nil {
			d.fail(path, n, "a duration needs a unit, e.g. \"%ss\"; units are \"ns\", \"us\", \"ms\", \"s\", \"m\", \"h\"", n.Value)
		} else {
			d.fail(path, n, "expected a duration such as \"500ms\", \"30s\", \"10m\" or \"1h30m\"")
		}
		return 0
	}
	return v
}

// fraction accepts a percentage ("5%", "99.9%") or a plain fraction (0.05). Ranges are
// checked by validation, which knows what the value is for.
func (d *decoder) fraction(path string, n *yaml.Node) float64 {
	n = resolve(n)
	const want = "expected a fraction such as 0.05 or a percentage such as \"5%\""
	if n.Kind != yaml.ScalarNode {
		d.fail(path, n, "%s", want)
		return 0
	}
	if s, ok := strings.CutSuffix(strings.TrimSpace(n.Value), "%"); ok && n.Tag == "!!str" {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			d.fail(path, n, "%s", want)
			return 0
		}
		return v / 100
	}
	var v float64
	if (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		d.fail(path, n, "%s", want)
		return 0
	}
	return v
}

func (d *decoder) enum(path string, n *yaml.Node, valid []string) string {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || !slices.Contains(valid, n.Value) {
		d.bad[path] = true
		d.errorf(n, "invalid %s %s; expected one of %s", disp(path), show(n), quoteList(valid))
		return ""
	}
	return n.Value
}

// has reports whether the file gives a (non-null) value at path.
func (d *decoder) has(path string) bool { _, ok := d.nodes[path]; return ok }

// file decodes the whole document.
func (d *decoder) file(root *yaml.Node) *File {
	f := &File{
		Path:   d.name,
		Target: Target{API: defaultAPI, Engine: defaultEngine, Metrics: MetricsSpec{Interval: defaultMetricsInterval}},
		Model:  Model{GPUMemoryUtilization: defaultGPUMemUtil, BlockSize: defaultBlockSize},
		Gate: GateConfig{
			Baselines: defaultBaselines, MissingBaseline: defaultMissing,
			Resamples: defaultResamples, Confidence: defaultConfidence, Seed: defaultGateSeed,
		},
	}
	if root.Kind == 0 || (root.Kind == yaml.DocumentNode && len(root.Content) == 0) {
		d.errorf(nil, "the file is empty; expected a mapping with %s", quoteList(topKeys))
		return f
	}
	doc := root
	if doc.Kind == yaml.DocumentNode {
		doc = doc.Content[0]
	}
	d.nodes[""] = doc
	d.mapping(doc, "", "", []field{
		{"version", func(p string, v *yaml.Node) { f.Version = d.int(p, v) }},
		{"target", func(p string, v *yaml.Node) { d.target(p, v, &f.Target) }},
		{"model", func(p string, v *yaml.Node) { d.model(p, v, &f.Model) }},
		{"workloads", func(p string, v *yaml.Node) {
			for i, it := range d.sequence(p, v) {
				ip := fmt.Sprintf("%s[%d]", p, i)
				d.nodes[ip] = it
				f.Workloads = append(f.Workloads, d.workload(ip, it))
			}
		}},
		{"gate", func(p string, v *yaml.Node) { d.gate(p, v, &f.Gate) }},
		{"capacity", func(p string, v *yaml.Node) { f.Capacity = d.capacity(p, v) }},
	})
	if len(f.Gate.Rules) == 0 {
		f.Gate.Rules = DefaultRules()
	}
	f.Gate.Drift = mergeDrift(f.Gate.Drift, DefaultDrift())
	return f
}

func (d *decoder) target(path string, n *yaml.Node, t *Target) {
	d.mapping(n, path, "", []field{
		{"url", func(p string, v *yaml.Node) { t.URL = d.str(p, v) }},
		{"api", func(p string, v *yaml.Node) { t.API = d.enum(p, v, validAPIs) }},
		{"engine", func(p string, v *yaml.Node) { t.Engine = d.enum(p, v, validEngines) }},
		{"api_key_env", func(p string, v *yaml.Node) { t.APIKeyEnv = d.str(p, v) }},
		{"start", func(p string, v *yaml.Node) {
			s := &StartSpec{ReadyTimeout: defaultReadyTimeout}
			t.Start = s
			d.mapping(v, p, "", []field{
				{"command", func(p string, v *yaml.Node) {
					for i, it := range d.sequence(p, v) {
						s.Command = append(s.Command, d.str(fmt.Sprintf("%s[%d]", p, i), it))
					}
				}},
				{"env", func(p string, v *yaml.Node) {
					v = resolve(v)
					if v.Kind != yaml.MappingNode {
						d.fail(p, v, "expected a mapping of variable names to values")
						return
					}
					s.Env = map[string]string{}
					for i := 0; i+1 < len(v.Content); i += 2 {
						k, val := resolve(v.Content[i]), resolve(v.Content[i+1])
						if k.Kind != yaml.ScalarNode || k.Value == "" {
							d.errorf(k, "invalid key %s in %q: expected a variable name", show(k), disp(p))
							continue
						}
						if _, dup := s.Env[k.Value]; dup {
							d.errorf(k, "duplicate key %q in %q", k.Value, disp(p))
							continue
						}
						s.Env[k.Value] = d.str(join(p, k.Value), val)
					}
				}},
				{"ready_timeout", func(p string, v *yaml.Node) { s.ReadyTimeout = d.duration(p, v) }},
			})
		}},
		{"swap", func(p string, v *yaml.Node) {
			sw := &SwapSpec{Level: defaultSleepLevel, SleepTimeout: defaultSleepTimeout, WakeTimeout: defaultWakeTimeout}
			t.Swap = sw
			d.mapping(v, p, "", []field{
				{"mode", func(p string, v *yaml.Node) { sw.Mode = d.enum(p, v, SwapModes()) }},
				{"level", func(p string, v *yaml.Node) { sw.Level = d.int(p, v) }},
				{"sleep_timeout", func(p string, v *yaml.Node) { sw.SleepTimeout = d.duration(p, v) }},
				{"wake_timeout", func(p string, v *yaml.Node) { sw.WakeTimeout = d.duration(p, v) }},
			})
		}},
		{"image", func(p string, v *yaml.Node) { t.Image = d.str(p, v) }},
		{"kv_unified", func(p string, v *yaml.Node) {
			b := d.boolean(p, v)
			t.KVUnified = &b
		}},
		{"metrics", func(p string, v *yaml.Node) {
			d.mapping(v, p, "", []field{
				{"url", func(p string, v *yaml.Node) { t.Metrics.URL = d.str(p, v) }},
				{"interval", func(p string, v *yaml.Node) { t.Metrics.Interval = d.duration(p, v) }},
				{"disabled", func(p string, v *yaml.Node) { t.Metrics.Disabled = d.boolean(p, v) }},
			})
		}},
	})
}

func (d *decoder) model(path string, n *yaml.Node, m *Model) {
	d.mapping(n, path, "", []field{
		{"name", func(p string, v *yaml.Node) { m.Name = d.str(p, v) }},
		{"revision", func(p string, v *yaml.Node) { m.Revision = d.str(p, v) }},
		{"precision", func(p string, v *yaml.Node) { m.Precision = d.str(p, v) }},
		{"allow_mismatch", func(p string, v *yaml.Node) { m.AllowMismatch = d.boolean(p, v) }},
		{"kv_bytes_per_token", func(p string, v *yaml.Node) { m.KVBytesPerToken = d.integer(p, v) }},
		{"architecture", func(p string, v *yaml.Node) {
			a := &Architecture{TensorParallel: defaultTensorParallel}
			m.Architecture = a
			d.mapping(v, p, "", []field{
				{"layers", func(p string, v *yaml.Node) { a.Layers = d.int(p, v) }},
				{"kv_heads", func(p string, v *yaml.Node) { a.KVHeads = d.int(p, v) }},
				{"head_dim", func(p string, v *yaml.Node) { a.HeadDim = d.int(p, v) }},
				{"dtype_bytes", func(p string, v *yaml.Node) { a.DTypeBytes = d.number(p, v) }},
				{"tensor_parallel", func(p string, v *yaml.Node) { a.TensorParallel = d.int(p, v) }},
				{"mla", func(p string, v *yaml.Node) { a.MLA = d.boolean(p, v) }},
			})
		}},
		{"gpu_memory_utilization", func(p string, v *yaml.Node) { m.GPUMemoryUtilization = d.fraction(p, v) }},
		{"weights_bytes", func(p string, v *yaml.Node) { m.WeightsBytes = d.integer(p, v) }},
		{"block_size", func(p string, v *yaml.Node) { m.BlockSize = d.int(p, v) }},
	})
}

func (d *decoder) workload(path string, n *yaml.Node) Workload {
	w := Workload{
		Seed:        defaultSeed,
		Timeout:     defaultTimeout,
		Repeats:     defaultRepeats,
		PrefixCache: PrefixCache{Mode: PrefixCold},
		SLO:         SLO{Attainment: defaultAttainment},
		Arrival:     Arrival{Burstiness: defaultBurstiness, ThinkDist: defaultThinkDist},
	}
	d.mapping(n, path, "", []field{
		{"name", func(p string, v *yaml.Node) { w.Name = d.str(p, v) }},
		{"seed", func(p string, v *yaml.Node) { w.Seed = d.integer(p, v) }},
		{"requests", func(p string, v *yaml.Node) { w.Requests = d.int(p, v) }},
		{"duration", func(p string, v *yaml.Node) { w.Duration = d.duration(p, v) }},
		{"warmup", func(p string, v *yaml.Node) {
			d.mapping(v, p, "", []field{
				{"requests", func(p string, v *yaml.Node) { w.Warmup.Requests = d.int(p, v) }},
			})
		}},
		{"arrival", func(p string, v *yaml.Node) { d.arrival(p, v, &w.Arrival) }},
		{"prompt_tokens", func(p string, v *yaml.Node) { w.PromptTokens = d.length(p, v) }},
		{"output_tokens", func(p string, v *yaml.Node) { w.OutputTokens = d.length(p, v) }},
		{"prefix_cache", func(p string, v *yaml.Node) { w.PrefixCache = d.prefix(p, v) }},
		{"dataset", func(p string, v *yaml.Node) { w.Dataset = d.dataset(p, v) }},
		{"timeout", func(p string, v *yaml.Node) { w.Timeout = d.duration(p, v) }},
		{"slo", func(p string, v *yaml.Node) { d.slo(p, v, &w.SLO) }},
		{"classes", func(p string, v *yaml.Node) {
			for i, it := range d.sequence(p, v) {
				ip := fmt.Sprintf("%s[%d]", p, i)
				d.nodes[ip] = it
				w.Classes = append(w.Classes, d.class(ip, it))
			}
		}},
		{"ignore_eos", func(p string, v *yaml.Node) {
			b := d.boolean(p, v)
			w.IgnoreEOS = &b
		}},
		{"repeats", func(p string, v *yaml.Node) { w.Repeats = d.int(p, v) }},
		{"max_dispatch_lag", func(p string, v *yaml.Node) { w.MaxDispatchLag = d.duration(p, v) }},
		{"sweep", func(p string, v *yaml.Node) {
			sw := &SweepSpec{}
			d.mapping(v, p, "", []field{
				{"min_rate", func(p string, v *yaml.Node) { sw.MinRate = d.number(p, v) }},
				{"max_rate", func(p string, v *yaml.Node) { sw.MaxRate = d.number(p, v) }},
				{"precision", func(p string, v *yaml.Node) { sw.Precision = d.fraction(p, v) }},
				{"step_requests", func(p string, v *yaml.Node) { sw.StepRequests = d.int(p, v) }},
				{"step_duration", func(p string, v *yaml.Node) { sw.StepDuration = d.duration(p, v) }},
			})
			w.Sweep = sw
		}},
		{"sessions", func(p string, v *yaml.Node) { w.Sessions = d.sessions(p, v) }},
		{"tasks", func(p string, v *yaml.Node) { w.Tasks = d.tasks(p, v) }},
	})
	return w
}

func (d *decoder) class(path string, n *yaml.Node) Class {
	// The attainment default is left at 0 here: inheritClasses fills what was not given.
	var c Class
	d.mapping(n, path, "", []field{
		{"name", func(p string, v *yaml.Node) { c.Name = d.str(p, v) }},
		{"weight", func(p string, v *yaml.Node) { c.Weight = d.number(p, v) }},
		{"prompt_tokens", func(p string, v *yaml.Node) { c.PromptTokens = d.length(p, v) }},
		{"output_tokens", func(p string, v *yaml.Node) { c.OutputTokens = d.length(p, v) }},
		{"slo", func(p string, v *yaml.Node) { d.slo(p, v, &c.SLO) }},
	})
	return c
}

func (d *decoder) arrival(path string, n *yaml.Node, a *Arrival) {
	// The trace is read after the mapping: its format, window and scale may come after it.
	var tracePath string
	var traceNode *yaml.Node
	d.mapping(n, path, "", []field{
		{"process", func(p string, v *yaml.Node) { a.Process = d.enum(p, v, validProcesses) }},
		{"rate", func(p string, v *yaml.Node) { a.Rate = d.number(p, v) }},
		{"burstiness", func(p string, v *yaml.Node) { a.Burstiness = d.number(p, v) }},
		{"profile", func(p string, v *yaml.Node) { a.Profile = d.profile(p, v) }},
		{"trace", func(p string, v *yaml.Node) {
			a.Trace = d.str(p, v)
			tracePath, traceNode = p, v
		}},
		{"format", func(p string, v *yaml.Node) { a.Format = d.enum(p, v, validTraceFormats) }},
		{"time_scale", func(p string, v *yaml.Node) { a.TimeScale = d.number(p, v) }},
		{"start", func(p string, v *yaml.Node) { a.Start = d.duration(p, v) }},
		{"window", func(p string, v *yaml.Node) { a.Window = d.duration(p, v) }},
		{"block_tokens", func(p string, v *yaml.Node) { a.BlockTokens = d.int(p, v) }},
		{"users", func(p string, v *yaml.Node) { a.Users = d.int(p, v) }},
		{"think", func(p string, v *yaml.Node) { a.Think = d.duration(p, v) }},
		{"think_dist", func(p string, v *yaml.Node) { a.ThinkDist = d.enum(p, v, validThinkDists) }},
	})
	if a.Process == ArrivalTrace {
		if a.Format == "" && !d.bad[join(path, "format")] {
			a.Format = TraceOffsets
		}
		if !d.has(join(path, "time_scale")) {
			a.TimeScale = 1
		}
		if a.Format == TraceMooncake && !d.has(join(path, "block_tokens")) {
			a.BlockTokens = defaultBlockTokens
		}
	}
	if a.Trace == "" || d.bad[join(path, "format")] {
		return
	}
	// Bad scale or window values are reported by validation; the trace is read with
	// sane ones so that its own errors still show.
	scale := a.TimeScale
	if !(scale > 0) {
		scale = 1
	}
	cut := traceCut{start: max(a.Start, 0), window: max(a.Window, 0), scale: scale}
	if a.Format == TraceOffsets {
		a.Offsets = cut.offsets(d.loadTrace(tracePath, traceNode, a.Trace))
		return
	}
	recs, offs, sum := d.loadLengthTrace(tracePath, traceNode, a.Trace, a.Format, cut)
	a.Records, a.Offsets, a.TraceSHA256 = recs, offs, sum
}

func (d *decoder) profile(path string, n *yaml.Node) *RateProfile {
	r := &RateProfile{}
	d.mapping(n, path, "", []field{
		{"steps", func(p string, v *yaml.Node) {
			r.Kind = "steps"
			for i, it := range d.sequence(p, v) {
				ip := fmt.Sprintf("%s[%d]", p, i)
				d.nodes[ip] = it
				var s RateStep
				d.mapping(it, ip, "", []field{
					{"rate", func(p string, v *yaml.Node) { s.Rate = d.number(p, v) }},
					{"duration", func(p string, v *yaml.Node) { s.Duration = d.duration(p, v) }},
				})
				r.Steps = append(r.Steps, s)
			}
		}},
		{"ramp", func(p string, v *yaml.Node) {
			r.Kind = "ramp"
			d.mapping(v, p, "", []field{
				{"from", func(p string, v *yaml.Node) { r.From = d.number(p, v) }},
				{"to", func(p string, v *yaml.Node) { r.To = d.number(p, v) }},
				{"over", func(p string, v *yaml.Node) { r.Over = d.duration(p, v) }},
			})
		}},
		{"diurnal", func(p string, v *yaml.Node) {
			r.Kind = "diurnal"
			d.mapping(v, p, "", []field{
				{"trough", func(p string, v *yaml.Node) { r.Trough = d.number(p, v) }},
				{"peak", func(p string, v *yaml.Node) { r.Peak = d.number(p, v) }},
				{"period", func(p string, v *yaml.Node) { r.Period = d.duration(p, v) }},
			})
		}},
	})
	return r
}

// length decodes a length distribution: a bare integer is a fixed length.
func (d *decoder) length(path string, n *yaml.Node) LengthDist {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		if n.Tag != "!!int" {
			d.fail(path, n, "expected a token count or a mapping with \"dist\"; dists are %s", quoteList(validDists))
			return LengthDist{}
		}
		l := LengthDist{Dist: DistFixed, Value: d.int(path, n)}
		d.lengths[path] = l
		return l
	}
	var l LengthDist
	// The dist decides which other keys belong, so it is read before the rest.
	context := ""
	allowed := []string{"dist", "value", "min", "max", "p50", "p95", "values", "file"}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if resolve(n.Content[i]).Value == "dist" {
				v := resolve(n.Content[i+1])
				if v.Kind == yaml.ScalarNode && distKeys[v.Value] != nil {
					l.Dist = v.Value
					allowed = distKeys[v.Value]
					context = fmt.Sprintf("in %q for dist %q", disp(path), v.Value)
				}
			}
		}
	}
	all := map[string]func(p string, v *yaml.Node){
		"dist":  func(p string, v *yaml.Node) { l.Dist = d.enum(p, v, validDists) },
		"value": func(p string, v *yaml.Node) { l.Value = d.int(p, v) },
		"min":   func(p string, v *yaml.Node) { l.Min = d.int(p, v) },
		"max":   func(p string, v *yaml.Node) { l.Max = d.int(p, v) },
		"p50":   func(p string, v *yaml.Node) { l.P50 = d.int(p, v) },
		"p95":   func(p string, v *yaml.Node) { l.P95 = d.int(p, v) },
		"values": func(p string, v *yaml.Node) {
			items := d.sequence(p, v)
			l.Values = make([]int, 0, len(items))
			for i, it := range items {
				ip := fmt.Sprintf("%s[%d]", p, i)
				x := d.int(ip, it)
				if !d.bad[ip] && x < 1 {
					d.fail(ip, it, "token counts must be at least 1")
				}
				l.Values = append(l.Values, x)
			}
		},
		"file": func(p string, v *yaml.Node) {
			l.File = d.str(p, v)
			if l.File != "" {
				l.Values = d.loadLengths(p, v, l.File)
			}
		},
	}
	fs := make([]field, len(allowed))
	for i, k := range allowed {
		fs[i] = field{k, all[k]}
	}
	if !d.mapping(n, path, context, fs) {
		return LengthDist{}
	}
	if l.Dist == DistLognormal && !d.has(join(path, "min")) {
		l.Min = 1
	}
	d.lengths[path] = l
	return l
}

// prefix decodes prefix_cache: a mode as a scalar, or a mapping with mode, tokens, groups
// and reset.
func (d *decoder) prefix(path string, n *yaml.Node) PrefixCache {
	n = resolve(n)
	pc := PrefixCache{Mode: PrefixCold}
	if n.Kind == yaml.ScalarNode {
		pc.Mode = d.enum(path, n, validPrefixModes)
	} else {
		d.mapping(n, path, "", []field{
			{"mode", func(p string, v *yaml.Node) { pc.Mode = d.enum(p, v, validPrefixModes) }},
			{"tokens", func(p string, v *yaml.Node) { pc.Tokens = d.int(p, v) }},
			{"groups", func(p string, v *yaml.Node) { pc.Groups = d.int(p, v) }},
			{"reset", func(p string, v *yaml.Node) { pc.Reset = d.boolean(p, v) }},
			{"documents", func(p string, v *yaml.Node) { pc.Documents = d.int(p, v) }},
			{"docs_per_request", func(p string, v *yaml.Node) { pc.DocsPerRequest = d.int(p, v) }},
			{"doc_tokens", func(p string, v *yaml.Node) { pc.DocTokens = d.int(p, v) }},
			{"zipf", func(p string, v *yaml.Node) { pc.Zipf = d.number(p, v) }},
		})
	}
	if pc.Mode == PrefixRAG {
		for _, f := range []struct {
			key string
			v   *int
			def int
		}{{"documents", &pc.Documents, 16}, {"docs_per_request", &pc.DocsPerRequest, 2}, {"doc_tokens", &pc.DocTokens, 256}} {
			if !d.has(join(path, f.key)) {
				*f.v = f.def
			}
		}
		if !d.has(join(path, "zipf")) {
			pc.Zipf = 1
		}
	}
	if pc.Mode == PrefixShared {
		if !d.has(join(path, "tokens")) {
			pc.Tokens = defaultSharedTokens
		}
		if !d.has(join(path, "groups")) {
			pc.Groups = defaultSharedGroups
		}
	}
	return pc
}

// slo decodes an SLO into s, keeping s.Attainment when the file does not set it.
func (d *decoder) slo(path string, n *yaml.Node, s *SLO) {
	fs := []field{}
	for _, m := range validSLOMetrics {
		fs = append(fs, field{m, func(p string, v *yaml.Node) {
			keys := make([]field, len(percentileKeys))
			for i, pk := range percentileKeys {
				keys[i] = field{pk.key, func(p string, v *yaml.Node) {
					lim := d.duration(p, v)
					for _, t := range s.Targets {
						if t.Metric == m && t.Percentile == pk.p {
							d.errorf(v, "duplicate percentile %s in %q (p999 and p99.9 are the same)", pk.key, disp(path+"."+m))
							return
						}
					}
					s.Targets = append(s.Targets, SLOTarget{Metric: m, Percentile: pk.p, Limit: lim})
				}}
			}
			d.mapping(v, p, "", keys)
		}})
	}
	fs = append(fs, field{"attainment", func(p string, v *yaml.Node) { s.Attainment, s.AttainmentSet = d.fraction(p, v), true }})
	d.mapping(n, path, "", fs)
	sortTargets(s.Targets)
}

func sortTargets(ts []SLOTarget) {
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].Metric != ts[j].Metric {
			return ts[i].Metric < ts[j].Metric
		}
		return ts[i].Percentile < ts[j].Percentile
	})
}

func (d *decoder) gate(path string, n *yaml.Node, g *GateConfig) {
	d.mapping(n, path, "", []field{
		{"baselines", func(p string, v *yaml.Node) { g.Baselines = d.str(p, v) }},
		{"rules", func(p string, v *yaml.Node) {
			v = resolve(v)
			if v.Kind != yaml.MappingNode {
				d.fail(p, v, "expected a mapping of metric names to rules")
				return
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				k, rv := resolve(v.Content[i]), resolve(v.Content[i+1])
				if !d.metricKey(p, k, "metric", validRuleMetric, ruleMetricList) {
					continue
				}
				rp := join(p, k.Value)
				if d.has(rp) {
					d.errorf(k, "duplicate rule for %q in %q", k.Value, disp(p))
					continue
				}
				d.nodes[rp] = rv
				g.Rules = append(g.Rules, d.rule(rp, k.Value, rv))
			}
		}},
		{"drift", func(p string, v *yaml.Node) {
			v = resolve(v)
			if v.Kind != yaml.MappingNode {
				d.fail(p, v, "expected a mapping of environment fields to policies")
				return
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				k, pv := resolve(v.Content[i]), resolve(v.Content[i+1])
				if !d.metricKey(p, k, "field", func(s string) bool { return slices.Contains(DriftFields, s) }, quoteList(DriftFields)) {
					continue
				}
				fp := join(p, k.Value)
				if d.has(fp) {
					d.errorf(k, "duplicate drift field %q in %q", k.Value, disp(p))
					continue
				}
				d.nodes[fp] = pv
				g.Drift = append(g.Drift, DriftPolicy{Field: k.Value, Policy: d.enum(fp, pv, validPolicies)})
			}
		}},
		{"missing_baseline", func(p string, v *yaml.Node) { g.MissingBaseline = d.enum(p, v, validMissing) }},
		{"max_baseline_age", func(p string, v *yaml.Node) { g.MaxBaselineAge = d.duration(p, v) }},
		{"resamples", func(p string, v *yaml.Node) { g.Resamples = d.int(p, v) }},
		{"confidence", func(p string, v *yaml.Node) { g.Confidence = d.fraction(p, v) }},
		{"seed", func(p string, v *yaml.Node) { g.Seed = d.integer(p, v) }},
	})
}

// metricKey checks a key of gate.rules or gate.drift against its valid names.
func (d *decoder) metricKey(path string, k *yaml.Node, what string, ok func(string) bool, valid string) bool {
	if k.Kind != yaml.ScalarNode {
		d.errorf(k, "invalid key %s in %q: expected a %s name", show(k), disp(path), what)
		return false
	}
	if !ok(k.Value) {
		d.errorf(k, "unknown %s %q in %q; expected one of %s", what, k.Value, disp(path), valid)
		return false
	}
	return true
}

func (d *decoder) rule(path, metric string, n *yaml.Node) Rule {
	r := Rule{Metric: metric}
	// A limit is read in the metric's own unit: a fraction for rates, a duration for
	// latencies (kept in milliseconds, the unit of the run record), else a plain number.
	limit := func(p string, v *yaml.Node) *float64 {
		var x float64
		switch metricUnit(metric) {
		case unitFraction:
			x = d.fraction(p, v)
		case unitLatency:
			x = float64(d.duration(p, v)) / float64(time.Millisecond)
		default:
			x = d.number(p, v)
		}
		return &x
	}
	d.mapping(n, path, "", []field{
		{"direction", func(p string, v *yaml.Node) { r.Direction = d.enum(p, v, validDirections) }},
		{"tolerance", func(p string, v *yaml.Node) { r.Tolerance = d.fraction(p, v) }},
		{"max", func(p string, v *yaml.Node) { r.Max = limit(p, v) }},
		{"min", func(p string, v *yaml.Node) { r.Min = limit(p, v) }},
	})
	return r
}

func (d *decoder) capacity(path string, n *yaml.Node) *CapacityConfig {
	c := &CapacityConfig{}
	d.mapping(n, path, "", []field{
		{"peak_rps", func(p string, v *yaml.Node) { c.PeakRPS = d.number(p, v) }},
		{"target_utilization", func(p string, v *yaml.Node) { c.TargetUtilization = d.fraction(p, v) }},
		{"headroom", func(p string, v *yaml.Node) { c.Headroom = d.fraction(p, v) }},
		{"redundancy", func(p string, v *yaml.Node) { c.Redundancy = d.int(p, v) }},
		{"gpu_hour_usd", func(p string, v *yaml.Node) { c.GPUHourUSD = d.number(p, v) }},
	})
	return c
}

// resolvePath resolves a file named in the config against the config's directory.
func (d *decoder) resolvePath(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(d.dir, rel)
}

// readLines reads a data file named at node n and calls parse for each line that is not
// blank or a comment. Errors in the file are reported at the file's own line, sorted at
// the key that names it, and capped at maxFileErrors.
func (d *decoder) readLines(path string, n *yaml.Node, what, rel string, parse func(line string) error) bool {
	full := d.resolvePath(rel)
	data, err := d.readFile(full)
	if err != nil {
		d.fail(path, n, "cannot read %s %s: %s", what, full, ioReason(err))
		return false
	}
	count := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := parse(line); err != nil {
			count++
			if count <= maxFileErrors {
				d.add(Error{File: full, Line: ln, Col: 1, Msg: err.Error()}, n.Line, n.Column)
			}
		}
	}
	if err := sc.Err(); err != nil {
		count++
		d.add(Error{File: full, Msg: "cannot read: " + err.Error()}, n.Line, n.Column)
	}
	if count > maxFileErrors {
		d.add(Error{File: full, Msg: fmt.Sprintf("%d more errors not shown", count-maxFileErrors)}, n.Line, n.Column)
	}
	if count > 0 {
		d.bad[path] = true
		return false
	}
	return true
}

// loadTrace reads arrival offsets, one Go duration per line from the start of the
// measured window ("0s", "250ms", "1.5s"), ascending.
func (d *decoder) loadTrace(path string, n *yaml.Node, rel string) []time.Duration {
	var out []time.Duration
	ok := d.readLines(path, n, "trace", rel, func(line string) error {
		v, err := time.ParseDuration(line)
		if err != nil {
			if _, nerr := strconv.ParseFloat(line, 64); nerr == nil {
				return fmt.Errorf("invalid offset %q: an offset needs a unit, e.g. \"%ss\"", line, line)
			}
			return fmt.Errorf("invalid offset %q: expected a duration from the start such as \"250ms\" or \"1.5s\"", line)
		}
		if v < 0 {
			return fmt.Errorf("invalid offset %q: offsets start at 0s", line)
		}
		if len(out) > 0 && v < out[len(out)-1] {
			return fmt.Errorf("invalid offset %q: offsets must be in ascending order (previous %s)", line, out[len(out)-1])
		}
		out = append(out, v)
		return nil
	})
	if ok && len(out) == 0 {
		d.fail(path, n, "the trace %s holds no offsets", d.resolvePath(rel))
	}
	return out
}

// loadLengths reads token counts for an empirical distribution, one integer per line.
func (d *decoder) loadLengths(path string, n *yaml.Node, rel string) []int {
	var out []int
	ok := d.readLines(path, n, "lengths file", rel, func(line string) error {
		v, err := strconv.Atoi(line)
		if err != nil {
			return fmt.Errorf("invalid token count %q: expected an integer", line)
		}
		if v < 1 {
			return fmt.Errorf("invalid token count %q: token counts must be at least 1", line)
		}
		out = append(out, v)
		return nil
	})
	if ok && len(out) == 0 {
		d.fail(path, n, "the lengths file %s holds no values", d.resolvePath(rel))
	}
	return out
}

// ioReason is an I/O error without the path, which the message already names.
func ioReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// inheritClasses fills what a class leaves unset from its workload: lengths, and SLO
// targets by metric and percentile (a class target replaces the workload's same target).
func inheritClasses(w *Workload) {
	for i := range w.Classes {
		c := &w.Classes[i]
		if c.PromptTokens.Dist == "" {
			c.PromptTokens = w.PromptTokens
		}
		if c.OutputTokens.Dist == "" {
			c.OutputTokens = w.OutputTokens
		}
		if c.SLO.Attainment == 0 {
			c.SLO.Attainment = w.SLO.Attainment
		}
		for _, t := range w.SLO.Targets {
			if !slices.ContainsFunc(c.SLO.Targets, func(u SLOTarget) bool {
				return u.Metric == t.Metric && u.Percentile == t.Percentile
			}) {
				c.SLO.Targets = append(c.SLO.Targets, t)
			}
		}
		sortTargets(c.SLO.Targets)
	}
}
