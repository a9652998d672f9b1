package measure

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/result"
)

// Requests added from many goroutines all reach the file, one line each, after the head;
// a secret the server echoed is redacted there as in the record.
func TestJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.journal.jsonl")
	var keys result.Secrets
	keys.Add("sk-SECRET-key")
	j, err := openJournal(path, JournalHead{Workload: "w", RunID: "r1", Start: time.Unix(0, 0)}, keys.String)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 8, 300
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for k := range each {
				q := result.Request{I: g*each + k, EndUS: int64(k), ITLUS: []int64{1, 2}}
				if k == 0 {
					q.Error, q.ErrorDetail = "http_401", "bad key sk-SECRET-key"
				}
				j.add(k%2 == 1, &q)
			}
		})
	}
	wg.Wait()
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "SECRET") {
		t.Error("the journal holds the secret")
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Scan()
	var head JournalHead
	if err := json.Unmarshal(sc.Bytes(), &head); err != nil || head.Schema != JournalSchema || head.RunID != "r1" {
		t.Fatalf("head %q: %v", sc.Text(), err)
	}
	seen := map[int]bool{}
	warm := 0
	for sc.Scan() {
		var q result.Request
		l := JournalLine{Request: &q}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if seen[q.I] || len(q.ITLUS) != 2 {
			t.Errorf("request %d twice or its gaps lost: %q", q.I, sc.Text())
		}
		seen[q.I] = true
		if l.Warmup {
			warm++
		}
	}
	if len(seen) != goroutines*each || warm != goroutines*each/2 {
		t.Errorf("%d requests (%d warm-up), want %d (%d)", len(seen), warm, goroutines*each, goroutines*each/2)
	}
}

// A journal that cannot be written says so when closed; adding to it never blocks the
// run.
func TestJournalWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.journal.jsonl")
	j, err := openJournal(path, JournalHead{Workload: "w"}, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	j.f.Close() // every later write fails
	for i := range 3000 {
		j.add(false, &result.Request{I: i})
	}
	if err := j.close(); err == nil {
		t.Error("close reported no error for a journal whose writes failed")
	}
}
