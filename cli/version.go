package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version and Commit are set at build time with
// -ldflags "-X github.com/slogate/slogate/cli.Version=v1.2.3 -X github.com/slogate/slogate/cli.Commit=abc123".
// Without them the module version and VCS revision from the build info are used.
var (
	Version = ""
	Commit  = ""
)

// ToolVersion returns the tool's version and commit as recorded in run records.
func ToolVersion() (version, commit string) {
	version, commit = Version, Commit
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && commit == "" {
				commit = s.Value
			}
		}
	}
	if version == "" {
		version = "dev"
	}
	return version, commit
}

func (a *app) cmdVersion(args []string) int {
	fs := a.flagSet("version", "slogate version\n\nPrints the tool version, commit and Go version.")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	v, c := ToolVersion()
	if c == "" {
		c = "unknown"
	}
	fmt.Fprintf(a.stdout, "slogate %s (commit %s, %s %s/%s)\n", v, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return ExitOK
}
