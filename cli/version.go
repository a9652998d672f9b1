package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version, Commit and Date are stamped at build time by the release build
// (scripts/release.sh, .goreleaser.yaml):
//
//	-ldflags "-X github.com/slogate/slogate/cli.Version=v1.2.3
//	          -X github.com/slogate/slogate/cli.Commit=0123abc...
//	          -X github.com/slogate/slogate/cli.Date=2026-12-01T19:30:00Z"
//
// Unstamped, the module version and the VCS revision and time from the build info are used
// (go install ...@vX.Y.Z stamps the module version; a build in a clone stamps the VCS
// fields unless -buildvcs=false).
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// Build is what a binary knows of its own build.
type Build struct {
	Version string // v1.2.3, a branch or SHA the action was built from, or "dev"
	Commit  string // VCS revision; empty when unknown
	Date    string // build or commit time, RFC 3339; empty when unknown
}

// BuildOf resolves the build stamps: the ldflags values first, then the build info.
// It is a pure function of its arguments so that the fallbacks can be tested.
func BuildOf(version, commit, date string, bi *debug.BuildInfo) Build {
	b := Build{Version: version, Commit: commit, Date: date}
	if bi != nil {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.time" && b.Date == "":
				b.Date = s.Value
			}
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	return b
}

// ThisBuild is the running binary's build.
func ThisBuild() Build {
	bi, _ := debug.ReadBuildInfo()
	return BuildOf(Version, Commit, Date, bi)
}

// ToolVersion returns the tool's version and commit as recorded in run records.
func ToolVersion() (version, commit string) {
	b := ThisBuild()
	return b.Version, b.Commit
}

func (a *app) cmdVersion(args []string) int {
	fs := a.flagSet("version", "slogate version\n\nPrints the tool version, commit, build date, Go version and platform.")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	b := ThisBuild()
	fmt.Fprintf(a.stdout, "slogate %s (commit %s, built %s, %s %s/%s)\n",
		b.Version, orUnknown(b.Commit), orUnknown(b.Date), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return ExitOK
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
