package workload

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// CorpusVersion names the prompt corpus and the generator that turns a spec into bytes
// (prompt cutting, length and arrival sampling). It is part of the workload hash: the same
// spec with another corpus or generator sends other bytes. Bump it with any change that
// alters what the generator produces; TestGeneratorGolden fails on such a change.
const CorpusVersion = "corpus-1"

// hashSchema names the canonical form below; bump it when the form itself changes.
const hashSchema = "slogate-workload-hash/1"

// Hash is the workload hash: "sha256:<hex>" of a canonical JSON of everything that
// changes what is sent or how it is judged. A baseline is only comparable with a run of
// the same hash.
//
// It covers the API, the model name and revision, the seed, the request count or
// duration, warm-up, arrival (with a profile and the loaded trace offsets, not the trace
// path), lengths (with loaded empirical values, not the file path), classes, sessions, tasks, prefix cache,
// timeout, SLO, ignore_eos and CorpusVersion. It leaves out what neither changes the
// traffic nor the verdict of the SLO: the workload name, the target URL, engine and key,
// the gate and capacity sections, repeats, max_dispatch_lag, and the file's formatting.
//
// The canonical form is built from the loaded values (defaults applied, classes
// inherited), so "timeout: 120s" and an absent timeout hash the same.
func Hash(f *File, w *Workload) string { return hashWith(f, w, CorpusVersion) }

