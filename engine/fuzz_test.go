package engine

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

// seedFiles adds every file matching the patterns (relative to the package) to f.
func seedFiles(f *testing.F, patterns ...string) {
	f.Helper()
	n := 0
	for _, p := range patterns {
		paths, _ := filepath.Glob(p)
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
			n++
		}
	}
	if n == 0 {
		f.Fatalf("no seeds in %v", patterns)
	}
}

// FuzzLineReader: the SSE line splitter gives the lines of its input, terminators
// ("\n", "\r\n") removed, however the reads are cut, and never a line over its cap.
func FuzzLineReader(f *testing.F) {
	seedFiles(f, "../testdata/sse/sse_*.txt")
	f.Add([]byte("data: a\r\n\r\ndata: b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxLine = 1 << 10
		for _, r := range []io.Reader{bytes.NewReader(data), iotest.OneByteReader(bytes.NewReader(data)), iotest.HalfReader(bytes.NewReader(data))} {
			var lr lineReader
			lr.reset(r, maxLine, 1<<20)
			var got [][]byte
			tooLarge := false
			for {
				line, err := lr.next()
				if err == errTooLarge {
					tooLarge = true
					break
				}
				if err != nil {
					break
				}
				if len(line) > maxLine {
					t.Fatalf("line of %d bytes over the cap %d", len(line), maxLine)
				}
				got = append(got, append([]byte(nil), line...))
			}
			want := bytes.Split(data, []byte("\n"))
			if len(want) > 0 && len(want[len(want)-1]) == 0 {
				want = want[:len(want)-1]
			}
			for i := range want {
				want[i] = bytes.TrimSuffix(want[i], []byte("\r"))
			}
			if tooLarge {
				continue // some line was over the cap: what came before must still match
			}
			if len(got) != len(want) {
				t.Fatalf("%d lines, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("line %d: %q, want %q", i, got[i], want[i])
				}
			}
		}
	})
}

// FuzzMetricsPage: no metrics page makes the parser or a snapshot panic, and a value
// taken from the page is finite.
func FuzzMetricsPage(f *testing.F) {
	seedFiles(f, "../testdata/engines/*_metrics*.txt", "../testdata/sse/metrics_*.txt")
	f.Add([]byte("vllm:num_requests_waiting NaN\nvllm:kv_cache_usage_perc +Inf\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fams, err := ParseMetricFamilies(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, set := range []MetricSet{vllmMetrics, sglangMetrics, tgiMetrics, trtllmMetrics, llamacppMetrics} {
			s := set.Snapshot(fams)
			for _, v := range []Value{s.QueueDepth, s.Running, s.KVUsage, s.Preemptions, s.PrefixHits, s.PrefixQueries, s.PrefixHitRate} {
				if v.OK && (v.V != v.V || v.V > 1e308 || v.V < -1e308) {
					t.Fatalf("non-finite value %v kept from the page", v.V)
				}
			}
		}
		labelInt(fams, "vllm:cache_config_info", "num_gpu_blocks")
	})
}

// FuzzTokenizeAnswer: any answer decodes to a count that is not negative, or an error.
func FuzzTokenizeAnswer(f *testing.F) {
	for _, s := range []string{`{"count":5,"max_model_len":4096,"tokens":[1,2,3,4,5]}`, `{"tokens":[1,2]}`, `{"tokens":[]}`, `{"count":-3}`, `[]`, `{"count":1e99}`} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, vllm bool) {
		shape := shapeLlamaCpp
		if vllm {
			shape = shapeVLLM
		}
		n, miss, err := parseTokenizeAnswer(data, shape, "some text")
		if err == nil && (n < 0 || miss != "") {
			t.Fatalf("count %d, miss %q without an error", n, miss)
		}
	})
}
