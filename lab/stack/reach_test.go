package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/loopback"
)

// silent listens on loopback and accepts connections it never answers,
// until the test ends.
func silent(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln.Addr().String()
}

// TestReach: an external stack on a refusing port, one that accepts and
// never answers, and one that answers, each checked over real loopback
// sockets: the first two fail naming the URL and what happened, within
// the check's timeout; the live one passes without its large body being
// read.
func TestReach(t *testing.T) {
	refused, release, err := loopback.Refused()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	quiet := silent(t)

	largeDone := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/fast", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) {
		// The header, then a body that never ends: the check must not
		// wait for it, and must close the connection.
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(largeDone)
	})
	mux.HandleFunc("/longpoll", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	live := httptest.NewServer(mux)
	defer live.Close()

	ctx := context.Background()
	for _, tc := range []struct {
		name string
		urls map[Target]string
		want string // "" to pass
	}{
		{"refused", map[Target]string{TargetFast: "http://" + refused + "/fast"},
			"external stack: fast_url http://" + refused + "/fast: connection refused: is the stack running?"},
		{"accepts and never answers", map[Target]string{TargetFast: "http://" + quiet + "/fast"},
			"external stack: fast_url http://" + quiet + "/fast: connected, but no response header within 300ms: is the stack running?"},
		{"large refused", map[Target]string{TargetFast: live.URL + "/fast", TargetLarge: "http://" + refused + "/large"},
			"external stack: large_url http://" + refused + "/large: connection refused"},
		{"fast not 2xx", map[Target]string{TargetFast: live.URL + "/missing"},
			"external stack: fast_url " + live.URL + "/missing: status 404, want 2xx"},
		{"long-poll refused", map[Target]string{TargetFast: live.URL + "/fast", TargetLongPoll: "http://" + refused + "/longpoll"},
			"external stack: longpoll_url http://" + refused + "/longpoll: connection refused"},
		// A long-poll URL that holds its GET is connected to only.
		{"live", map[Target]string{TargetFast: live.URL + "/fast", TargetLarge: live.URL + "/large", TargetLongPoll: live.URL + "/longpoll"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := External{URLs: tc.urls, reachTimeout: 300 * time.Millisecond}
			err := e.Reach(ctx, nil)
			t.Log(err)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// The large body was left unread: the server saw its request end.
	<-largeDone

	// Only the kinds the experiment sends are checked.
	e := External{URLs: map[Target]string{TargetFast: live.URL + "/fast", TargetLarge: "http://" + refused + "/large"}}
	if err := e.Reach(ctx, []Target{TargetFast}); err != nil {
		t.Errorf("fast only: %v", err)
	}
	// Over HTTP/2 a connect is all: an HTTP/1.1 server on a refusing
	// port is still refused.
	e = External{URLs: map[Target]string{TargetFast: "http://" + refused + "/fast"}, HTTP2: true}
	if err := e.Reach(ctx, nil); !errors.Is(err, ErrNoAnswer) {
		t.Errorf("http2 refused: %v, want ErrNoAnswer", err)
	}
}

// TestAnswerLoopbackOnly: without allowRemote, Answer connects to
// loopback addresses only, whatever the URL names.
func TestAnswerLoopbackOnly(t *testing.T) {
	err := Answer(context.Background(), "http://192.0.2.1:9/fast", false, Reach2xx, time.Second)
	if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("err = %v, want a loopback refusal", err)
	}
}

// TestFailedWhenExternalStops: a run on an external stack is failed when
// its fast URL refuses connections at the run's end (nothing listens: the
// stack stopped), not when it only keeps the connect waiting (an accept
// queue a slow-client run fills: a finding) nor while it answers.
func TestFailedWhenExternalStops(t *testing.T) {
	refused, release, err := loopback.Refused()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer live.Close()
	self := fmt.Sprintf("pid:%d", os.Getpid())
	for _, tc := range []struct{ name, fast, want string }{
		{"answers", live.URL + "/fast", ""},
		{"accepts, never answers", "http://" + silent(t) + "/fast", ""},
		{"refuses", "http://" + refused + "/fast", "external stack: fast_url http://" + refused + "/fast stopped answering during the run: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := External{URLs: map[Target]string{TargetFast: tc.fast}, Route: RouteDirect, Server: Server{Model: "sync", Workers: 2},
				Groups: map[string][]string{"app": {self}}, reachTimeout: 300 * time.Millisecond}
			running, err := e.start(context.Background(), Deployment{Server: e.Server})
			if err != nil {
				t.Fatal(err)
			}
			err = running.Failed()
			t.Log(err)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Failed() = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestAnswerInterrupted: a check cut short by its caller says so, not
// that the stack did not answer.
func TestAnswerInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Answer(ctx, "http://"+silent(t)+"/fast", false, Reach2xx, time.Minute)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNoAnswer) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
