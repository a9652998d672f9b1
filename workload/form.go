package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// formListMax is the longest list of numbers Form keeps as it is: a longer one (a
// trace's offsets, an empirical length distribution) becomes its count and SHA-256.
const formListMax = 32

// Form is the canonical form the workload hash is taken of, as JSON a record and a
// baseline can carry: when two hashes differ, FormChanges says which keys changed. A
// list of more than 32 numbers is replaced by "N values, sha256:…" so that a trace
// replay does not copy its trace into every record.
func Form(f *File, w *Workload) json.RawMessage {
	b, err := json.Marshal(canonical(f, w, CorpusVersion))
	if err != nil {
		panic("workload: canonical form does not marshal: " + err.Error())
	}
	v, err := decodeForm(b)
	if err != nil {
		panic("workload: canonical form does not decode: " + err.Error())
	}
	out, err := json.Marshal(compactLists(v))
	if err != nil {
		panic("workload: canonical form does not marshal: " + err.Error())
	}
	return out
}

func decodeForm(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func compactLists(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = compactLists(e)
		}
	case []any:
		if len(x) > formListMax && !slices.ContainsFunc(x, func(e any) bool { _, ok := e.(json.Number); return !ok }) {
			b, _ := json.Marshal(x)
			sum := sha256.Sum256(b)
			return fmt.Sprintf("%d values, sha256:%s", len(x), hex.EncodeToString(sum[:8]))
		}
		for i, e := range x {
			x[i] = compactLists(e)
		}
	}
	return v
}

// FormChanges lists, key by key in order, how the workload of form new differs from
// that of form old: "prompt_tokens.p50: 1000 → 1100". Durations (the form's keys
// ending in _ns) are shown as durations, under the key without its unit; a key on one
// side only shows "none" on the other. An error means a form is not a form.
func FormChanges(old, new json.RawMessage) ([]string, error) {
	flat := func(raw json.RawMessage) (map[string]string, error) {
		v, err := decodeForm(raw)
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		flattenForm("", v, m)
		return m, nil
	}
	a, err := flat(old)
	if err != nil {
		return nil, fmt.Errorf("the baseline's workload form: %w", err)
	}
	b, err := flat(new)
	if err != nil {
		return nil, fmt.Errorf("the run's workload form: %w", err)
	}
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		x, okx := a[k]
		y, oky := b[k]
		if okx && oky && x == y {
			continue
		}
		name := k
		if strings.HasSuffix(k, "_ns") {
			name = strings.TrimSuffix(k, "_ns")
			x, y = formDuration(x), formDuration(y)
		}
		if !okx {
			x = "none"
		}
		if !oky {
			y = "none"
		}
		out = append(out, fmt.Sprintf("%s: %s → %s", name, x, y))
	}
	return out, nil
}

func flattenForm(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flattenForm(p, e, out)
		}
	case []any:
		for i, e := range x {
			flattenForm(fmt.Sprintf("%s[%s]", prefix, formLabel(e, i)), e, out)
		}
	case string:
		out[prefix] = strconv.Quote(x)
	case nil:
		out[prefix] = "null"
	default:
		out[prefix] = fmt.Sprint(x)
	}
}

// formLabel names an element of a list by what it is, where it says: a class by its
// name, an SLO target by its metric and percentile ("ttft p95"); else by its index.
func formLabel(e any, i int) string {
	if m, ok := e.(map[string]any); ok {
		if n, ok := m["name"].(string); ok && n != "" {
			return n
		}
		if metric, ok := m["metric"].(string); ok {
			if p, ok := m["percentile"].(json.Number); ok {
				return metric + " p" + p.String()
			}
		}
	}
	return strconv.Itoa(i)
}

// formDuration shows a form's nanoseconds as a duration; anything else as it is.
func formDuration(s string) string {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return s
	}
	return time.Duration(n).String()
}
