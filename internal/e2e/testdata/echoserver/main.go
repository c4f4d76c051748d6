// echoserver is the service the end-to-end tests reach inside their
// containers, built static so that it runs in any image:
//
//	:7000  echo: every byte back, until the client half-closes
//	:7001  sink: read to EOF, then answer the byte count
//	:7002  source: write -source-bytes (or what the first line asks), close
//	:7003  7001 after a greeting line ("ready"), for timing the bulk alone
//	:7004  7002 after a greeting line ("ready")
//	:8080  a minimal HTTP server answering "hello from the container"
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

func main() {
	addr := "0.0.0.0"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	go serve(addr+":7000", func(c net.Conn) {
		_, _ = io.Copy(c, c)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	})
	sink := func(c net.Conn) {
		n, _ := io.Copy(io.Discard, c)
		fmt.Fprintf(c, "%d\n", n)
	}
	source := func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		n, _ := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		buf := make([]byte, 64<<10)
		for n > 0 {
			k := min(n, int64(len(buf)))
			if _, err := c.Write(buf[:k]); err != nil {
				return
			}
			n -= k
		}
	}
	greet := func(h func(net.Conn)) func(net.Conn) {
		return func(c net.Conn) {
			if _, err := io.WriteString(c, "ready\n"); err == nil {
				h(c)
			}
		}
	}
	go serve(addr+":7001", sink)
	go serve(addr+":7002", source)
	go serve(addr+":7003", greet(sink))
	go serve(addr+":7004", greet(source))
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from the container")
	})
	if err := http.ListenAndServe(addr+":8080", nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func serve(addr string, h func(net.Conn)) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer c.Close()
			h(c)
		}()
	}
}
