package measure

import (
	"bufio"
	"encoding/json"
	"errors"
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
	t.Parallel()
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
	t.Parallel()
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

// Read back, the journal gives the measured requests, each once and whole, and leaves
// the warm-up out: it is where the run keeps them while measured (loadgen Spill).
func TestJournalReadBack(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.journal.jsonl")
	j, err := openJournal(path, JournalHead{Workload: "w", RunID: "r1"}, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	const goroutines, each = 4, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for k := range each {
				j.add(k%5 == 0, &result.Request{I: g*each + k, Session: g + 1, Turn: k + 1, EndUS: int64(k), ITLUS: []int64{int64(k), 7}})
			}
		})
	}
	wg.Wait()
	got, err := j.readBack()
	if err != nil {
		t.Fatal(err)
	}
	checkReadBack(t, got, goroutines, each)
}

func checkReadBack(t *testing.T, got []result.Request, goroutines, each int) {
	t.Helper()
	seen := map[int]bool{}
	for _, q := range got {
		k := q.I % each
		if seen[q.I] || k%5 == 0 || q.Turn != k+1 || len(q.ITLUS) != 2 || q.ITLUS[0] != int64(k) {
			t.Fatalf("request %+v read back twice, a warm-up one, or not as added", q)
		}
		seen[q.I] = true
	}
	if want := goroutines * each * 4 / 5; len(got) != want {
		t.Errorf("%d requests read back, want %d", len(got), want)
	}
}

// A journal whose file stops taking lines (a full disk) keeps the rest in memory, and
// reading back gives every request once: nothing measured is lost to the disk.
func TestJournalReadBackAfterWriteError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.journal.jsonl")
	j, err := openJournal(path, JournalHead{Workload: "w", RunID: "r1"}, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	add := func(g int) {
		for k := range 500 {
			j.add(k%5 == 0, &result.Request{I: g*500 + k, Turn: k + 1, ITLUS: []int64{int64(k), 7}})
		}
	}
	add(0)
	j.flush() // these are in the file
	// The disk fills up: a write takes part of a line and fails, later ones fail.
	j.mu.Lock()
	j.w = &fullDisk{f: j.f, room: 20}
	j.mu.Unlock()
	add(1)
	got, err := j.readBack()
	if err != nil {
		t.Fatal(err)
	}
	checkReadBack(t, got, 2, 500)
	if err := j.close(); err == nil {
		t.Error("close reported no error for a journal whose writes failed")
	}

	// A file another run has rewritten since is not read as this run's.
	j, err = openJournal(path, JournalHead{Workload: "w", RunID: "r2"}, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	if err := os.WriteFile(path, []byte(`{"schema":"slogate.journal/v1","workload":"w","run_id":"r3"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := j.readBack(); err == nil || !strings.Contains(err.Error(), `holds run "r3", not "r2"`) {
		t.Errorf("read back of a rewritten journal: %v", err)
	}
}

// fullDisk takes room bytes, then fails every write.
type fullDisk struct {
	f    *os.File
	room int
}

func (d *fullDisk) Write(b []byte) (int, error) {
	n := min(d.room, len(b))
	d.room -= n
	d.f.Write(b[:n])
	if n < len(b) {
		return n, errors.New("no space left on device")
	}
	return n, nil
}
