package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Schedules that would be built in memory before the first request are bounded, and the
// message states the bound.
func TestScheduleBounds(t *testing.T) {
	head := "version: 1\nmodel: {name: m}\nworkloads:\n  - name: w\n"
	tail := "    prompt_tokens: 8\n    output_tokens: 8\n"
	tests := []struct {
		name, body, want string
	}{
		// 2e9 requests at 1e12/s: 16 GB of arrival offsets before anything is sent.
		{"requests over the bound", "    requests: 2000000000\n    arrival: {process: poisson, rate: 1000000000000}\n",
			`b.yaml:5:15: invalid requests "2000000000": 2000000000 requests is over the bound of 1000000 on one run's schedule`},
		// 100000h at 1e6/s: 3.6e14 requests.
		{"duration × rate over the bound", "    duration: 100000h\n    arrival: {process: constant, rate: 1000000}\n",
			`b.yaml:5:15: invalid duration "100000h": duration 100000h0m0s × rate 1e+06/s schedules about 3.6e+14 requests, over the bound of 1000000`},
		// A profile's peak counts, not its start.
		{"a ramp's peak", "    duration: 1h\n    arrival: {process: poisson, profile: {ramp: {from: 1, to: 1000, over: 1h}}}\n",
			`over the bound of 1000000`},
		{"warm-up over the bound", "    requests: 10\n    warmup: {requests: 5000000}\n    arrival: {process: poisson, rate: 1}\n",
			`warm-up requests is over the bound of 1000000`},
		// The bound itself is allowed.
		{"at the bound", "    requests: 1000000\n    arrival: {process: poisson, rate: 1000}\n", ""},
		{"a long run at a modest rate", "    duration: 24h\n    arrival: {process: poisson, rate: 10}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("b.yaml", []byte(head+tt.body+tail))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error\n got: %v\nwant: …%s…", err, tt.want)
			}
		})
	}
}

// The config file itself is bounded too.
func TestConfigFileBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 100<<20); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "huge.yaml: cannot read: 104857600 bytes, over the limit of 4194304 bytes (4 MiB)") {
		t.Fatalf("got %v", err)
	}
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("/dev/zero: got %v", err)
	}
}
