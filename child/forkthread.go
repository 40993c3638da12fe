package child

import (
	"os/exec"
	"runtime"
	"sync"
)

// StartCmd starts cmd from one OS thread that lives as long as this
// process. Linux sends a child its parent death signal (Pdeathsig, which
// every child the lab starts has) when the thread that forked it ends,
// not the process; and Go ends a thread whenever a goroutine exits while
// locked to it, as goroutines that enter a network namespace must. Forked
// from an ordinary thread, a child could be killed mid-run by such a
// goroutine's exit, unrelated to it: Gunicorn was, with "signal: killed".
func StartCmd(cmd *exec.Cmd) error {
	forkOnce.Do(func() {
		go func() {
			// Never unlocked: the thread stays this goroutine's, and the
			// goroutine never exits.
			runtime.LockOSThread()
			for f := range forkq {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	forkq <- func() { errc <- cmd.Start() }
	return <-errc
}

var (
	forkOnce sync.Once
	forkq    = make(chan func())
)
