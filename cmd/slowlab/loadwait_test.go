package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A --start-at an hour ahead is waited for, and the wait is said on stderr
// when it begins (a mistyped date would otherwise look like a hang); an
// interrupt ends the wait with nothing sent.
func TestLoadgenSaysItWaitsForStartAt(t *testing.T) {
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lineWriter{first: make(chan string, 1)}
	var stdout strings.Builder
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"loadgen", "--target", "http://127.0.0.1:1/fast", "--duration", "1s", "--start-at", at}, &stdout, stderr)
	}()
	select {
	case line := <-stderr.first:
		if want := "waiting for the start at " + at + ", in "; !strings.HasPrefix(line, want) {
			t.Errorf("first line on stderr %q, want it to start %q", line, want)
		}
	case code := <-exit:
		t.Fatalf("loadgen exited %d before saying it waits; stderr %q", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no line on stderr 30 s into a wait for %s", at)
	}
	cancel()
	<-exit
	if !strings.Contains(stdout.String(), "not sent 8") {
		t.Errorf("interrupted before its start, the summary should count every request not sent:\n%s", stdout.String())
	}
}
