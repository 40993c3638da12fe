package exporter

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// fdWalker lists a process's open files through /proc/PID/fd. The function
// fields are the seam fault tests use to make an fd vanish between readlink
// and stat, or a directory unreadable, as happens to a running exporter;
// listDir and readlink nil (the default) read through a descriptor of the
// fd directory instead: getdents on it, and readlinkat relative to it, so
// the kernel resolves /proc/PID once per process, not once per fd (a
// quarter of a readlink's cost).
type fdWalker struct {
	procFS   string
	listDir  func(dir string) ([]string, error)
	readlink func(name string) (string, error)
	stat     func(name string) (os.FileInfo, error)
}

func newFDWalker(procFS string) fdWalker {
	return fdWalker{procFS: procFS, stat: os.Stat}
}

// listDirNames lists dir's entries (what listDir does when nil).
func listDirNames(dir string) ([]string, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return readDirNames(fd, dir)
}

// direntBufs are getdents buffers, reused across walks.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// readDirNames lists the entries of the open directory fd.
func readDirNames(fd int, dir string) ([]string, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return names, &fs.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// readlinkAt reads the link name in the directory dirfd, into *buf
// (grown as needed and kept for the next call).
func readlinkAt(dirfd int, dir, name string, buf *[]byte) (string, error) {
	for {
		n, err := unix.Readlinkat(dirfd, name, *buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: dir + "/" + name, Err: err}
		}
		if n < len(*buf) {
			return string((*buf)[:n]), nil
		}
		*buf = make([]byte, 2*len(*buf))
	}
}

// walk calls fn with the path of each of pid's fd links and the link's text.
// A process or fd that disappears mid-walk is skipped; a permission error
// (another user's process without CAP_SYS_PTRACE) is returned.
func (w fdWalker) walk(ctx context.Context, pid int, fn func(fdPath, target string)) error {
	dir := filepath.Join(w.procFS, strconv.Itoa(pid), "fd")
	listErr := func(err error) error {
		if isGone(err) {
			return nil
		}
		return fmt.Errorf("pid %d: list fds: %w", pid, permissionHint(err))
	}
	var names []string
	if w.listDir != nil {
		var err error
		if names, err = w.listDir(dir); err != nil {
			return listErr(err)
		}
	}
	dirfd := -1
	if w.listDir == nil || w.readlink == nil {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return listErr(&fs.PathError{Op: "open", Path: dir, Err: err})
		}
		defer unix.Close(fd)
		dirfd = fd
	}
	if w.listDir == nil {
		var err error
		if names, err = readDirNames(dirfd, dir); err != nil {
			return listErr(err)
		}
	}
	linkBuf := make([]byte, 256)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := dir + "/" + name
		var target string
		var err error
		if w.readlink != nil {
			target, err = w.readlink(p)
		} else {
			target, err = readlinkAt(dirfd, dir, name, &linkBuf)
		}
		if err != nil {
			if isGone(err) {
				continue
			}
			return fmt.Errorf("pid %d: readlink fd %s: %w", pid, name, permissionHint(err))
		}
		fn(p, target)
	}
	return nil
}

// fdTarget is a parsed /proc/PID/fd link text.
type fdTarget struct {
	path    string // absolute file path; "" for sockets, pipes, anon inodes
	deleted bool   // the file was unlinked while open
	socket  uint64 // socket inode for "socket:[N]"; 0 otherwise
}

const deletedSuffix = " (deleted)"

// parseFDTarget parses the text of an fd link: "/path", "/path (deleted)",
// "socket:[123]", "pipe:[456]", "anon_inode:[eventpoll]". A relative link
// (only found in fixture trees) is resolved against the fd directory, as
// the kernel would follow it.
func parseFDTarget(fdPath, link string) fdTarget {
	if rest, ok := strings.CutPrefix(link, "socket:["); ok {
		if n, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64); err == nil && strings.HasSuffix(rest, "]") && n > 0 {
			return fdTarget{socket: n}
		}
		return fdTarget{}
	}
	var t fdTarget
	t.path, t.deleted = strings.CutSuffix(link, deletedSuffix)
	switch {
	case t.path == "":
	case filepath.IsAbs(t.path):
		t.path = filepath.Clean(t.path)
	case strings.HasPrefix(t.path, "."):
		p, err := filepath.Abs(filepath.Join(filepath.Dir(fdPath), t.path))
		if err != nil {
			p = ""
		}
		t.path = p
	default:
		// pipe:[N], anon_inode:..., and other pseudo files.
		t.path = ""
	}
	if t.path == "" {
		t.deleted = false
	}
	return t
}

// under reports whether path is inside one of dirs.
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(path, d) && (len(path) > len(d) && path[len(d)] == '/') {
			return true
		}
	}
	return false
}

// fdLink is one /proc/PID/fd entry: the link's path and its text.
type fdLink struct{ path, target string }

// fdCache shares one walk of each process's fds between the collectors of a
// scrape: readlink on every fd is most of a scrape's cost with many
// processes, and both the temp-file and the socket collector need them.
type fdCache struct {
	w  fdWalker
	mu sync.Mutex
	m  map[int]*fdEntry
}

type fdEntry struct {
	once  sync.Once
	links []fdLink
	err   error
}

func newFDCache(w fdWalker) *fdCache { return &fdCache{w: w, m: map[int]*fdEntry{}} }

// links returns pid's fd links, walking /proc/PID/fd on first use.
func (c *fdCache) links(ctx context.Context, pid int) ([]fdLink, error) {
	c.mu.Lock()
	e := c.m[pid]
	if e == nil {
		e = &fdEntry{}
		c.m[pid] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		e.err = c.w.walk(ctx, pid, func(p, target string) {
			e.links = append(e.links, fdLink{p, target})
		})
	})
	return e.links, e.err
}

// fdLinks returns pid's fd links from the scrape's shared cache, or walks
// them with w when the target has none (collectors used on their own).
func fdLinks(ctx context.Context, t Target, w fdWalker, pid int) ([]fdLink, error) {
	if t.fds != nil {
		return t.fds.links(ctx, pid)
	}
	return newFDCache(w).links(ctx, pid)
}
