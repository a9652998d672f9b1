package result

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// JSON has no NaN or infinity, and encoding/json refuses to write them: one such float
// anywhere in a record would make the whole record unwritable, losing a run over a value
// an engine sent. So every writer here replaces them first (ReplaceNonFinite) and says so
// in the record's notes.

// NonFinite is one float that was not a finite number, by its JSON path.
type NonFinite struct {
	Path  string // e.g. "summary.kv_usage.p95" or "series.engine.kv_usage[3].v"
	Value string // "NaN", "+Inf" or "-Inf"
}

// ReplaceNonFinite replaces every NaN and ±Inf float reachable from v (a pointer) with 0,
// in place, and returns what it replaced in a stable order (struct fields in order, map
// keys sorted). It follows pointers, structs, slices, arrays, maps and interfaces;
// anything else is left alone.
func ReplaceNonFinite(v any) []NonFinite {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil
	}
	var out []NonFinite
	replaceNonFinite(rv.Elem(), "", &out)
	return out
}

func replaceNonFinite(v reflect.Value, path string, out *[]NonFinite) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			what := "NaN"
			if math.IsInf(f, 1) {
				what = "+Inf"
			} else if math.IsInf(f, -1) {
				what = "-Inf"
			}
			*out = append(*out, NonFinite{Path: path, Value: what})
			if v.CanSet() {
				v.SetFloat(0)
			}
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Pointer {
			replaceNonFinite(v.Elem(), path, out)
			return
		}
		// An interface holds a copy: fix the copy and put it back.
		c := reflect.New(v.Elem().Type()).Elem()
		c.Set(v.Elem())
		n := len(*out)
		replaceNonFinite(c, path, out)
		if len(*out) > n && v.CanSet() {
			v.Set(c)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			replaceNonFinite(v.Field(i), join(path, name), out)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return
		}
		for i := range v.Len() {
			replaceNonFinite(v.Index(i), path+"["+strconv.Itoa(i)+"]", out)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			return strings.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
		})
		for _, k := range keys {
			// Map values are not addressable: fix a copy and store it back.
			c := reflect.New(v.Type().Elem()).Elem()
			c.Set(v.MapIndex(k))
			n := len(*out)
			replaceNonFinite(c, join(path, fmt.Sprint(k.Interface())), out)
			if len(*out) > n {
				v.SetMapIndex(k, c)
			}
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// maxNamed is how many replaced values a note names before it counts the rest.
const maxNamed = 5

// NonFiniteNote is the note a record carries when ReplaceNonFinite changed it; "" when
// nothing was replaced.
func NonFiniteNote(nf []NonFinite) string {
	if len(nf) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d values were not finite numbers (JSON has none) and are written as 0: ", len(nf))
	for i, x := range nf[:min(len(nf), maxNamed)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x.Path + " (" + x.Value + ")")
	}
	if len(nf) > maxNamed {
		fmt.Fprintf(&b, " and %d more", len(nf)-maxNamed)
	}
	return b.String()
}
