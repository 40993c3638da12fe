package exporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestSelectNow resolves each kind of selector once against this
// machine's real /proc and sockets: what it selects, and an error naming
// the selector when it selects nothing.
func TestSelectNow(t *testing.T) {
	slowlabtest.EndToEnd(t, "it watches real processes for seconds")
	ctx := context.Background()
	arg := fmt.Sprintf("3600.%d", os.Getpid())
	cmd := exec.Command("sleep", arg)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	child := cmd.Process.Pid
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port

	for sel, want := range map[string][]int{
		"pid:" + strconv.Itoa(child):        {child},
		"cmdline:sleep " + arg:              {child},
		"tree:" + strconv.Itoa(os.Getpid()): nil, // checked below: holds both
		"port:" + strconv.Itoa(port):        nil, // a port selects no process
	} {
		got, err := SelectNow(ctx, sel, "", "")
		if err != nil {
			t.Errorf("SelectNow(%q): %v", sel, err)
			continue
		}
		if want != nil && !slices.Equal(got, want) {
			t.Errorf("SelectNow(%q) = %v, want %v", sel, got, want)
		}
	}
	tree, _ := SelectNow(ctx, "tree:"+strconv.Itoa(os.Getpid()), "", "")
	if !slices.Contains(tree, os.Getpid()) || !slices.Contains(tree, child) {
		t.Errorf("tree:%d = %v, want this process and %d", os.Getpid(), tree, child)
	}

	ln.Close()
	for _, sel := range []string{"port:" + strconv.Itoa(port), "cmdline:no such process " + arg, "pid:4194303"} {
		if _, err := SelectNow(ctx, sel, "", ""); !errors.Is(err, ErrSelectsNothing) {
			t.Errorf("SelectNow(%q) = %v, want ErrSelectsNothing", sel, err)
		}
	}
	for _, sel := range []string{"cgroup-re:slowlab/(?P<run>.+)", "port:0", "nonsense", "cgroup:no/such/cgroup-" + arg} {
		if _, err := SelectNow(ctx, sel, "", ""); err == nil {
			t.Errorf("SelectNow(%q): no error", sel)
		}
	}
}
