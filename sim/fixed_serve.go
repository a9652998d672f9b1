package sim

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// The fixed-timing engine's own HTTP/1.1 server (ServeFixed): what it spends per event
// is what limits the benchmark's highest points, so events are not written by a
// goroutine per stream woken by its own timer. A few schedulers (one per processor) each
// hold their streams in a heap by next due time, sleep until the earliest, and write
// every event due then straight to its connection: one write of prebuilt bytes per
// event, no goroutine woken per event, no net/http response layers. Each connection's
// goroutine only reads requests (keep-alive) and hands streams to a scheduler.
//
// A client that stops reading would stall its scheduler once the socket's buffer is
// full: a write that takes longer than fixedWriteTimeout drops that connection.

const fixedWriteTimeout = time.Second

// fixedStream is one response being written by a scheduler.
type fixedStream struct {
	c        net.Conn
	start    time.Time // request arrival
	k, n     int       // events written, events due in all
	content  []byte
	last     []byte // the last event and the tail
	due      time.Time
	ttft     time.Duration
	itl      time.Duration
	done     chan bool // true: written whole
	failed   bool
	heapSlot int
}

type streamHeap []*fixedStream

func (h streamHeap) Len() int           { return len(h) }
func (h streamHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h streamHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].heapSlot = i; h[j].heapSlot = j }
func (h *streamHeap) Push(x any)        { s := x.(*fixedStream); s.heapSlot = len(*h); *h = append(*h, s) }
func (h *streamHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return s
}

type fixedScheduler struct {
	add chan *fixedStream
}

func (s *fixedScheduler) run(stop <-chan struct{}) {
	var h streamHeap
	timer := time.NewTimer(time.Hour)
	for {
		var wake <-chan time.Time
		if len(h) > 0 {
			timer.Reset(time.Until(h[0].due))
			wake = timer.C
		}
		select {
		case <-stop:
			timer.Stop()
			for _, st := range h {
				st.done <- false
			}
			return
		case st := <-s.add:
			timer.Stop()
			heap.Push(&h, st)
			continue
		case <-wake:
		}
		now := time.Now()
		for len(h) > 0 && !h[0].due.After(now) {
			st := h[0]
			if !st.write() {
				heap.Pop(&h)
				continue
			}
			heap.Fix(&h, 0)
		}
	}
}

// write writes st's next event (and its tail after the last one) and reports whether
// the stream goes on; when it ends, it says how on done.
func (st *fixedStream) write() bool {
	b := st.content
	last := st.k == st.n-1
	if last {
		b = st.last
	}
	st.c.SetWriteDeadline(time.Now().Add(fixedWriteTimeout))
	if _, err := st.c.Write(b); err != nil {
		st.done <- false
		return false
	}
	st.k++
	if last {
		st.done <- true
		return false
	}
	// An absolute schedule: a late write does not delay the ones after it.
	st.due = st.start.Add(st.ttft + time.Duration(st.k)*st.itl)
	return true
}

// Serve serves f on ln with its own schedulers until ln is closed or stop is closed.
func (f *Fixed) Serve(ln net.Listener, stop <-chan struct{}) error {
	scheds := make([]*fixedScheduler, runtime.GOMAXPROCS(0))
	for i := range scheds {
		scheds[i] = &fixedScheduler{add: make(chan *fixedStream, 64)}
		go scheds[i].run(stop)
	}
	var next atomic.Uint64
	h := f.Handler()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		s := scheds[next.Add(1)%uint64(len(scheds))]
		go f.serveConn(c, s, h, stop)
	}
}

func (f *Fixed) serveConn(c net.Conn, s *fixedScheduler, h http.Handler, stop <-chan struct{}) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 4<<10)
	done := make(chan bool, 1)
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		arrived := time.Now()
		chat := r.URL.Path == "/v1/chat/completions"
		if r.Method != http.MethodPost || (!chat && r.URL.Path != "/v1/completions") {
			// Anything else (/v1/models, /health, a wrong method) through the handler.
			if !serveBuffered(c, h, r) {
				return
			}
			continue
		}
		var req fixedRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil || req.MaxTokens < 1 {
			body := `{"error":{"message":"need a JSON body with max_tokens >= 1"}}`
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\nConnection: close\r\n\r\n"+body)
			return
		}
		io.Copy(io.Discard, r.Body)
		content := fixedTextChunk
		if chat {
			content = fixedChatChunk
		}
		tail := fixedTail(chat, max(req.promptChars()/4, 1), req.MaxTokens)
		head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nContent-Length: " +
			strconv.Itoa(req.MaxTokens*len(content)+len(tail)) + "\r\n"
		if r.Close {
			head += "Connection: close\r\n"
		}
		if _, err := io.WriteString(c, head+"\r\n"); err != nil {
			return
		}
		st := &fixedStream{c: c, start: arrived, n: req.MaxTokens, content: content, last: append(append([]byte(nil), content...), tail...), ttft: f.TTFT, itl: f.ITL, done: done}
		st.due = arrived.Add(f.TTFT)
		select {
		case s.add <- st:
		case <-stop:
			return
		}
		if ok := <-done; !ok || r.Close {
			return
		}
	}
}

type fixedRequest struct {
	MaxTokens int    `json:"max_tokens"`
	Prompt    string `json:"prompt"`
	Messages  []struct {
		Content string `json:"content"`
	} `json:"messages"`
}

func (r *fixedRequest) promptChars() int {
	n := len(r.Prompt)
	for _, m := range r.Messages {
		n += len(m.Content)
	}
	return n
}

// bufferedWriter collects a handler's whole response.
type bufferedWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedWriter) Header() http.Header { return w.h }
func (w *bufferedWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *bufferedWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// serveBuffered runs h for r and writes its response whole; false when the connection
// is to close.
func serveBuffered(c net.Conn, h http.Handler, r *http.Request) bool {
	w := &bufferedWriter{h: http.Header{}}
	h.ServeHTTP(w, r)
	io.Copy(io.Discard, r.Body)
	w.WriteHeader(http.StatusOK)
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(w.status) + " " + http.StatusText(w.status) + "\r\n")
	w.h.Del("Content-Length")
	w.h.Write(&b)
	b.WriteString("Content-Length: " + strconv.Itoa(w.body.Len()) + "\r\n")
	if r.Close {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(w.body.Bytes())
	_, err := c.Write(b.Bytes())
	return err == nil && !r.Close
}
