package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildOf(t *testing.T) {
	t.Parallel()
	vcs := &debug.BuildInfo{
		Main: debug.Module{Version: "v0.3.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "feedface"},
			{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
		},
	}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Build
	}{
		// A release build: the stamps win over whatever the build info says.
		{"stamped", "v1.2.3", "abc123", "2026-12-01T19:30:00Z", vcs, Build{"v1.2.3", "abc123", "2026-12-01T19:30:00Z"}},
		// go install ...@v0.3.0 from the module proxy: the module version, and the VCS
		// fields of a clone build.
		{"build info", "", "", "", vcs, Build{"v0.3.0", "feedface", "2026-11-30T10:00:00Z"}},
		// go build in a clone without VCS stamping: nothing is known but that it is a dev build.
		{"devel", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Build{Version: "dev"}},
		{"no build info", "", "", "", nil, Build{Version: "dev"}},
		// The action's source build stamps the version only: commit and date still fall back.
		{"version only", "main", "", "", vcs, Build{"main", "feedface", "2026-11-30T10:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BuildOf(tc.version, tc.commit, tc.date, tc.bi); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestVersionPrintsStamps sets the package's version stamps, so it is not parallel: it
// runs and puts them back before any parallel test starts.
func TestVersionPrintsStamps(t *testing.T) {
	old := [3]string{Version, Commit, Date}
	t.Cleanup(func() { Version, Commit, Date = old[0], old[1], old[2] })
	Version, Commit, Date = "v9.8.7", "0123456789abcdef", "2026-12-01T19:30:00Z"
	a, out, _ := testApp(t)
	if code := a.run(cmdCtx(t), []string{"version"}); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	want := "slogate v9.8.7 (commit 0123456789abcdef, built 2026-12-01T19:30:00Z, go"
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("output %q, want prefix %q", out, want)
	}
}
