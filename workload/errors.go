package workload

import (
	"fmt"
	"strings"
)

// Error is one problem in a workload file, placed at the offending key or value so that an
// editor, a terminal and a GitHub annotation can all point at it.
type Error struct {
	File      string
	Line, Col int // 1-based; 0 when the problem has no position (an unreadable file)
	Msg       string
}

func (e Error) Error() string {
	if e.Line == 0 {
		if e.File == "" {
			return e.Msg
		}
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Errors is every problem found in a file, in file order. A whole file is checked before
// anything is reported, so that one edit-and-rerun fixes everything at once.
type Errors []Error

func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find the individual Error values.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
