package idleconn

import (
	"fmt"
	"syscall"
)

// raiseNoFile raises this process's RLIMIT_NOFILE to at least need
// descriptors (the hard limit too, when it is lower and the process may),
// so its holders and the children it starts afterwards (which inherit it:
// the app and proxy accept the connections) can have every connection
// open. restore puts the limit back as it was.
func raiseNoFile(need uint64) (restore func() error, err error) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		return nil, fmt.Errorf("read RLIMIT_NOFILE: %w", err)
	}
	restore = func() error {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			return fmt.Errorf("restore RLIMIT_NOFILE to %d/%d: %w", old.Cur, old.Max, err)
		}
		return nil
	}
	if old.Cur >= need {
		return restore, nil
	}
	want := syscall.Rlimit{Cur: need, Max: max(old.Max, need)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		return nil, fmt.Errorf("raise RLIMIT_NOFILE from %d/%d to %d: %w (run as root, or raise the hard limit)", old.Cur, old.Max, need, err)
	}
	return restore, nil
}
