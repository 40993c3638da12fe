package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// The lean client gives the results net/http gives: status, body bytes,
// Server-Timing as a header and as a trailer, the error reason, a new or
// reused connection, for each kind of response and failure.
func TestLeanMatchesNetHTTP(t *testing.T) {
	refused := "http://" + slowlabtest.RefusedAddr(t) + "/"
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server-Timing", "app;dur=12.5")
		fmt.Fprint(w, "hello")
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "Server-Timing")
		fmt.Fprint(w, strings.Repeat("x", 10000))
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "tail")
		w.Header().Set("Server-Timing", "app;dur=3")
	})
	mux.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		fmt.Fprint(w, "only ten..")
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/to-eof", func(w http.ResponseWriter, r *http.Request) {
		// No length: the body ends when the connection closes. Each
		// response also closes without saying so, which a reused
		// keep-alive connection then finds out.
		c, brw, _ := w.(http.Hijacker).Hijack()
		brw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nabc")
		brw.Flush()
		c.Close()
	})
	mux.HandleFunc("/close-quietly", func(w http.ResponseWriter, r *http.Request) {
		// A complete response, then the connection closed without a
		// Connection: close: the next request on it must be sent again.
		c, brw, _ := w.(http.Hijacker).Hijack()
		brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		brw.Flush()
		c.Close()
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, keepAlive := range []bool{false, true} {
		clients := map[string]*Client{}
		for name, lean := range map[string]bool{"net/http": false, "lean": true} {
			c := NewClient(ClientOptions{KeepAlive: keepAlive, Lean: lean, Timeout: 300 * time.Millisecond, Header: http.Header{"X-Test": {"1"}}})
			defer c.Close()
			clients[name] = c
		}
		if clients["lean"].lean.target(srv.URL+"/ok") == nil {
			t.Fatal("lean does not handle", srv.URL)
		}
		for _, url := range []string{srv.URL + "/ok", srv.URL + "/ok", srv.URL + "/chunked", srv.URL + "/short", srv.URL + "/missing",
			srv.URL + "/slow", srv.URL + "/to-eof", srv.URL + "/ok", srv.URL + "/close-quietly", srv.URL + "/ok", refused} {
			var got [2]Result
			for i, name := range []string{"net/http", "lean"} {
				clients[name].Get(context.Background(), url, &got[i])
			}
			want, r := got[0], got[1]
			if r.Status != want.Status || r.Bytes != want.Bytes || r.ServerTiming != want.ServerTiming || r.ServerTimingTrailer != want.ServerTimingTrailer ||
				ErrorReason(r.Err) != ErrorReason(want.Err) || r.NewConn != want.NewConn {
				t.Errorf("keep-alive %v, %s:\nlean     status %d bytes %d st %v trailer %v err %v new %v\nnet/http status %d bytes %d st %v trailer %v err %v new %v",
					keepAlive, url, r.Status, r.Bytes, r.ServerTiming, r.ServerTimingTrailer, r.Err, r.NewConn,
					want.Status, want.Bytes, want.ServerTiming, want.ServerTimingTrailer, want.Err, want.NewConn)
			}
			if want.Err != nil && r.Err.Error() != want.Err.Error() && ErrorReason(r.Err) != "timeout" {
				t.Errorf("%s: lean error %q, net/http %q", url, r.Err, want.Err)
			}
			if r.Err == nil && (r.TTFB <= 0 || r.Latency < r.TTFB || r.NewConn && r.Connect <= 0) {
				t.Errorf("%s: lean timings ttfb %v latency %v connect %v", url, r.TTFB, r.Latency, r.Connect)
			}
		}
	}
}

// The lean client sends what net/http sends: the request line, Host, the
// User-Agent, the caller's headers and, without keep-alive, Connection:
// close.
func TestLeanRequest(t *testing.T) {
	lines := make(chan []string, 2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			var got []string
			for {
				line, err := br.ReadString('\n')
				if err != nil || line == "\r\n" {
					break
				}
				got = append(got, strings.TrimSpace(line))
			}
			c.Write([]byte("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"))
			c.Close()
			lines <- got
		}
	}()
	url := "http://" + ln.Addr().String() + "/fast?x=1"
	c := NewClient(ClientOptions{Lean: true, Header: http.Header{"X-Run": {"a"}}})
	defer c.Close()
	var r Result
	c.Get(context.Background(), url, &r)
	if r.Err != nil || r.Status != 204 {
		t.Fatalf("status %d, err %v", r.Status, r.Err)
	}
	want := []string{"GET /fast?x=1 HTTP/1.1", "Host: " + ln.Addr().String(), "User-Agent: Go-http-client/1.1", "X-Run: a", "Connection: close"}
	if got := <-lines; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("request\n%q\nwant\n%q", got, want)
	}
}
