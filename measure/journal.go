package measure

import (
	"encoding/json"
	"os"
	"sync"
	"time"

	"github.com/slogate/slogate/result"
)

// The journal is the run's requests on disk as they finish: one JSON line per request
// (JSONL), after a first line that says which run they belong to. The record itself is
// written once the run has ended; until then, and if the process dies first, the journal
// holds everything measured. Lines are queued by the request goroutines and written by
// one writer, which takes every line queued since its last write in one write: under load
// the journal costs one system call per batch, not per request.

// JournalSchema is the schema of a journal's first line.
const JournalSchema = "slogate.journal/v1"

// JournalHead is a journal's first line.
type JournalHead struct {
	Schema   string    `json:"schema"`
	Workload string    `json:"workload"`
	RunID    string    `json:"run_id"`
	Trial    int       `json:"trial,omitempty"`
	Shard    string    `json:"shard,omitempty"`
	Start    time.Time `json:"start"`
}

// JournalLine is every later line: a request, and whether it was a warm-up one.
type JournalLine struct {
	Warmup bool `json:"warmup,omitempty"`
	*result.Request
}

// journalBatch is how many queued lines one write takes at most.
const journalBatch = 512

type journal struct {
	f      *os.File
	lines  chan []byte
	done   chan struct{}
	redact func(string) string

	mu  sync.Mutex
	err error // the first write error; later lines are dropped, the record still comes
}

// openJournal creates (or truncates) path and writes head.
func openJournal(path string, head JournalHead, redact func(string) string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	head.Schema = JournalSchema
	b, _ := json.Marshal(head) // strings and a time: cannot fail
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return nil, err
	}
	j := &journal{f: f, lines: make(chan []byte, 4*journalBatch), done: make(chan struct{}), redact: redact}
	go j.write()
	return j, nil
}

// add queues one finished request. It is safe for concurrent use.
func (j *journal) add(warm bool, q *result.Request) {
	c := *q
	// What the server sent may echo a secret: the journal is redacted as the record is.
	c.ErrorDetail, c.UsageFlag, c.Finish = j.redact(c.ErrorDetail), j.redact(c.UsageFlag), j.redact(c.Finish)
	b, err := json.Marshal(JournalLine{Warmup: warm, Request: &c})
	if err != nil {
		// Request holds no float and encoding/json repairs invalid UTF-8, so this does
		// not happen; were it to, the record still has the request.
		return
	}
	j.lines <- append(b, '\n')
}

func (j *journal) write() {
	defer close(j.done)
	var buf []byte
	for line := range j.lines {
		buf = append(buf[:0], line...)
	more:
		for range journalBatch - 1 {
			select {
			case l, ok := <-j.lines:
				if !ok {
					break more
				}
				buf = append(buf, l...)
			default:
				break more
			}
		}
		if _, err := j.f.Write(buf); err != nil {
			j.mu.Lock()
			if j.err == nil {
				j.err = err
			}
			j.mu.Unlock()
		}
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
}

// close writes what is queued and closes the file; it returns the first error.
func (j *journal) close() error {
	close(j.lines)
	<-j.done
	err := j.f.Close()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	return err
}
