package workload

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Tasks (workloads[].tasks) group requests into what an agent pays for: a session of a
// multi-turn workload, or the requests of a trace or dataset that share a task_id. The
// record reports tasks per second, task goodput and, in the capacity worksheet, the cost
// per completed task; a gate rule can name task_goodput.
//
//	tasks:
//	  by: session      # session (the default with sessions) or task_id
//	  success: all     # all: every call succeeds (its last attempt); last: the last call
//	  retries: 2       # sessions: a failed turn is sent again up to 2 times

var (
	validTasksBy      = []string{TasksBySession, TasksByTaskID}
	validTaskSuccess  = []string{TaskSuccessAll, TaskSuccessLast}
	taskIDTraceFormat = []string{TraceMooncake, TraceAzure, TraceBurstGPT}
)

// tasks decodes workloads[].tasks.
func (d *decoder) tasks(path string, n *yaml.Node) *Tasks {
	t := &Tasks{}
	if k, ok := d.keys[path]; ok {
		t.Line, t.Col = k.Line, k.Column
	}
	d.mapping(n, path, "", []field{
		{"by", func(p string, v *yaml.Node) { t.By = d.enum(p, v, validTasksBy) }},
		{"success", func(p string, v *yaml.Node) { t.Success = d.enum(p, v, validTaskSuccess) }},
		{"retries", func(p string, v *yaml.Node) { t.Retries = d.int(p, v) }},
	})
	return t
}

// validateTasks checks workloads[].tasks of the workload at wp and fills its defaults:
// by session where the workload has sessions, else by task_id; success all.
func (d *decoder) validateTasks(wp string, w *Workload) {
	p := join(wp, "tasks")
	t := w.Tasks
	if t == nil || !d.ok(p) {
		return
	}
	if t.Success == "" {
		t.Success = TaskSuccessAll
	}
	if t.By == "" {
		t.By = TasksByTaskID
		if w.Sessions != nil {
			t.By = TasksBySession
		}
	}
	bp := join(p, "by")
	switch t.By {
	case TasksBySession:
		if w.Sessions == nil {
			d.errorf(d.keyNode(bp), "tasks by %q need a workload with \"sessions\" (each session is a task); for a trace or dataset whose entries carry a task_id, write by: %q", TasksBySession, TasksByTaskID)
			d.bad[bp] = true
		}
	case TasksByTaskID:
		where := bp
		if !d.has(bp) {
			where = p
		}
		switch {
		case w.Sessions != nil:
			d.errorf(d.keyNode(where), "tasks by %q do not apply to a workload with \"sessions\": each session is a task (by: %q)", TasksByTaskID, TasksBySession)
			d.bad[where] = true
		case unread(w):
			// The trace or dataset could not be read: its own error says why.
		case !hasTaskIDs(w):
			d.errorf(d.keyNode(where), "tasks by %q need requests that carry a task_id: a trace (format %s) or a %q dataset whose entries have one; none of this workload's do",
				TasksByTaskID, quoteList(taskIDTraceFormat), DatasetPrompts)
			d.bad[where] = true
		}
	}
	rp := join(p, "retries")
	if d.ok(rp) {
		d.check(rp, t.Retries >= 0 && t.Retries <= MaxTaskRetries, "must be between 0 and %d", MaxTaskRetries)
		if t.Retries > 0 && w.Sessions == nil {
			d.fail(rp, d.nodes[rp], "retries apply to sessions, whose turns wait on each other: a trace or dataset records its own retries as requests of the task")
		}
	}
}

// unread reports whether w's trace with lengths or dataset failed to load.
func unread(w *Workload) bool {
	return (w.Arrival.HasLengths() && len(w.Arrival.Records) == 0) || (w.Dataset != nil && len(w.Dataset.Entries) == 0)
}

// hasTaskIDs reports whether any request of w carries a task id.
func hasTaskIDs(w *Workload) bool {
	if w.Arrival.HasLengths() {
		for i := range w.Arrival.Records {
			if w.Arrival.Records[i].Task != "" {
				return true
			}
		}
	}
	if w.Dataset != nil {
		for i := range w.Dataset.Entries {
			if w.Dataset.Entries[i].Task != "" {
				return true
			}
		}
	}
	return false
}

// taskID is a task_id field of a trace or dataset line: a string, or an integer written
// as a number (a trace's session counter).
type taskID string

// maxTaskIDLen bounds a task id: it is kept on every request of the record.
const maxTaskIDLen = 256

func (t *taskID) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = taskID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		if _, err := n.Int64(); err == nil {
			*t = taskID(n.String())
			return nil
		}
	}
	return fmt.Errorf("task_id %s: expected a string or an integer", b)
}

// checkTaskID is the problem with a task id, "" for none.
func checkTaskID(id string) string {
	if len(id) > maxTaskIDLen {
		return fmt.Sprintf("task_id of %d bytes is over the bound of %d", len(id), maxTaskIDLen)
	}
	if strings.TrimSpace(id) != id {
		return fmt.Sprintf("task_id %q has leading or trailing space", id)
	}
	return ""
}

// passTask is the task id of request i replaying entry i mod n whose id is id: the
// entry's own on the first pass over the entries, "id#k" on pass k+1 (k ≥ 1), so that
// one task's requests are never pooled with a later replay of them.
func passTask(id string, i, n int) string {
	if id == "" || n <= 0 || i < n {
		return id
	}
	return id + "#" + strconv.Itoa(i/n)
}
