package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slogate/slogate/sim"
)

// ciGitHubFailure runs `slogate ci` in mode gate on a pull request whose comment GitHub
// refuses (422), with the inputs given.
func ciWith(t *testing.T, inputs map[string]string, commentStatus int) (code int, log string, outputs map[string]string) {
	t.Helper()
	url := startSim(t, sim.Options{Seed: 1})
	dir := t.TempDir()
	cfg := strings.Replace(tinyConfig, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n", 1) +
		"gate:\n  baselines: baselines\n  missing_baseline: allow\n"
	if err := os.WriteFile(filepath.Join(dir, "slogate.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "GET" && r.URL.Path == "/user":
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"message":"Resource not accessible by integration"}`))
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/comments"):
			w.Write([]byte(`[]`))
		default:
			w.WriteHeader(commentStatus)
			w.Write([]byte(`{"message":"Validation Failed"}`))
		}
	}))
	t.Cleanup(gh.Close)
	event := filepath.Join(dir, "pr.json")
	os.WriteFile(event, []byte(`{"pull_request":{"number":7,"head":{"sha":"0123456789abcdef","repo":{"full_name":"acme/serving","fork":false}},"base":{"sha":"fedcba9876543210","repo":{"full_name":"acme/serving"}}}}`), 0o644)
	outFile := filepath.Join(dir, "out")
	env := map[string]string{
		"INPUT_CONFIG": "slogate.yaml", "INPUT_MODE": "gate", "INPUT_TARGET": url, "INPUT_GITHUB-TOKEN": "tok-1",
		"INPUT_WORKING-DIRECTORY": dir, "GITHUB_API_URL": gh.URL, "GITHUB_REPOSITORY": "acme/serving",
		"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event, "GITHUB_OUTPUT": outFile,
		"GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary"), "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "42",
	}
	for k, v := range inputs {
		env[k] = v
	}
	a, out, errb := testApp(t)
	a.getenv = func(k string) string { return env[k] }
	a.git = fakeGit
	code = a.run(cmdCtx(t), []string{"ci"})
	outputs = map[string]string{}
	data, _ := os.ReadFile(outFile)
	lines := strings.Split(string(data), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if k, _, ok := strings.Cut(lines[i], "<<"); ok {
			outputs[k] = lines[i+1]
		}
	}
	return code, out.String() + errb.String(), outputs
}

func TestCICommentFailureIsAWarning(t *testing.T) {
	t.Parallel()
	long(t)
	code, log, outputs := ciWith(t, nil, http.StatusUnprocessableEntity)
	if code != ExitOK || !strings.Contains(log, "::warning") || !strings.Contains(log, "posting the pull request comment") {
		t.Errorf("exit %d, want %d with a warning annotation\n%s", code, ExitOK, log)
	}
	if v := outputs["verdict"]; v == "error" || v == "" {
		t.Errorf("verdict %q: a comment failure changed the verdict", v)
	}
	// The workflow may ask for the comment to be required.
	code, log, _ = ciWith(t, map[string]string{"INPUT_FAIL-ON-COMMENT-ERROR": "true"}, http.StatusUnprocessableEntity)
	if code != ExitFailure {
		t.Errorf("fail-on-comment-error: exit %d, want %d\n%s", code, ExitFailure, log)
	}
	// fail-on: never holds for GitHub failures too.
	code, log, _ = ciWith(t, map[string]string{"INPUT_FAIL-ON-COMMENT-ERROR": "true", "INPUT_FAIL-ON": "never"}, http.StatusUnprocessableEntity)
	if code != ExitOK {
		t.Errorf("fail-on never: exit %d, want %d\n%s", code, ExitOK, log)
	}
}

func TestCIEmptyTokenSaysNoComment(t *testing.T) {
	t.Parallel()
	code, log, _ := ciWith(t, map[string]string{"INPUT_GITHUB-TOKEN": ""}, http.StatusCreated)
	if code != ExitOK || !strings.Contains(log, "github-token is empty: no pull request comment posted") {
		t.Errorf("exit %d\n%s", code, log)
	}
}

func TestCIBadInputSetsOutputs(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		in   map[string]string
		says []string
	}{
		"bad mode":   {map[string]string{"INPUT_MODE": "gait"}, []string{`"gait"`}},
		"bad target": {map[string]string{"INPUT_TARGET": "127.0.0.1:8000"}, []string{"127.0.0.1:8000"}},
		// A calibration with engine starts every 2 runs of a config that cannot start one.
		"calibrate-restart-every without target.start": {map[string]string{"INPUT_MODE": "baseline", "INPUT_CALIBRATE-RUNS": "4", "INPUT_CALIBRATE-RESTART-EVERY": "2"},
			[]string{"input calibrate-restart-every 2: ", "slogate.yaml has no target.start"}},
	} {
		t.Run(name, func(t *testing.T) {
			code, log, outputs := ciWith(t, c.in, http.StatusCreated)
			if code != ExitBadInput {
				t.Errorf("exit %d, want %d\n%s", code, ExitBadInput, log)
			}
			for _, say := range c.says {
				if !strings.Contains(log, say) {
					t.Errorf("the log does not say %q\n%s", say, log)
				}
			}
			if outputs["verdict"] != "error" || outputs["results-dir"] == "" {
				t.Errorf("outputs %v: want verdict error and results-dir", outputs)
			}
		})
	}
}
