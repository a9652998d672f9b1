package measure

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/slogate/slogate/internal/fsafe"
	"github.com/slogate/slogate/result"
)

// The journal is the run's requests on disk as they finish: one JSON line per request
// (JSONL), after a first line that says which run they belong to. The record itself is
// written once the run has ended; until then, and if the process dies first, the journal
// holds everything measured. Lines are queued by the request goroutines and written by
// one writer, which takes every line queued since its last write in one write: under load
// the journal costs one system call per batch, not per request.
//
// The journal is also where the measured requests are kept while the run is measured
// (loadgen.Config.Spill): the load generator drops each once it is queued here, and the
// requests are read back from the file once the window has closed. The client's memory
// then does not grow with the run's length.

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
	path  string
	runID string
	f     *os.File
	// w is where lines are written: f, save in tests that make the disk fail.
	w      io.Writer
	lines  chan []byte // nil: flush, and say so on flushed
	done   chan struct{}
	redact func(string) string

	flushed chan struct{}

	mu  sync.Mutex
	err error // the first write error; the file takes no line after it
	// unwritten are the lines the file did not take: those of the write that failed and
	// every later one. They are read back with the file's, so a full disk loses nothing.
	unwritten [][]byte
}

// openJournal creates (or truncates) path and writes head.
func openJournal(path string, head JournalHead, redact func(string) string) (*journal, error) {
	// Read back through the same descriptor: a directory removed during the run takes
	// the path with it, not the file.
	// Never through a link, into a pipe or onto a device (fsafe.Create): what the
	// run measures must land in a file that can be read back.
	f, err := fsafe.Create(path)
	if err != nil {
		return nil, err
	}
	head.Schema = JournalSchema
	b, _ := json.Marshal(head) // strings and a time: cannot fail
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return nil, err
	}
	j := &journal{path: path, runID: head.RunID, f: f, w: f, lines: make(chan []byte, 4*journalBatch), done: make(chan struct{}),
		flushed: make(chan struct{}, 1), redact: redact}
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
	var batch [][]byte
	for line := range j.lines {
		if line == nil {
			j.flushed <- struct{}{}
			continue
		}
		buf, batch = append(buf[:0], line...), append(batch[:0], line)
		flush := false
	more:
		for range journalBatch - 1 {
			select {
			case l, ok := <-j.lines:
				if !ok {
					break more
				}
				if l == nil {
					flush = true
					break more
				}
				buf, batch = append(buf, l...), append(batch, l)
			default:
				break more
			}
		}
		j.mu.Lock()
		if j.err == nil {
			if _, err := j.w.Write(buf); err != nil {
				j.err = err
			}
		}
		if j.err != nil {
			// A failed write may have left part of the batch in the file: all of it is
			// kept here, and reading back drops what it finds twice.
			j.unwritten = append(j.unwritten, batch...)
		}
		j.mu.Unlock()
		clear(batch)
		if cap(buf) > 1<<20 {
			buf = nil
		}
		if flush {
			j.flushed <- struct{}{}
		}
	}
}

// flush returns once every line added before it has been written (or kept).
func (j *journal) flush() {
	j.lines <- nil
	<-j.flushed
}

// readBack returns the measured requests of the journal (warm-up ones left out), from
// its file and from the lines the file did not take, each once: the run's Spill
// (loadgen.Config.Spill), called once every request has been added.
func (j *journal) readBack() ([]result.Request, error) {
	j.flush()
	j.mu.Lock()
	werr, unwritten := j.err, slices.Clone(j.unwritten)
	j.mu.Unlock()
	rd := bufio.NewReaderSize(io.NewSectionReader(j.f, 0, math.MaxInt64), 1<<16)
	head, err := rd.ReadBytes('\n')
	var h JournalHead
	if err != nil || json.Unmarshal(head, &h) != nil || h.Schema != JournalSchema {
		return nil, fmt.Errorf("%s: line 1 is not a journal's head", j.path)
	}
	if h.RunID != j.runID {
		// Another run truncated and rewrote the file since this one opened it.
		return nil, fmt.Errorf("%s: holds run %q, not %q", j.path, h.RunID, j.runID)
	}
	type key struct{ i, session, turn int }
	var out []result.Request
	var seen map[key]bool
	if werr != nil {
		seen = map[key]bool{}
	}
	take := func(b []byte) error {
		var q result.Request
		l := JournalLine{Request: &q}
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		if l.Warmup {
			return nil
		}
		if seen != nil {
			k := key{q.I, q.Session, q.Turn}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		out = append(out, q)
		return nil
	}
	for n := 2; ; n++ {
		b, err := rd.ReadBytes('\n')
		if len(b) > 0 {
			if perr := take(b); perr != nil {
				// The last line a failed write cut short is in unwritten, whole.
				if werr != nil && err != nil {
					break
				}
				return nil, fmt.Errorf("%s:%d: %v", j.path, n, perr)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", j.path, n, err)
		}
	}
	for _, b := range unwritten {
		if err := take(b); err != nil {
			return nil, fmt.Errorf("%s: a line kept in memory: %v", j.path, err)
		}
	}
	return out, nil
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
