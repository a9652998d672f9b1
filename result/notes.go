package result

import "fmt"

// RequestNotes are the notes a record needs about its measured requests: facts that a
// reader of the summary alone would miss.
func RequestNotes(reqs []Request) []string {
	var notes []string
	flagged, example := 0, ""
	for _, r := range reqs {
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
	return notes
}
