// Command fakerelease serves a directory of release assets on loopback as GitHub serves a
// repository's releases (GET BASE/<tag>/<file>), for scripts/action-test.sh. Every request
// is appended to a log file, one line each ("METHOD PATH STATUS"), so that the script can
// assert after the runner exited that a run found the tool in the runner's cache and sent
// no request at all.
//
//	fakerelease -dir DIR -state STATE [-addr 127.0.0.1:0]
//
// DIR holds one folder per tag (DIR/v1.2.3/SHA256SUMS, DIR/v1.2.3/slogate_1.2.3_linux_amd64.tar.gz).
// STATE gets addr (written once the server answers) and requests.log.
// It lives under testdata so that `go build ./...` and `go vet ./...` leave it alone.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("fakerelease: ")
	dir := flag.String("dir", "", "directory of tag folders to serve (required)")
	state := flag.String("state", "", "directory for addr and requests.log (required)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	flag.Parse()
	if *dir == "" || *state == "" {
		log.Fatal("-dir and -state are required")
	}
	if err := os.MkdirAll(*state, 0o755); err != nil {
		log.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(*state, "requests.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	// The address is written last and atomically: its presence means the server answers.
	tmp := filepath.Join(*state, "addr.tmp")
	if err := os.WriteFile(tmp, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(*state, "addr")); err != nil {
		log.Fatal(err)
	}
	log.Printf("serving %s on http://%s", *dir, ln.Addr())
	files := http.FileServer(http.Dir(*dir))
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(rec, "method not allowed", http.StatusMethodNotAllowed)
		} else {
			files.ServeHTTP(rec, r)
		}
		mu.Lock()
		defer mu.Unlock()
		// Written and synced before the next request is answered: the log is complete
		// whenever the runner has finished.
		fmt.Fprintf(lf, "%s %s %d\n", r.Method, r.URL.Path, rec.status)
		_ = lf.Sync()
	})
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(hs.Serve(ln))
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
