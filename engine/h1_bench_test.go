package engine

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
)

// BenchmarkStreamRequest is one request (op) of 16 content chunks on a kept-alive connection to
// a server that answers from prebuilt bytes: the client's own cost per request, its
// allocations included. Run it with
//
//	go test -run '^$' -bench StreamRequest -benchmem ./engine/
func BenchmarkStreamRequest(b *testing.B) {
	var resp strings.Builder
	resp.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	for i := range 17 {
		l := tok + "\n\n"
		if i == 16 {
			l = finish + "\n\ndata: [DONE]\n\n"
		}
		fmt.Fprintf(&resp, "%x\r\n%s\r\n", len(l), l)
	}
	resp.WriteString("0\r\n\r\n")
	answer := []byte(resp.String())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					// The request: headers, then a Content-Length body.
					n := 0
					for {
						line, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
						if v, ok := strings.CutPrefix(strings.ToLower(line), "content-length: "); ok {
							fmt.Sscan(v, &n)
						}
					}
					if _, err := br.Discard(n); err != nil {
						return
					}
					if _, err := c.Write(answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	c := NewClient(ClientOptions{BaseURL: "http://" + ln.Addr().String()})
	defer c.CloseIdleConnections()
	req := &Request{API: APICompletions, Model: "m", Prompt: "Once upon a time", MaxTokens: 16}
	var res Result
	ctx := context.Background()
	for b.Loop() {
		c.Stream(ctx, req, &res)
		if !res.OK() || res.Chunks != 16 {
			b.Fatalf("%s (%s), %d chunks", res.ErrReason, res.ErrDetail, res.Chunks)
		}
	}
}
