package workload

import (
	"fmt"
	"strings"
	"testing"
)

// TestValidateRules covers validation rules one at a time. Each snippet replaces the
// workload (or adds a section) of a file that is otherwise valid; want is the whole
// report, or "" when the file must load.
func TestValidateRules(t *testing.T) {
	const head = "version: 1\nmodel: {name: m}\n"
	const arrival = "    arrival: {process: poisson, rate: 1}\n"
	const lengths = "    prompt_tokens: 8\n    output_tokens: 8\n"
	// wl is a file whose workload starts at line 3 and whose lines from 6 on are given.
	wl := func(lines string) string {
		return head + "workloads:\n  - name: w\n    requests: 10\n" + lines
	}
	tests := []struct {
		name, src, want string
	}{
		{"a url with a query would put it in every request's path",
			wl(arrival+lengths) + "target: {url: \"http://h:8000/?key=x\"}\n",
			`v.yaml:9:15: invalid target.url "http://h:8000/?key=x": a query or a fragment would land in the middle of every request's path: give the base URL alone (an API key goes in target.api_key_env)`},
		{"a url with a fragment",
			wl(arrival+lengths) + "target: {url: \"http://h:8000/#x\"}\n",
			`v.yaml:9:15: invalid target.url "http://h:8000/#x": a query or a fragment would land in the middle of every request's path: give the base URL alone (an API key goes in target.api_key_env)`},
		{"a closed loop of a billion users is refused when the file loads",
			head + "workloads:\n  - name: w\n    requests: 10\n    arrival: {process: closed, users: 1000000000}\n" + lengths,
			`v.yaml:6:39: invalid arrival.users "1000000000": at most 10000: each user is a goroutine and a connection held through the run (shard the run across machines for more)`},
		{"a closed loop of 10000 users loads",
			head + "workloads:\n  - name: w\n    requests: 10\n    arrival: {process: closed, users: 10000}\n" + lengths, ""},
		{"an empty url is allowed: --target sets it",
			wl(arrival+lengths) + "target: {url: \"\", api_key_env: \"\"}\n", ""},
		{"target.swap: sleep needs no start (engines already running)",
			wl(arrival+lengths) + "target: {swap: {mode: sleep, level: 1, wake_timeout: 30s}}\n", ""},
		{"target.swap needs a mode",
			wl(arrival+lengths) + "target: {swap: {level: 1}}\n",
			`v.yaml:9:16: missing required key "mode" in "target.swap"; say how an A/B job puts the engine aside between blocks: one of "sleep", "memory_release", "resident", "restart"`},
		{"an unknown swap mode lists the valid ones",
			wl(arrival+lengths) + "target: {swap: {mode: hibernate}}\n",
			`v.yaml:9:23: invalid target.swap.mode "hibernate"; expected one of "sleep", "memory_release", "resident", "restart"`},
		{"a restart needs target.start",
			wl(arrival+lengths) + "target: {swap: {mode: restart}}\n",
			`v.yaml:9:23: invalid target.swap.mode "restart": a restart needs target.start (the command that starts the engine)`},
		{"level 2 discards the weights: refused",
			wl(arrival+lengths) + "target: {swap: {mode: sleep, level: 2}}\n",
			`v.yaml:9:37: invalid target.swap.level "2": expected 1 (level 2 discards the weights, and a wake alone does not reload them)`},
		{"a level belongs to sleep alone",
			wl(arrival+lengths) + "target: {swap: {mode: resident, level: 1}}\n",
			`v.yaml:9:40: invalid target.swap.level "1": only mode "sleep" has a level`},
		{"a wake timeout must be positive",
			wl(arrival+lengths) + "target: {swap: {mode: memory_release, wake_timeout: 0s}}\n",
			`v.yaml:9:53: invalid target.swap.wake_timeout "0s": must be more than 0s`},
		{"tokens and groups belong to shared prefixes",
			wl(arrival + lengths + "    prefix_cache: {mode: cold, tokens: 64}\n"),
			`v.yaml:9:32: "tokens" does not apply to mode "cold" in "prefix_cache"; it applies to "shared"`},
		{"prefix_cache.reset is a boolean",
			wl(arrival + lengths + "    prefix_cache: {mode: cold, reset: yes}\n"),
			`v.yaml:9:39: invalid prefix_cache.reset "yes": expected true or false`},
		{"prefix_cache: warm loads, as a scalar or a mapping with reset",
			wl(arrival + lengths + "    prefix_cache: warm\n"), ""},
		{"prefix_cache warm resets too",
			wl(arrival + lengths + "    prefix_cache: {mode: warm, reset: true}\n"), ""},
		{"warm takes no shared prefix",
			wl(arrival + lengths + "    prefix_cache: {mode: warm, tokens: 64}\n"),
			`v.yaml:9:32: "tokens" does not apply to mode "warm" in "prefix_cache"; it applies to "shared"`},
		{"warm needs a known number of requests: a closed loop bounded by duration has none",
			head + "workloads:\n  - name: w\n    duration: 10s\n    arrival: {process: closed, users: 2}\n" + lengths + "    prefix_cache: warm\n",
			`v.yaml:9:19: invalid prefix_cache "warm": prefix_cache mode "warm" primes every prompt the run will send, and a closed loop bounded by duration alone sends a number not known in advance: set requests`},
		{"warm does not apply to sessions: their later turns carry answers not known before the run",
			head + "target: {api: chat}\nworkloads:\n  - name: w\n    arrival: {process: poisson, rate: 1}\n    sessions: {count: 2, turns: 3, user_tokens: 8, output_tokens: 8}\n    prefix_cache: warm\n",
			`v.yaml:8:5: prefix_cache mode "warm" does not apply to a workload with "sessions": each session opens with its own salt and shares its history with its own later turns`},
		{"warm in a closed loop with requests is fine",
			head + "workloads:\n  - name: w\n    requests: 10\n    arrival: {process: closed, users: 2}\n" + lengths + "    prefix_cache: warm\n", ""},
		{"prefix_cache.reset applies to both modes",
			wl(arrival + lengths + "    prefix_cache: {mode: shared, tokens: 4, reset: true}\n"), ""},
		{"the mapping form of prefix_cache needs a mode",
			wl(arrival + lengths + "    prefix_cache: {tokens: 64}\n"),
			`v.yaml:9:19: missing required key "mode" in "prefix_cache"; expected one of "cold", "shared", "rag", "warm"`},
		{"classes that bring their own lengths need none from the workload",
			wl(arrival + "    classes:\n      - {name: a, weight: 1, prompt_tokens: 8, output_tokens: 8}\n"), ""},
		{"a class without lengths needs the workload's",
			wl(arrival + "    prompt_tokens: 8\n    classes:\n      - {name: a, weight: 1}\n"),
			`v.yaml:9:9: missing required key "output_tokens" in "classes[0]"; the workload sets none to inherit`},
		{"duplicate class names",
			wl(arrival + lengths + "    classes: [{name: a, weight: 1}, {name: a, weight: 2}]\n"),
			`v.yaml:9:44: duplicate class name "a"; first used at line 9`},
		{"a class needs a weight",
			wl(arrival + lengths + "    classes: [{name: a}]\n"),
			`v.yaml:9:15: missing required key "weight" in "classes[0]"; give a relative weight such as 1`},
		{"the last step may omit its duration",
			wl("    arrival: {process: poisson, profile: {steps: [{rate: 1, duration: 1s}, {rate: 2}]}}\n" + lengths), ""},
		{"burstiness is gamma's",
			wl("    arrival: {process: poisson, rate: 1, burstiness: 2}\n" + lengths),
			`v.yaml:6:42: "burstiness" does not apply to process "poisson" in "arrival"; it applies to "gamma"`},
		{"a profile with nothing in it",
			wl("    arrival: {process: poisson, profile: {}}\n" + lengths),
			`v.yaml:6:42: "arrival.profile" needs one of "steps", "ramp", "diurnal"`},
		{"a ramp from 0 to 0 sends nothing",
			wl("    arrival: {process: poisson, profile: {ramp: {from: 0, to: 0, over: 1m}}}\n" + lengths),
			`v.yaml:6:63: invalid arrival.profile.ramp.to "0": a ramp from 0 to 0 sends nothing`},
		{"lognormal min above p50",
			wl(arrival + "    prompt_tokens: {dist: lognormal, p50: 10, p95: 20, max: 30, min: 11}\n    output_tokens: 8\n"),
			`v.yaml:7:70: invalid prompt_tokens.min "11": must be at most p50 (10)`},
		{"uniform lengths start at 1",
			wl(arrival + "    prompt_tokens: {dist: uniform, min: 0, max: 5}\n    output_tokens: 8\n"),
			`v.yaml:7:41: invalid prompt_tokens.min "0": token counts must be at least 1`},
		{"an empirical list may not be empty",
			wl(arrival + "    prompt_tokens: {dist: empirical, values: []}\n    output_tokens: 8\n"),
			`v.yaml:7:46: invalid prompt_tokens.values (a list): at least one value is needed`},
		{"exactly one of requests and duration",
			wl(arrival + lengths + "    duration: 1m\n"),
			`v.yaml:9:5: "requests" and "duration" are exclusive in "workloads[0]"; give one`},
		{"a rule's min above its max",
			wl(arrival+lengths) + "gate: {rules: {goodput: {min: 5, max: 1}}}\n",
			`v.yaml:9:31: invalid gate.rules.goodput.min "5": must not be above max`},
		{"a tolerance over 100% is a typo",
			wl(arrival+lengths) + "gate: {rules: {goodput: {direction: higher, tolerance: 150%}}}\n",
			`v.yaml:9:56: invalid gate.rules.goodput.tolerance "150%": must be between 0% and 100%`},
		{"a duplicate rule",
			wl(arrival+lengths) + "gate:\n  rules:\n    goodput: {direction: higher}\n    goodput: {direction: lower}\n",
			`v.yaml:12:5: duplicate rule for "goodput" in "gate.rules"`},
		{"workload names become file names",
			head + "workloads:\n  - name: Chat/Steady\n    requests: 1\n" + arrival + lengths,
			`v.yaml:4:11: invalid name "Chat/Steady": workload names become file names: lower-case letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("v.yaml", []byte(tt.src))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("report\n got: %s\nwant: %s\nfile:\n%s", got, tt.want, numbered(tt.src))
			}
		})
	}
}

func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		fmt.Fprintf(&b, "%3d| %s\n", i+1, l)
	}
	return b.String()
}

// TestCheckURLRefusesQueries: a URL given outside the file (--target, the Action's
// target input) with a query or a fragment is refused as target.url is: the API's paths
// are appended to it.
func TestCheckURLRefusesQueries(t *testing.T) {
	for u, ok := range map[string]bool{
		"http://127.0.0.1:8000": true,
		"https://h/v1-prefix/":  true,
		"http://h:8000/?key=x":  false,
		"http://h:8000/#frag":   false,
		"http://h:8000/?":       false,
		"ftp://h:8000":          false,
	} {
		err := CheckURL(u)
		if (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", u, err, ok)
		}
		if !ok && strings.Contains(u, "http://h:8000/") && (err == nil || !strings.Contains(err.Error(), "a query or a fragment")) {
			t.Errorf("CheckURL(%q) = %v, want it to say why", u, err)
		}
	}
}

func TestURLSecrets(t *testing.T) {
	for u, want := range map[string][]string{
		"http://u:sk-123@h:8000":  {"sk-123", "sk-123", "u:sk-123", "u:sk-123"},
		"http://u:p%40ss@h":       {"p@ss", "p%40ss", "u:p@ss", "u:p%40ss"},
		"http://u@h":              nil,
		"http://127.0.0.1:8000/x": nil,
	} {
		if got := URLSecrets(u); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("URLSecrets(%q) = %q, want %q", u, got, want)
		}
	}
}
