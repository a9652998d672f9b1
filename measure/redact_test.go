package measure

import (
	"strings"
	"testing"
)

func TestRedactCommand(t *testing.T) {
	for _, c := range []struct {
		args   []string
		shown  string
		hidden []string
	}{
		{[]string{"vllm", "serve", "m", "--api-key", "sk-1", "--port", "8000"}, "vllm serve m --api-key [redacted] --port 8000", []string{"sk-1"}},
		{[]string{"srv", "--hf-token=hf_abc", "--TOKEN", "t0k", "--password=", "--keyfile"}, "srv --hf-token=[redacted] --TOKEN [redacted] --password=[redacted] --keyfile", []string{"hf_abc", "t0k", ""}},
		{[]string{"llama-server", "-m", "model.gguf", "--api-key-file", "/run/key"}, "llama-server -m model.gguf --api-key-file [redacted]", []string{"/run/key"}},
		// Numbers and names, not secrets.
		{[]string{"vllm", "serve", "--max-num-batched-tokens", "8192", "--tokenizer", "t", "--ssl-keyfile", "k.pem"}, "vllm serve --max-num-batched-tokens 8192 --tokenizer t --ssl-keyfile k.pem", nil},
	} {
		shown, hidden := RedactCommand(c.args)
		if shown != c.shown || strings.Join(hidden, "|") != strings.Join(c.hidden, "|") {
			t.Errorf("RedactCommand(%q) = %q, %q; want %q, %q", c.args, shown, hidden, c.shown, c.hidden)
		}
	}
}
