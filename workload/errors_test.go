package workload

import (
	"errors"
	"testing"
)

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		// the usual case: file:line:col: message, as editors and annotations expect
		{Error{File: "slogate.yaml", Line: 12, Col: 7, Msg: "bad"}, "slogate.yaml:12:7: bad"},
		// a problem with the file itself (unreadable) has no position
		{Error{File: "slogate.yaml", Msg: "cannot read: permission denied"}, "slogate.yaml: cannot read: permission denied"},
		// no file and no position: the message alone, never a leading ": "
		{Error{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%#v.Error() = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestErrorsJoinAndUnwrap(t *testing.T) {
	es := Errors{{File: "a.yaml", Line: 1, Col: 1, Msg: "one"}, {File: "a.yaml", Line: 2, Col: 3, Msg: "two"}}
	if got, want := es.Error(), "a.yaml:1:1: one\na.yaml:2:3: two"; got != want {
		t.Errorf("Errors.Error() = %q, want %q", got, want)
	}
	var err error = es
	var one Error
	if !errors.As(err, &one) || one.Msg != "one" {
		t.Errorf("errors.As found %+v, want the first error", one)
	}
	if got := len(es.Unwrap()); got != 2 {
		t.Errorf("Unwrap returned %d errors, want 2", got)
	}
}
