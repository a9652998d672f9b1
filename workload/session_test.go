package workload

import (
	"strings"
	"testing"
)

// turnsOf lists every session's system prompt and turns of g.
func turnsOf(g *Generator, n int) ([]Session, [][]Turn) {
	var ss []Session
	var ts [][]Turn
	for i := range n {
		s := g.Session(i)
		ss = append(ss, s)
		var t []Turn
		for k := 1; k <= s.Turns; k++ {
			t = append(t, g.Turn(i, k))
		}
		ts = append(ts, t)
	}
	return ss, ts
}

// The same file and seed give the same sessions byte for byte; another run id changes
// the salt that opens each session and nothing else.
func TestSessionsDeterministic(t *testing.T) {
	chdirRoot(t)
	for _, file := range []string{"testdata/config/valid_sessions.yaml", "testdata/config/valid_agent.yaml", "testdata/config/valid_sharegpt_sessions.yaml"} {
		gen := func(run string) *Generator {
			f, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			g, err := NewGenerator(&f.Workloads[0])
			if err != nil {
				t.Fatal(err)
			}
			g.SetRunID(run)
			return g
		}
		n := gen("").w.Sessions.Count
		s1, t1 := turnsOf(gen("run-a"), n)
		s2, t2 := turnsOf(gen("run-a"), n)
		s3, t3 := turnsOf(gen("run-b"), n)
		totalTurns, grew := 0, false
		for i := range n {
			if s1[i] != s2[i] || len(t1[i]) != len(t2[i]) {
				t.Fatalf("%s session %d differs between two generators", file, i)
			}
			for k := range t1[i] {
				if t1[i][k] != t2[i][k] {
					t.Fatalf("%s session %d turn %d differs between two generators", file, i, k+1)
				}
			}
			// The salt opens the session (the system prompt, else the first message).
			a, b := s1[i].System, s3[i].System
			if a == "" {
				a, b = t1[i][0].Text, t3[i][0].Text
			}
			if a == b || a[saltLen:] != b[saltLen:] || !strings.HasSuffix(a[:saltLen], " slogate] ") {
				t.Errorf("%s session %d: another run id must change the salt only:\n%.60q\n%.60q", file, i, a, b)
			}
			for k := range t1[i] {
				if k > 0 && t1[i][k] != t3[i][k] {
					t.Errorf("%s session %d turn %d changed with the run id", file, i, k+1)
				}
				if k > 0 && t1[i][k].Think < 0 {
					t.Errorf("%s session %d turn %d think %v", file, i, k+1, t1[i][k].Think)
				}
			}
			totalTurns += len(t1[i])
			grew = grew || len(t1[i]) > 1
		}
		if !grew {
			t.Errorf("%s: no session has more than one turn", file)
		}
		t.Logf("%s: %d sessions, %d turns", file, n, totalTurns)
	}
}

// ShareGPT sessions replay each conversation's human turns in order, with the answers'
// lengths as the output lengths.
func TestShareGPTSessions(t *testing.T) {
	chdirRoot(t)
	f, err := Load("testdata/config/valid_sharegpt_sessions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := &f.Workloads[0]
	g, err := NewGenerator(w)
	if err != nil {
		t.Fatal(err)
	}
	multi := 0
	for i := range w.Sessions.Count {
		e := &w.Dataset.Entries[i%len(w.Dataset.Entries)]
		s := g.Session(i)
		if s.Turns != len(e.Turns) || s.System != "" {
			t.Fatalf("session %d: %d turns, conversation has %d exchanges", i, s.Turns, len(e.Turns))
		}
		for k := 1; k <= s.Turns; k++ {
			tr := g.Turn(i, k)
			want := e.Turns[k-1]
			if !strings.HasSuffix(tr.Text, want.User) || (k > 1 && tr.Text != want.User) {
				t.Errorf("session %d turn %d sends %.40q, want the conversation's message %.40q", i, k, tr.Text, want.User)
			}
			if tr.OutputTokens != g.estimateTokens(want.Reply) {
				t.Errorf("session %d turn %d output %d, the answer's length is %d", i, k, tr.OutputTokens, g.estimateTokens(want.Reply))
			}
		}
		if s.Turns > 1 {
			multi++
		}
	}
	if multi == 0 {
		t.Fatal("no conversation of the dataset has more than one exchange")
	}
}

// What changes the sessions sent changes the workload hash.
func TestSessionsHash(t *testing.T) {
	chdirRoot(t)
	base, err := Load("testdata/config/valid_sessions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h0 := Hash(base, &base.Workloads[0])
	for name, edit := range map[string]func(s *Sessions){
		"count":  func(s *Sessions) { s.Count++ },
		"turns":  func(s *Sessions) { s.Turns.Max++ },
		"user":   func(s *Sessions) { s.UserTokens.P50++ },
		"output": func(s *Sessions) { s.OutputTokens.P95++ },
		"think":  func(s *Sessions) { s.ThinkTime.P50 += 1e6 },
		"system": func(s *Sessions) { s.SystemPromptTokens = 0 },
	} {
		f, _ := Load("testdata/config/valid_sessions.yaml")
		edit(f.Workloads[0].Sessions)
		if Hash(f, &f.Workloads[0]) == h0 {
			t.Errorf("changing sessions %s leaves the hash unchanged", name)
		}
	}
	// Replaying the ShareGPT file as sessions differs from its first turns alone.
	sg, err := Load("testdata/config/valid_sharegpt_sessions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h1 := Hash(sg, &sg.Workloads[0])
	sg.Workloads[0].Dataset.Sessions = false
	if Hash(sg, &sg.Workloads[0]) == h1 {
		t.Error("dataset.sessions is not in the hash")
	}
}
