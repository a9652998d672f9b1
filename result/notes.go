package result

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrorCounts lists a run's error reasons with their counts, most frequent first
// ("3 timeout, 1 http_503").
func ErrorCounts(errs map[string]int) string {
	kinds := slices.SortedFunc(maps.Keys(errs), func(a, b string) int { return cmp.Or(errs[b]-errs[a], strings.Compare(a, b)) })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", errs[k], k)
	}
	return strings.Join(parts, ", ")
}

// RequestNotes are the notes a record needs about its measured requests: facts that a
// reader of the summary alone would miss.
func RequestNotes(reqs []Request) []string {
	var notes []string
	flagged, example := 0, ""
	dials, retried := 0, 0
	var dialMax int64
	for _, r := range reqs {
		if r.DialUS > 0 {
			dials++
			dialMax = max(dialMax, r.DialUS)
		}
		if r.Retries > 0 {
			retried++
		}
		if r.UsageFlag != "" {
			if flagged == 0 {
				example = fmt.Sprintf("request %d: %s", r.I, r.UsageFlag)
			}
			flagged++
		}
	}
	if flagged > 0 {
		notes = append(notes, fmt.Sprintf("usage: the server's token counts of %d requests contradict what was sent or seen and were not used (%s)", flagged, example))
	}
	if dials > 0 {
		notes = append(notes, fmt.Sprintf("connections: %d measured requests dialed a connection inside their latency (max %.2f ms; per request: dial_us)", dials, usToMS(dialMax)))
	}
	if retried > 0 {
		notes = append(notes, fmt.Sprintf("connections: %d requests were resent on a fresh connection because the server had closed theirs before any byte was written (never read: not errors)", retried))
	}
	return notes
}