func hashWith(f *File, w *Workload, corpus string) string {
	b, err := json.Marshal(canonical(f, w, corpus))
	if err != nil {
		// Only plain numbers, strings and slices are marshalled; NaN cannot pass validation.
		panic("workload: canonical form does not marshal: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// canonical is the form Hash takes the SHA-256 of (and Form shows).
func canonical(f *File, w *Workload, corpus string) hWorkload {
	c := hWorkload{
		Schema:       hashSchema,
		Corpus:       corpus,
		API:          f.Target.API,
		Model:        f.Model.Name,
		Revision:     f.Model.Revision,
		Seed:         w.Seed,
		Requests:     w.Requests,
		Duration:     ns(w.Duration),
		Warmup:       w.Warmup.Requests,
		Arrival:      arrivalForm(&w.Arrival),
		PromptTokens: lengthForm(&w.PromptTokens),
		OutputTokens: lengthForm(&w.OutputTokens),
		PrefixCache:  prefixForm(&w.PrefixCache),
		Timeout:      ns(w.Timeout),
		SLO:          sloForm(&w.SLO),
		IgnoreEOS:    w.IgnoreEOS,
	}
	if ds := w.Dataset; ds != nil {
		c.Dataset = &hDataset{ds.Format, ds.SHA256, ds.Sessions}
	}
	if ss := w.Sessions; ss != nil {
		t := ss.ThinkTime
		c.Sessions = &hSessions{
			Count: ss.Count, Turns: lengthForm(&ss.Turns), UserTokens: lengthForm(&ss.UserTokens),
			OutputTokens: lengthForm(&ss.OutputTokens), SystemPromptTokens: ss.SystemPromptTokens,
			Think: hThink{Dist: cmp.Or(t.Dist, DistFixed), Value: ns(t.Value), Min: ns(t.Min), Max: ns(t.Max),
				P50: ns(t.P50), P95: ns(t.P95), Mean: ns(t.Mean)},
		}
	}
	if t := w.Tasks; t != nil {
		c.Tasks = &hTasks{By: t.By, Success: t.Success, Retries: t.Retries}
	}
	for i := range w.Classes {
		cl := &w.Classes[i]
		c.Classes = append(c.Classes, hClass{
			Name:         cl.Name,
			Weight:       cl.Weight,
			PromptTokens: lengthForm(&cl.PromptTokens),
			OutputTokens: lengthForm(&cl.OutputTokens),
			SLO:          sloForm(&cl.SLO),
		})
	}
	return c
}

// The canonical form: fixed field order (struct order), durations in nanoseconds, and
// omitempty so that an absent value and its zero value agree.
type hWorkload struct {
	Schema       string     `json:"schema"`
	Corpus       string     `json:"corpus"`
	API          string     `json:"api"`
	Model        string     `json:"model"`
	Revision     string     `json:"revision,omitempty"`
	Seed         int64      `json:"seed"`
	Requests     int        `json:"requests,omitempty"`
	Duration     int64      `json:"duration_ns,omitempty"`
	Warmup       int        `json:"warmup_requests,omitempty"`
	Arrival      hArrival   `json:"arrival"`
	PromptTokens hLen       `json:"prompt_tokens"`
	OutputTokens hLen       `json:"output_tokens"`
	PrefixCache  hPrefix    `json:"prefix_cache"`
	Dataset      *hDataset  `json:"dataset,omitempty"`
	Timeout      int64      `json:"timeout_ns"`
	SLO          hSLO       `json:"slo"`
	Classes      []hClass   `json:"classes,omitempty"`
	IgnoreEOS    *bool      `json:"ignore_eos,omitempty"`
	Sessions     *hSessions `json:"sessions,omitempty"`
	Tasks        *hTasks    `json:"tasks,omitempty"`
}

// hTasks: the retries change what is sent, the grouping and success rule the task
// goodput a baseline is compared on.
type hTasks struct {
	By      string `json:"by"`
	Success string `json:"success"`
	Retries int    `json:"retries,omitempty"`
}

// hSessions is a session workload's conversations; their starts are the arrival's.
type hSessions struct {
	Count              int    `json:"count"`
	Turns              hLen   `json:"turns"`
	UserTokens         hLen   `json:"user_tokens"`
	OutputTokens       hLen   `json:"output_tokens"`
	Think              hThink `json:"think_time"`
	SystemPromptTokens int    `json:"system_prompt_tokens,omitempty"`
}

type hThink struct {
	Dist  string `json:"dist"`
	Value int64  `json:"value_ns,omitempty"`
	Min   int64  `json:"min_ns,omitempty"`
	Max   int64  `json:"max_ns,omitempty"`
	P50   int64  `json:"p50_ns,omitempty"`
	P95   int64  `json:"p95_ns,omitempty"`
	Mean  int64  `json:"mean_ns,omitempty"`
}

type hArrival struct {
	Process    string    `json:"process"`
	Rate       float64   `json:"rate,omitempty"`
	Burstiness float64   `json:"burstiness,omitempty"`
	Profile    *hProfile `json:"profile,omitempty"`
	Offsets    []int64   `json:"offsets_ns,omitempty"`
	Users      int       `json:"users,omitempty"`
	// A trace with lengths is pinned by its file's SHA-256, the cut and the scale.
	Format      string  `json:"format,omitempty"`
	TraceSHA256 string  `json:"trace_sha256,omitempty"`
	TimeScale   float64 `json:"time_scale,omitempty"`
	Start       int64   `json:"start_ns,omitempty"`
	Window      int64   `json:"window_ns,omitempty"`
	BlockTokens int     `json:"block_tokens,omitempty"`
	Think       int64   `json:"think_ns,omitempty"`
	ThinkDist   string  `json:"think_dist,omitempty"`
}

type hProfile struct {
	Kind   string  `json:"kind"`
	Steps  []hStep `json:"steps,omitempty"`
	From   float64 `json:"from,omitempty"`
	To     float64 `json:"to,omitempty"`
	Over   int64   `json:"over_ns,omitempty"`
	Trough float64 `json:"trough,omitempty"`
	Peak   float64 `json:"peak,omitempty"`
	Period int64   `json:"period_ns,omitempty"`
}

type hStep struct {
	Rate     float64 `json:"rate"`
	Duration int64   `json:"duration_ns,omitempty"`
}

type hLen struct {
	Dist   string `json:"dist"`
	Value  int    `json:"value,omitempty"`
	Min    int    `json:"min,omitempty"`
	Max    int    `json:"max,omitempty"`
	P50    int    `json:"p50,omitempty"`
	P95    int    `json:"p95,omitempty"`
	Values []int  `json:"values,omitempty"`
}

// hDataset pins a dataset by its format and its file's SHA-256, not its path.
type hDataset struct {
	Format   string `json:"format"`
	SHA256   string `json:"sha256"`
	Sessions bool   `json:"sessions,omitempty"`
}

type hPrefix struct {
	Mode           string  `json:"mode"`
	Tokens         int     `json:"tokens,omitempty"`
	Groups         int     `json:"groups,omitempty"`
	Documents      int     `json:"documents,omitempty"`
	DocsPerRequest int     `json:"docs_per_request,omitempty"`
	DocTokens      int     `json:"doc_tokens,omitempty"`
	Zipf           float64 `json:"zipf,omitempty"`
}

type hTarget struct {
	Metric     string  `json:"metric"`
	Percentile float64 `json:"percentile"`
	Limit      int64   `json:"limit_ns"`
}

type hSLO struct {
	Targets    []hTarget `json:"targets,omitempty"`
	Attainment float64   `json:"attainment"`
}

type hClass struct {
	Name         string  `json:"name"`
	Weight       float64 `json:"weight"`
	PromptTokens hLen    `json:"prompt_tokens"`
	OutputTokens hLen    `json:"output_tokens"`
	SLO          hSLO    `json:"slo"`
}

func ns(d time.Duration) int64 { return int64(d) }

func arrivalForm(a *Arrival) hArrival {
	c := hArrival{
		Process: a.Process,
		Rate:    a.Rate,
		Users:   a.Users,
	}
	// Fields that do not apply to the process are left out, so that a default (gamma's
	// burstiness, closed's think_dist) cannot make two identical open loops differ.
	switch a.Process {
	case ArrivalGamma:
		c.Burstiness = a.Burstiness
	case ArrivalClosed:
		c.Think = ns(a.Think)
		c.ThinkDist = a.ThinkDist
	}
	if a.HasLengths() {
		// The file's hash pins every entry; its offsets are left out (they follow from it).
		c.Format, c.TraceSHA256, c.TimeScale = a.Format, a.TraceSHA256, a.TimeScale
		c.Start, c.Window, c.BlockTokens = ns(a.Start), ns(a.Window), a.BlockTokens
		return c
	}
	// An offsets trace is pinned by its offsets, already cut and scaled.
	for _, o := range a.Offsets {
		c.Offsets = append(c.Offsets, ns(o))
	}
	if p := a.Profile; p != nil {
		cp := &hProfile{
			Kind: p.Kind, From: p.From, To: p.To, Over: ns(p.Over),
			Trough: p.Trough, Peak: p.Peak, Period: ns(p.Period),
		}
		for _, s := range p.Steps {
			cp.Steps = append(cp.Steps, hStep{s.Rate, ns(s.Duration)})
		}
		c.Profile = cp
	}
	return c
}

func prefixForm(pc *PrefixCache) hPrefix {
	h := hPrefix{Mode: pc.Mode, Tokens: pc.Tokens, Groups: pc.Groups}
	if pc.Mode == PrefixRAG {
		// zipf 0 (uniform) must differ from an absent one: it is stored as -1.
		h.Documents, h.DocsPerRequest, h.DocTokens, h.Zipf = pc.Documents, pc.DocsPerRequest, pc.DocTokens, pc.Zipf
		if pc.Zipf == 0 {
			h.Zipf = -1
		}
	}
	return h
}

func lengthForm(l *LengthDist) hLen {
	return hLen{Dist: l.Dist, Value: l.Value, Min: l.Min, Max: l.Max, P50: l.P50, P95: l.P95, Values: l.Values}
}

func sloForm(s *SLO) hSLO {
	c := hSLO{Attainment: s.Attainment}
	for _, t := range s.Targets {
		c.Targets = append(c.Targets, hTarget{t.Metric, t.Percentile, ns(t.Limit)})
	}
	// Loaded files are sorted already; a File built in code may not be.
	slices.SortStableFunc(c.Targets, func(a, b hTarget) int {
		return cmp.Or(cmp.Compare(a.Metric, b.Metric), cmp.Compare(a.Percentile, b.Percentile))
	})
	return c
}
