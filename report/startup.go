package report

import (
	"fmt"
	"strings"

	"github.com/slogate/slogate/result"
)

// startupText says how a started engine's start went: when it was ready, each step on
// the way, the first token, and the phases its own log named.
func startupText(s *result.Startup) string {
	secs := func(ms float64) string { return num(ms/1e3) + " s" }
	var b strings.Builder
	fmt.Fprintf(&b, "ready after %s (port %s", secs(s.ReadyMS), secs(s.PortMS))
	if s.HealthMS > 0 {
		fmt.Fprintf(&b, ", /health %s", secs(s.HealthMS))
	}
	fmt.Fprintf(&b, ", model listed %s)", secs(s.ModelMS))
	switch {
	case s.FirstTokenMS > 0:
		fmt.Fprintf(&b, ", first token %s", secs(s.FirstTokenMS))
	case s.FirstTokenError != "":
		fmt.Fprintf(&b, ", first request failed (%s)", s.FirstTokenError)
	}
	if len(s.Phases) > 0 {
		parts := make([]string, len(s.Phases))
		for i, p := range s.Phases {
			parts[i] = fmt.Sprintf("%s %s s", p.Name, num(p.Seconds))
			if p.Source == "seen" {
				parts[i] += " (between its lines)"
			}
		}
		fmt.Fprintf(&b, "; its log: %s", strings.Join(parts, ", "))
	}
	return b.String()
}
