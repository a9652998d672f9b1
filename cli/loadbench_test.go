package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestLoadbenchBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"loadbench", "--rerun-procs", "2"},
		{"loadbench", "--rerun-procs", "0/2"},
		{"loadbench", "--points", "1000"},
	} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != ExitBadInput || !strings.Contains(errb.String(), "want") {
			t.Errorf("%v: exit %d, %s", args, code, errb.String())
		}
	}
}
