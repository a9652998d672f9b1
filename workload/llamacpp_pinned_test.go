package workload

import "testing"

// The llama.cpp checks' pinned file loads, declares the per-slot KV cache, and its
// over-slot workload cannot fit a 512-token slot.
func TestLlamaCppPinnedFile(t *testing.T) {
	f, err := Load("../testdata/llamacpp/slogate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Target.KVUnified == nil || *f.Target.KVUnified {
		t.Errorf("target.kv_unified = %v, want false", f.Target.KVUnified)
	}
	var over *Workload
	for i := range f.Workloads {
		w := &f.Workloads[i]
		err := CheckContext(w, 512, "", "")
		if w.Name == "llamacpp-over-slot" {
			over = w
			if err == nil {
				t.Error("llamacpp-over-slot fits a 512-token slot")
			}
		} else if err != nil {
			t.Errorf("%s: %v", w.Name, err)
		}
	}
	if over == nil {
		t.Fatal("no llamacpp-over-slot workload")
	}
}
