package result

import (
	"reflect"
	"testing"
)

// req is a request of session s, turn n, attempt a: ok and within the SLO as said.
func sreq(i, s, n, a int, sched int64, ok, met bool) Request {
	q := Request{I: i, Session: s, Turn: n, Attempt: a, SchedUS: sched, SLOMet: met}
	if !ok {
		q.Error = "http_500"
	}
	return q
}

func metOf(reqs []Request) []bool {
	m := make([]bool, len(reqs))
	for i := range reqs {
		m[i] = reqs[i].OK() && reqs[i].SLOMet
	}
	return m
}

func TestTasks(t *testing.T) {
	// Session 1: two turns, the first failed once and succeeded on its retry.
	// Session 2: turn 2 failed on every attempt (its session ended there).
	// Session 3: turn 1 failed, turn 2 (the last) succeeded but missed the SLO.
	// Session 4: one turn, fine. Listed out of order: tasks follow first arrivals.
	reqs := []Request{
		sreq(0, 4, 1, 0, 50, true, true),
		sreq(1, 1, 1, 0, 10, false, false),
		sreq(2, 1, 1, 1, 11, true, true),
		sreq(3, 1, 2, 0, 12, true, true),
		sreq(4, 2, 1, 0, 20, true, true),
		sreq(5, 2, 2, 0, 21, false, false),
		sreq(6, 2, 2, 1, 22, false, false),
		sreq(7, 3, 1, 0, 30, false, false),
		sreq(8, 3, 2, 0, 31, true, false),
	}
	for _, c := range []struct {
		success string
		want    []TaskOutcome
	}{
		{TaskSuccessAll, []TaskOutcome{
			{Key: "1", Requests: 3, Retries: 1, Completed: true, Met: true},
			{Key: "2", Requests: 3, Retries: 1},
			{Key: "3", Requests: 2},
			{Key: "4", Requests: 1, Completed: true, Met: true},
		}},
		{TaskSuccessLast, []TaskOutcome{
			{Key: "1", Requests: 3, Retries: 1, Completed: true, Met: true},
			{Key: "2", Requests: 3, Retries: 1},
			{Key: "3", Requests: 2, Completed: true},
			{Key: "4", Requests: 1, Completed: true, Met: true},
		}},
	} {
		rule := &TaskRule{By: TasksBySession, Success: c.success, Retries: 1}
		got := Tasks(reqs, metOf(reqs), rule)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("success %s:\n got %+v\nwant %+v", c.success, got, c.want)
		}
	}

	// The summary over a 2 s span: all 9 requests, 2 of 4 tasks completed and met.
	s := Summarize(reqs, SummaryInput{Window: Window{StartUS: 0, EndUS: 2_000_000}, Tasks: &TaskRule{By: TasksBySession, Success: TaskSuccessAll}})
	ts := s.Tasks
	if ts == nil {
		t.Fatal("no task summary")
	}
	if ts.Tasks != 4 || ts.Completed != 2 || ts.Met != 2 || ts.Requests != 9 || ts.Retries != 2 || ts.RequestsPerCompleted != 4.5 || ts.SuccessRate != 0.5 {
		t.Errorf("summary %+v; want 4 tasks, 2 completed and met, 9 requests, 2 retries, 4.5 requests per completed task", ts)
	}
	if span := s.ArrivalSpanS; span <= 0 || ts.TaskGoodput != 2/span || ts.TasksPS != 2/span {
		t.Errorf("task goodput %v, tasks/s %v over an arrival span of %v s; want 2 / span", ts.TaskGoodput, ts.TasksPS, span)
	}
	if s2 := Summarize(reqs, SummaryInput{Window: Window{StartUS: 0, EndUS: 2_000_000}}); s2.Tasks != nil {
		t.Errorf("no task rule, yet a task summary %+v", s2.Tasks)
	}
}

func TestTasksByTaskID(t *testing.T) {
	// Task a: three requests, the middle one failed (a retry the trace recorded); task
	// b: one request; a request without a task id is a task of its own.
	reqs := []Request{
		{I: 0, Task: "a", SchedUS: 1, SLOMet: true},
		{I: 1, Task: "b", SchedUS: 2, SLOMet: true},
		{I: 2, Task: "a", SchedUS: 3, Error: "timeout"},
		{I: 3, SchedUS: 4, SLOMet: true},
		{I: 4, Task: "a", SchedUS: 5, SLOMet: true},
	}
	all := Tasks(reqs, metOf(reqs), &TaskRule{By: TasksByTaskID, Success: TaskSuccessAll})
	last := Tasks(reqs, metOf(reqs), &TaskRule{By: TasksByTaskID, Success: TaskSuccessLast})
	want := func(ts []TaskOutcome, key string, requests int, completed bool) {
		t.Helper()
		for _, x := range ts {
			if x.Key == key {
				if x.Requests != requests || x.Completed != completed {
					t.Errorf("task %s: %+v; want %d requests, completed %v", key, x, requests, completed)
				}
				return
			}
		}
		t.Errorf("no task %s in %+v", key, ts)
	}
	if len(all) != 3 || all[0].Key != "a" || all[1].Key != "b" {
		t.Fatalf("tasks %+v; want a, b and the lone request, in order of first arrival", all)
	}
	want(all, "a", 3, false) // all: its failed request fails the task
	want(last, "a", 3, true) // last: its last request succeeded
	want(all, "b", 1, true)
	want(all, "request 3", 1, true)
}
