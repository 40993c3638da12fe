package netem

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ErrPermission is wrapped by the errors of operations that need
// CAP_SYS_ADMIN or CAP_NET_ADMIN and did not have them.
var ErrPermission = errors.New("creating network namespaces and links needs CAP_SYS_ADMIN and CAP_NET_ADMIN (run as root)")

// ErrClosed is returned by Do on a closed Namespace.
var ErrClosed = errors.New("namespace closed")

// Namespace is an anonymous network namespace with one OS thread of this
// process inside it. Everything created on that thread (sockets, TUN
// devices, netlink sockets) belongs to the namespace.
type Namespace struct {
	Name string // label for messages; nothing is bind-mounted

	h     netns.NsHandle
	nl    *netlink.Handle // netlink in the namespace; usable from any thread
	path  string          // /proc/PID/task/TID/ns/net of the thread
	inode uint64

	work     chan func()
	quit     chan struct{}
	done     chan struct{}
	closeErr error
	once     sync.Once
}

// NewNamespace creates a namespace with its loopback up.
func NewNamespace(name string) (*Namespace, error) {
	n := &Namespace{Name: name, h: -1, work: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error, 1)
	go n.run(ready)
	if err := <-ready; err != nil {
		<-n.done
		return nil, err
	}
	err := n.Do(func() error {
		lo, err := n.nl.LinkByName("lo")
		if err == nil {
			err = n.nl.LinkSetUp(lo)
		}
		return err
	})
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("namespace %s: set lo up: %w", name, permission(err))
	}
	return n, nil
}

// run owns the namespace's thread: it enters a new namespace, serves Do
// until Close, and goes back to the original namespace before it unlocks
// the thread. If going back fails the goroutine ends locked, and the
// runtime destroys the thread (it never returns to the pool in the wrong
// namespace).
func (n *Namespace) run(ready chan<- error) {
	defer close(n.done)
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		ready <- fmt.Errorf("namespace %s: current namespace: %w", n.Name, err)
		return
	}
	defer orig.Close()
	if n.h, err = netns.New(); err != nil {
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		ready <- fmt.Errorf("namespace %s: unshare: %w", n.Name, permission(err))
		return
	}
	defer func() {
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	n.path = fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
	var st unix.Stat_t
	if err := unix.Fstat(int(n.h), &st); err == nil {
		n.inode = st.Ino
	}
	if n.nl, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
		n.h.Close()
		ready <- fmt.Errorf("namespace %s: netlink: %w", n.Name, err)
		return
	}
	ready <- nil
	for {
		select {
		case f := <-n.work:
			f()
		case <-n.quit:
			return
		}
	}
}

// Check creates and removes a namespace, to fail early, with an error
// wrapping ErrPermission, where New would.
func Check() error {
	n, err := NewNamespace("slowlab-check")
	if err != nil {
		return err
	}
	return n.Close()
}

// Do runs f on the namespace's thread and returns its error. Sockets f
// creates belong to the namespace. Calls are serialized: f should not
// block for long.
func (n *Namespace) Do(f func() error) error {
	errc := make(chan error, 1)
	select {
	case n.work <- func() { errc <- f() }:
		return <-errc
	case <-n.quit:
		return ErrClosed
	}
}

// Path is /proc/PID/task/TID/ns/net of the namespace's thread, for
// `nsenter --net=PATH` while the namespace lives.
func (n *Namespace) Path() string { return n.path }

// Inode identifies the namespace (the inode of its nsfs file).
func (n *Namespace) Inode() uint64 { return n.inode }

// Close releases the namespace's netlink sockets, thread and handle. The
// namespace itself vanishes once no socket or device created in it is open.
func (n *Namespace) Close() error {
	n.once.Do(func() {
		close(n.quit)
		<-n.done
		if n.nl != nil {
			n.nl.Close()
		}
		if n.h.IsOpen() {
			n.closeErr = n.h.Close()
		}
	})
	return n.closeErr
}

// sysctl writes /proc/sys/KEY (dots as slashes) in the namespace: net
// sysctls resolve to the namespace of the thread that opens them.
func (n *Namespace) sysctl(key, value string) error {
	return n.Do(func() error {
		p := filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
		if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
			return fmt.Errorf("namespace %s: sysctl %s=%s: %w", n.Name, key, value, err)
		}
		return nil
	})
}

// readSysctl reads /proc/sys/KEY in the namespace.
func (n *Namespace) readSysctl(key string) (string, error) {
	var v string
	err := n.Do(func() error {
		b, err := os.ReadFile(filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/")))
		v = strings.TrimSpace(string(b))
		return err
	})
	return v, err
}

// permission wraps EPERM and EACCES as ErrPermission.
func permission(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w: %w", ErrPermission, err)
	}
	return err
}
