package sim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkConcurrentStreams holds 5,000 streams open at once against the
// llama-8b-h100 profile (max_num_seqs raised to the number of streams so that all of them decode in
// one batch) and reports how far the simulator's own overhead, and the host, distort
// the step timing it models:
//
//   - full-distortion-%: Σ|actual − modelled step duration| / Σ modelled, over the
//     steps during which all 5,000 streams were running;
//   - distortion-%: the same over the whole run (ramp-up included);
//   - work-%: the step loop's own scheduling and hand-out time / modelled time;
//   - lag-mean-ms, lag-max-ms: lateness of step ends behind the absolute timeline.
//
// Each stream holds two sockets (client and server): the benchmark raises
// RLIMIT_NOFILE to what it needs, or skips saying so. Run it with
//
//	go test -run '^$' -bench ConcurrentStreams -benchtime 1x ./sim/
func BenchmarkConcurrentStreams(b *testing.B) {
	// 500 streams load the host a tenth as much: the difference from 5,000 is the
	// simulator's own (and its clients') share of the distortion.
	for _, n := range []int{500, 5000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) { benchStreams(b, n) })
	}
}

func benchStreams(b *testing.B, streams int) {
	const output = 64
	raiseNoFile(b, uint64(2*streams+512))
	p, _ := LookupProfile("llama-8b-h100")
	p.MaxNumSeqs = streams
	p.MaxNumBatchedTokens = 16384 // every decode plus a prefill chunk
	body := []byte(`{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":"` + words(16) +
		`","max_tokens":` + strconv.Itoa(output) + `,"ignore_eos":true,"stream":true}`)
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		r, err := Start(ctx, Options{Profile: p, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		tr := &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}
		c := &http.Client{Transport: tr}
		var wg sync.WaitGroup
		var failed, tokens atomic.Int64
		// Snapshots of the stats at the first and last step with every stream running.
		var full [2]Stats
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				if st := r.Server.Stats(); st.Running == streams {
					if full[0].Steps == 0 {
						full[0] = st
					}
					full[1] = st
				}
			}
		}()
		// Hold the engine until every stream has arrived, so that the measured steps
		// all run the full batch: this host may take seconds to accept 5,000
		// connections.
		r.Server.eng.pause(true)
		begin := time.Now()
		for i := range streams {
			// Keep at most 500 requests between dial and handler: a burst of dials that
			// overflows the listen backlog costs SYN retransmits of 1 s and more.
			for i-int(r.Server.reqs.Load()) >= 500 {
				time.Sleep(time.Millisecond)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := lightStream(ctx, c, r.URL+"/v1/completions", body)
				tokens.Add(int64(n))
				if err != nil || n != output {
					failed.Add(1)
				}
			}()
		}
		for r.Server.reqs.Load() < uint64(streams) {
			time.Sleep(time.Millisecond)
		}
		arrived := time.Since(begin)
		cpu0 := cpuTime(b)
		begin = time.Now()
		r.Server.eng.pause(false)
		wg.Wait()
		wall := time.Since(begin)
		cpu := cpuTime(b) - cpu0
		close(stop)
		<-sampled
		st := r.Server.Stats()
		r.Close()
		tr.CloseIdleConnections()
		cancel()
		if f := failed.Load(); f > 0 {
			b.Fatalf("%d of %d streams failed", f, streams)
		}
		if st.MaxRunning < streams || full[1].Steps-full[0].Steps < 5 {
			b.Fatalf("only %d streams ran at once (%d steps with all)", st.MaxRunning, full[1].Steps-full[0].Steps)
		}
		dev, mod := full[1].Deviation-full[0].Deviation, full[1].Modelled-full[0].Modelled
		b.ReportMetric(100*float64(dev)/float64(mod), "full-distortion-%")
		b.ReportMetric(float64(full[1].Steps-full[0].Steps), "full-steps")
		b.ReportMetric(100*st.Distortion(), "distortion-%")
		b.ReportMetric(100*float64(st.Work)/float64(st.Modelled), "work-%")
		b.ReportMetric(float64(st.MeanLag())/1e6, "lag-mean-ms")
		b.ReportMetric(float64(st.LagMax)/1e6, "lag-max-ms")
		b.ReportMetric(float64(st.MaxRunning), "max-running")
		b.ReportMetric(float64(tokens.Load())/wall.Seconds(), "tokens/s")
		b.ReportMetric(arrived.Seconds(), "arrival-s")
		// The CPU the whole process (simulator and its clients) used while streaming:
		// what a host needs free for the step timing to hold.
		b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-cores")
		b.ReportMetric(float64(cpu.Microseconds())/float64(tokens.Load()), "cpu-µs/token")
	}
}

// lightStream reads a completions stream with as little work as possible, so that the
// client does not take the CPU the benchmark measures the server on. It returns the
// tokens received.
func lightStream(ctx context.Context, c *http.Client, url string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 4096)
	key := []byte(`"text":"`)
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if i := bytes.Index(line, key); i >= 0 {
			rest := line[i+len(key):]
			n += bytes.IndexByte(rest, '"') / BytesPerToken
		}
		if strings.HasPrefix(string(line), "data: [DONE]") {
			_, _ = io.Copy(io.Discard, br)
			return n, nil
		}
	}
}
