package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tasksDir writes a config and its data files into a temporary directory and loads it.
func tasksLoad(t *testing.T, config string, files map[string]string) (*File, error) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "v.yaml")
	if err := os.WriteFile(p, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

const taskTrace = `{"timestamp": 0, "input_length": 100, "output_length": 10, "hash_ids": [], "task_id": "agent-1"}
{"timestamp": 10, "input_length": 120, "output_length": 12, "hash_ids": [], "task_id": 7}
{"timestamp": 20, "input_length": 130, "output_length": 13, "hash_ids": [], "task_id": "agent-1"}
{"timestamp": 30, "input_length": 140, "output_length": 14, "hash_ids": []}
`

func TestTasksFromATrace(t *testing.T) {
	cfg := `version: 1
model: {name: m}
workloads:
  - name: w
    requests: 4
    arrival: {process: trace, format: mooncake, trace: t.jsonl}
    tasks: {success: last}
  - name: d
    requests: 5
    arrival: {process: poisson, rate: 1}
    dataset: {format: prompts, file: p.jsonl}
    output_tokens: 8
    tasks: {}
`
	prompts := `{"prompt": "one", "task_id": "x"}
{"prompt": "two", "task_id": "x"}
{"prompt": "three", "task_id": 3}
`
	f, err := tasksLoad(t, cfg, map[string]string{"t.jsonl": taskTrace, "p.jsonl": prompts})
	if err != nil {
		t.Fatal(err)
	}
	w := &f.Workloads[0]
	if w.Tasks == nil || w.Tasks.By != TasksByTaskID || w.Tasks.Success != TaskSuccessLast {
		t.Fatalf("tasks %+v; want by task_id (the default without sessions), success last", w.Tasks)
	}
	g, err := NewGenerator(w)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"agent-1", "7", "agent-1", ""} {
		if got := g.Request(i).Task; got != id {
			t.Errorf("trace request %d: task %q, want %q", i, got, id)
		}
	}
	// Five requests over three entries: the second pass gets its own task ids.
	gd, err := NewGenerator(&f.Workloads[1])
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"x", "x", "3", "x#1", "x#1"} {
		if got := gd.Request(i).Task; got != id {
			t.Errorf("dataset request %d: task %q, want %q", i, got, id)
		}
	}
	// The tasks change the hash (the success rule judges task goodput); their absence
	// keeps the hash a workload without tasks always had.
	h := Hash(f, w)
	w2 := *w
	w2.Tasks = &Tasks{By: TasksByTaskID, Success: TaskSuccessAll}
	w3 := *w
	w3.Tasks = nil
	if h == Hash(f, &w2) || h == Hash(f, &w3) {
		t.Error("the task rule does not change the workload hash")
	}
}

func TestTasksBadInput(t *testing.T) {
	sessions := "    arrival: {process: poisson, rate: 1}\n    sessions: {count: 2, turns: 3, user_tokens: 8, output_tokens: 8}\n"
	plain := "    requests: 4\n    arrival: {process: poisson, rate: 1}\n    prompt_tokens: 8\n    output_tokens: 8\n"
	trace := "    requests: 4\n    arrival: {process: trace, format: mooncake, trace: t.jsonl}\n"
	head := "version: 1\ntarget: {api: chat}\nmodel: {name: m}\nworkloads:\n  - name: w\n"
	for _, c := range []struct {
		name, body string
		trace      string
		want       string
	}{
		{"sessions: fine, by session by default, with retries", sessions + "    tasks: {retries: 2}\n", "", ""},
		{"by session without sessions", plain + "    tasks: {by: session}\n", "",
			`v.yaml:10:13: tasks by "session" need a workload with "sessions" (each session is a task); for a trace or dataset whose entries carry a task_id, write by: "task_id"`},
		{"by task_id with no task ids", plain + "    tasks: {success: all}\n", "",
			`v.yaml:10:5: tasks by "task_id" need requests that carry a task_id: a trace (format "mooncake", "azure", "burstgpt") or a "prompts" dataset whose entries have one; none of this workload's do`},
		{"by task_id on sessions", sessions + "    tasks: {by: task_id}\n", "",
			`v.yaml:8:13: tasks by "task_id" do not apply to a workload with "sessions": each session is a task (by: "session")`},
		{"retries belong to sessions", trace + "    tasks: {retries: 1}\n", taskTrace,
			`v.yaml:8:22: invalid tasks.retries "1": retries apply to sessions, whose turns wait on each other: a trace or dataset records its own retries as requests of the task`},
		{"too many retries", sessions + "    tasks: {retries: 11}\n", "",
			`v.yaml:8:22: invalid tasks.retries "11": must be between 0 and 10`},
		{"an unknown success rule", sessions + "    tasks: {success: most}\n", "",
			`v.yaml:8:22: invalid tasks.success "most"; expected one of "all", "last"`},
		{"a task id that is neither a string nor an integer", trace + "    tasks: {}\n",
			`{"timestamp": 0, "input_length": 1, "output_length": 1, "task_id": [1]}` + "\n", "t.jsonl:1:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{}
			if c.trace != "" {
				files["t.jsonl"] = c.trace
			}
			_, err := tasksLoad(t, head+c.body, files)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want == "":
				return
			case err == nil:
				t.Fatalf("loaded; want %s", c.want)
			}
			got := err.Error()
			// The path of the temporary directory is not part of the message's point.
			if i := strings.Index(got, "v.yaml:"); i >= 0 && strings.HasPrefix(c.want, "v.yaml:") {
				got = got[i:]
			}
			if i := strings.Index(got, "t.jsonl:"); i >= 0 && strings.HasPrefix(c.want, "t.jsonl:") {
				got = got[i:]
			}
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
