package child

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExitsBeforeReady(t *testing.T) {
	Timing(t)
	_, err := Start(context.Background(), "broken", filepath.Join(t.TempDir(), "log"), []string{"/bin/sh", "-c", "echo no config here >&2; exit 3"}, nil)
	if err == nil || !strings.Contains(err.Error(), "broken exited before it was ready") || !strings.Contains(err.Error(), "no config here") {
		t.Fatalf("err = %v; want the exit and the log tail", err)
	}
}

// A child that prints its ready line and exits at once was ready.
func TestReadyThenExit(t *testing.T) {
	Timing(t)
	p, err := Start(context.Background(), "brief", filepath.Join(t.TempDir(), "log"), []string{"/bin/sh", "-c", "echo ready listen=x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Ready()[KeyListen] != "x" {
		t.Errorf("ready %v", p.Ready())
	}
	<-p.Done()
	p.Stop(time.Second)
}

// Stop must end the child's whole process group, grandchildren included.
func TestStopEndsProcessGroup(t *testing.T) {
	Timing(t)
	p, err := Start(context.Background(), "parent", filepath.Join(t.TempDir(), "log"),
		[]string{"/bin/sh", "-c", "trap '' TERM; sleep 60 & echo ready pid=$!; wait"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := strconv.Atoi(p.Ready()[KeyPID])
	if err != nil {
		t.Fatalf("ready line %v", p.Ready())
	}
	if syscall.Kill(gc, 0) != nil {
		t.Fatal("grandchild not running")
	}
	if err := p.Stop(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// The grandchild was SIGKILLed; on a loaded machine it may take a
	// moment to be gone and reaped.
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(gc, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still alive 30 s after Stop", gc)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if done, _ := p.Exited(); !done {
		t.Error("child not reaped")
	}
}

// Everything a child prints, to the very end, reaches its log, even when it
// exits at once after a burst of output: the log is closed only after the
// stdout reader has drained the pipe.
func TestOutputReachesLogToTheEnd(t *testing.T) {
	Timing(t)
	const lines = 200000
	logPath := filepath.Join(t.TempDir(), "log")
	p, err := Start(context.Background(), "chatty", logPath,
		[]string{"/bin/sh", "-c", "echo ready ok=1; seq 1 " + strconv.Itoa(lines) + "; echo last"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if err := p.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(got) != lines+1 || got[len(got)-1] != "last" {
		t.Fatalf("log has %d lines ending %q, want %d ending \"last\"", len(got), got[len(got)-1], lines+1)
	}
}

// Only the first ready line is the child's: a later one (a server run
// behind a wrapper that printed its own) is log like any other line.
func TestSecondReadyLineIsLogged(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "log")
	p, err := Start(context.Background(), "wrapped", logPath,
		[]string{"/bin/sh", "-c", "echo ready pid=1; echo ready listen=127.0.0.1:9; echo after"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if err := p.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Ready()["pid"] != "1" {
		t.Errorf("Ready() = %v, want the first line's", p.Ready())
	}
	b, err := os.ReadFile(logPath)
	if err != nil || string(b) != "ready listen=127.0.0.1:9\nafter\n" {
		t.Errorf("log %q, %v; want the second ready line and the next", b, err)
	}
}

func TestReadyLine(t *testing.T) {
	line := ReadyLine(Field{KeyListen, "127.0.0.1:1"}, Field{KeyAdmin, "127.0.0.1:2"})
	if line != "ready listen=127.0.0.1:1 admin=127.0.0.1:2" {
		t.Errorf("ReadyLine = %q", line)
	}
	r, ok := ParseReady(line)
	if !ok || !reflect.DeepEqual(r, Ready{KeyListen: "127.0.0.1:1", KeyAdmin: "127.0.0.1:2"}) {
		t.Errorf("ParseReady = %v, %t", r, ok)
	}
	for _, bad := range []string{"", "ready", "readiness listen=x", "listen=x"} {
		if _, ok := ParseReady(bad); ok {
			t.Errorf("ParseReady(%q) accepted", bad)
		}
	}
	if got := TargetModel.Arg("sync"); !reflect.DeepEqual(got, []string{"--model", "sync"}) {
		t.Errorf("Arg = %v", got)
	}
}

func FuzzParseReady(f *testing.F) {
	f.Add("ready listen=127.0.0.1:1 admin=127.0.0.1:2 model=sync-2 slots=2")
	f.Add("ready pid=42")
	f.Fuzz(func(t *testing.T, s string) {
		r, ok := ParseReady(s)
		if ok != strings.HasPrefix(s, "ready ") || ok && r == nil {
			t.Fatalf("ParseReady(%q) = %v, %t", s, r, ok)
		}
	})
}

// Timing marks a test timing-sensitive, as slowlabtest.Timing does
// elsewhere (slowlabtest imports this package, so its tests cannot import
// it): make stress runs it ten times over.
func Timing(t testing.TB) { t.Helper() }
