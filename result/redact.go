package result

import (
	"io"
	"reflect"
	"strings"
	"sync"
)

// Redacted replaces a secret wherever it appears.
const Redacted = "[redacted]"

// minSecret is the shortest value treated as a secret: replacing a one- or two-letter
// "key" everywhere would garble every record without protecting anything.
const minSecret = 4

// Secrets are the values that must never be written: the engine's API key, the GitHub
// token. The zero value redacts nothing.
type Secrets struct {
	mu   sync.RWMutex
	vals []string
}

// Add adds secrets; empty and too-short values are ignored, and so is every value on
// a nil Secrets.
func (s *Secrets) Add(vals ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if len(v) >= minSecret && !contains(s.vals, v) {
			s.vals = append(s.vals, v)
		}
	}
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// String returns str with every secret replaced by Redacted.
func (s *Secrets) String(str string) string {
	if s == nil {
		return str
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.vals {
		if strings.Contains(str, v) {
			str = strings.ReplaceAll(str, v, Redacted)
		}
	}
	return str
}

// Any reports whether s holds a secret.
func (s *Secrets) Any() bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.vals) > 0
}

// Redact replaces the secrets in every string reachable from v (a pointer to a record,
// a gate result, any struct of strings, maps and slices), map keys included.
func (s *Secrets) Redact(v any) {
	if !s.Any() {
		return
	}
	s.walk(reflect.ValueOf(v))
}

func (s *Secrets) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			if v.Kind() == reflect.Interface && v.Elem().Kind() == reflect.String {
				if v.CanSet() {
					v.Set(reflect.ValueOf(s.String(v.Elem().String())).Convert(v.Elem().Type()))
				}
				return
			}
			s.walk(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				s.walk(f)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return // []byte: raw data, not text
		}
		for i := range v.Len() {
			s.walk(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		iter := v.MapRange()
		type kv struct{ k, v reflect.Value }
		var changed []kv
		for iter.Next() {
			k, e := iter.Key(), iter.Value()
			ne := reflect.New(e.Type()).Elem()
			ne.Set(e)
			s.walk(ne)
			nk := k
			if k.Kind() == reflect.String {
				if r := s.String(k.String()); r != k.String() {
					nk = reflect.ValueOf(r).Convert(k.Type())
				}
			}
			changed = append(changed, kv{k, ne})
			if nk != k {
				v.SetMapIndex(k, reflect.Value{})
				changed[len(changed)-1].k = nk
			}
		}
		for _, c := range changed {
			v.SetMapIndex(c.k, c.v)
		}
	case reflect.String:
		if v.CanSet() {
			if r := s.String(v.String()); r != v.String() {
				v.SetString(r)
			}
		}
	}
}

// Writer returns w with every secret replaced in what is written through it. Each
// Write is redacted on its own: callers write whole lines.
func (s *Secrets) Writer(w io.Writer) io.Writer { return &redactWriter{s: s, w: w} }

type redactWriter struct {
	s *Secrets
	w io.Writer
}

func (r *redactWriter) Write(p []byte) (int, error) {
	if !r.s.Any() {
		return r.w.Write(p)
	}
	out := r.s.String(string(p))
	if _, err := io.WriteString(r.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}
