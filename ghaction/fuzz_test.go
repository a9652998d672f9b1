package ghaction

import (
	"os"
	"testing"
)

// FuzzEventPayload: no event payload makes the context loader panic, and a pull
// request it accepts has a number.
func FuzzEventPayload(f *testing.F) {
	data, err := os.ReadFile("../testdata/action/pull_request.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"pull_request":{"number":7,"head":{"repo":{"fork":true}}}}`))
	f.Add([]byte(`{"ref":"refs/heads/main"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		env := map[string]string{"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": "event.json", "GITHUB_REPOSITORY": "acme/serving"}
		c, err := LoadContext(func(k string) string { return env[k] }, func(string) ([]byte, error) { return payload, nil })
		if err != nil {
			return
		}
		if c.IsPullRequest() && c.PRNumber <= 0 {
			t.Fatalf("a pull request without a number: %+v", c)
		}
	})
}
