package result

import (
	"cmp"
	"slices"
	"strconv"
)

// Task grouping (Record.Tasks): what an agent pays for is a completed task, not a request.
// A task is a session of a multi-turn workload, or the requests of a trace or dataset that
// share a task_id. Its calls are its turns (a session) or its requests (a task id); a call
// that failed and was sent again (TaskRule.Retries) is one call of several attempts, and
// every attempt is a request the task paid for.

// Task grouping and success rules.
const (
	TasksBySession  = "session"
	TasksByTaskID   = "task_id"
	TaskSuccessAll  = "all"
	TaskSuccessLast = "last"
)

// TaskRule is how a run's requests form tasks and when a task has succeeded.
type TaskRule struct {
	// By is TasksBySession (Request.Session) or TasksByTaskID (Request.Task).
	By string `json:"by"`
	// Success is TaskSuccessAll (every call's last attempt succeeded) or TaskSuccessLast
	// (the task's last call did).
	Success string `json:"success"`
	// Retries is how often a failed call was sent again (sessions); 0: never.
	Retries int `json:"retries,omitempty"`
}

// TaskSummary is a run's tasks (DESIGN §4's goodput, per task).
type TaskSummary struct {
	By      string `json:"by"`
	Success string `json:"success"`
	// Tasks counts the tasks with a measured request; Completed those whose success rule
	// held; Met the completed tasks whose counted calls (every call's last attempt under
	// "all", the last call's under "last") also met the SLO.
	Tasks     int `json:"tasks"`
	Completed int `json:"completed"`
	Met       int `json:"met"`
	// Requests is every request of the tasks, retries included; Retries the requests that
	// sent a failed call again.
	Requests int `json:"requests"`
	Retries  int `json:"retries,omitempty"`
	// SuccessRate is Completed / Tasks.
	SuccessRate float64 `json:"success_rate"`
	// RequestsPerTask is Requests / Tasks; RequestsPerCompleted is Requests / Completed
	// (what one completed task costs in requests, failed tasks included; 0 when none
	// completed).
	RequestsPerTask      float64 `json:"requests_per_task"`
	RequestsPerCompleted float64 `json:"requests_per_completed_task"`
	// TasksPS is completed tasks per second and TaskGoodput met tasks per second, both
	// over the span of scheduled arrivals (as goodput_rps; the window where it has none).
	TasksPS     float64 `json:"tasks_per_s"`
	TaskGoodput float64 `json:"task_goodput"`
}

// TaskOutcome is one task of a run.
type TaskOutcome struct {
	Key       string
	Requests  int
	Retries   int
	Completed bool
	Met       bool
}

// taskKey is the task a request belongs to under rule ("" for none: a request outside
// any session, or without a task id).
func taskKey(q *Request, rule *TaskRule) string {
	if rule == nil {
		return ""
	}
	if rule.By == TasksBySession {
		if q.Session == 0 {
			return ""
		}
		return strconv.Itoa(q.Session)
	}
	return q.Task
}

// Tasks groups reqs into tasks under rule, in the order of each task's first scheduled
// request; met[i] says whether reqs[i] succeeded within the SLO. Requests outside any task
// are each a task of one call. A call is a session's turn (its attempts share the turn)
// or one request of a task id.
func Tasks(reqs []Request, met []bool, rule *TaskRule) []TaskOutcome {
	if rule == nil {
		return nil
	}
	type call struct {
		turn, attempt int
		sched         int64
		ok, met       bool
	}
	type task struct {
		first   int64
		calls   []call
		retries int
	}
	byKey := map[string]*task{}
	var keys []string
	for i := range reqs {
		q := &reqs[i]
		k := taskKey(q, rule)
		if k == "" {
			k = "request " + strconv.Itoa(q.I)
		}
		t := byKey[k]
		if t == nil {
			t = &task{first: q.SchedUS}
			byKey[k] = t
			keys = append(keys, k)
		}
		t.first = min(t.first, q.SchedUS)
		if q.Attempt > 0 {
			t.retries++
		}
		turn := q.Turn
		if rule.By != TasksBySession {
			turn = i // every request of a task id is its own call
		}
		t.calls = append(t.calls, call{turn: turn, attempt: q.Attempt, sched: q.SchedUS, ok: q.OK(), met: met[i]})
	}
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(byKey[a].first, byKey[b].first) })
	out := make([]TaskOutcome, len(keys))
	for j, k := range keys {
		t := byKey[k]
		// Each call's last attempt decides it; calls in the order they were made.
		slices.SortStableFunc(t.calls, func(a, b call) int {
			return cmp.Or(cmp.Compare(a.turn, b.turn), cmp.Compare(a.attempt, b.attempt), cmp.Compare(a.sched, b.sched))
		})
		var last []call
		for i, c := range t.calls {
			if i+1 < len(t.calls) && t.calls[i+1].turn == c.turn {
				continue
			}
			last = append(last, c)
		}
		o := TaskOutcome{Key: k, Requests: len(t.calls), Retries: t.retries}
		switch rule.Success {
		case TaskSuccessLast:
			c := last[len(last)-1]
			o.Completed, o.Met = c.ok, c.met
		default:
			o.Completed, o.Met = true, true
			for _, c := range last {
				o.Completed = o.Completed && c.ok
				o.Met = o.Met && c.met
			}
		}
		o.Met = o.Met && o.Completed
		out[j] = o
	}
	return out
}

// summarizeTasks is the run's task summary over span seconds (0: none).
func summarizeTasks(ts []TaskOutcome, rule *TaskRule, span float64) *TaskSummary {
	s := &TaskSummary{By: rule.By, Success: rule.Success, Tasks: len(ts)}
	for _, t := range ts {
		s.Requests += t.Requests
		s.Retries += t.Retries
		if t.Completed {
			s.Completed++
		}
		if t.Met {
			s.Met++
		}
	}
	s.SuccessRate = ratio(s.Completed, s.Tasks)
	s.RequestsPerTask = ratio(s.Requests, s.Tasks)
	s.RequestsPerCompleted = ratio(s.Requests, s.Completed)
	if span > 0 {
		s.TasksPS = float64(s.Completed) / span
		s.TaskGoodput = float64(s.Met) / span
	}
	return s
}
