package idleconn

import (
	"syscall"
	"testing"
)

func noFile(t *testing.T) syscall.Rlimit {
	t.Helper()
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		t.Fatal(err)
	}
	return r
}
