package exporter

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fdWalker lists a process's open files through /proc/PID/fd. The function
// fields are the seam fault tests use to make a directory unreadable or an
// fd vanish between readlink and stat, as happens to a running exporter;
// listDir nil (the default) reads the fd directory through one descriptor:
// getdents on it into a pooled buffer, parsed in place, and readlinkat
// relative to it, so the kernel resolves /proc/PID once per process, not
// once per fd, and an fd that is not a file costs no allocation at all.
type fdWalker struct {
	procFS  string
	listDir func(dir string) ([]string, error)
	stat    func(name string) (os.FileInfo, error)
}

func newFDWalker(procFS string) fdWalker {
	return fdWalker{procFS: procFS, stat: os.Stat}
}

// listDirNames lists dir's entries (the seam's default in tests).
func listDirNames(dir string) ([]string, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	var names []string
	err = readFDNums(fd, dir, func(n int) { names = append(names, strconv.Itoa(n)) })
	return names, err
}

// walkBufs are the buffers of one walk, reused across walks: getdents
// output, the fd numbers, the NUL-terminated name and the link text.
type walkBufs struct {
	dirents []byte
	fds     []int
	name    []byte
	link    []byte
}

var walkPool = sync.Pool{New: func() any {
	return &walkBufs{dirents: make([]byte, 8192), name: make([]byte, 0, 24), link: make([]byte, 256)}
}}

// readFDNums calls fn with each entry of the open fd directory fd whose
// name is a number (every entry of /proc/PID/fd), parsing the getdents
// records in place: struct linux_dirent64 is an 8-byte inode, an 8-byte
// offset, a 2-byte record length, a 1-byte type and the NUL-terminated
// name.
func readFDNums(fd int, dir string, fn func(int)) error {
	b := walkPool.Get().(*walkBufs)
	defer walkPool.Put(b)
	buf := b.dirents
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n <= 0 {
			return nil
		}
		if err := parseDirents(buf[:n], fn); err != nil {
			return &fs.PathError{Op: "getdents", Path: dir, Err: err}
		}
	}
}

// parseDirents calls fn with the number that names each record of a
// getdents64 buffer, skipping names that are not numbers (".", "..").
func parseDirents(buf []byte, fn func(int)) error {
	for off := 0; off < len(buf); {
		if off+19 > len(buf) {
			return fmt.Errorf("short record at %d of %d bytes", off, len(buf))
		}
		reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
		if reclen < 19 || off+reclen > len(buf) {
			return fmt.Errorf("bad record length %d at %d of %d bytes", reclen, off, len(buf))
		}
		if v, ok := atoiNUL(buf[off+19 : off+reclen]); ok && v < 1<<31 {
			fn(v)
		}
		off += reclen
	}
	return nil
}

// atoiNUL parses the decimal number that is b up to its first NUL (all of
// b without one), at most 18 digits.
func atoiNUL(b []byte) (int, bool) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// readlinkAt reads the link text of fd number num in the directory dirfd
// into b.link (grown as needed and kept), without allocating.
func readlinkAt(dirfd int, num int, b *walkBufs) ([]byte, error) {
	b.name = append(strconv.AppendInt(b.name[:0], int64(num), 10), 0)
	for {
		r, _, errno := unix.Syscall6(unix.SYS_READLINKAT, uintptr(dirfd), uintptr(unsafe.Pointer(&b.name[0])),
			uintptr(unsafe.Pointer(&b.link[0])), uintptr(len(b.link)), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return nil, errno
		}
		if n := int(r); n < len(b.link) {
			return b.link[:n], nil
		}
		b.link = make([]byte, 2*len(b.link))
	}
}

// walk returns pid's fd links (see fdLink for what each keeps), in one
// allocation. A process or fd that disappears mid-walk is skipped; a
// permission error (another user's process without CAP_SYS_PTRACE) is
// returned.
//
// prev are the links of the same pid from the scrape before, in the order
// walk returned them: an fd whose link text has not changed reuses its
// strings, so a steady process costs no allocation but the slice.
func (w fdWalker) walk(ctx context.Context, pid int, prev []fdLink) ([]fdLink, error) {
	dir := filepath.Join(w.procFS, strconv.Itoa(pid), "fd")
	listErr := func(err error) error {
		if isGone(err) {
			return nil
		}
		return fmt.Errorf("pid %d: list fds: %w", pid, permissionHint(err))
	}
	b := walkPool.Get().(*walkBufs)
	defer walkPool.Put(b)
	fds := b.fds[:0]
	defer func() { b.fds = fds[:0] }()
	if w.listDir != nil {
		names, err := w.listDir(dir)
		if err != nil {
			return nil, listErr(err)
		}
		for _, name := range names {
			if n, err := strconv.Atoi(name); err == nil && n >= 0 {
				fds = append(fds, n)
			}
		}
	}
	dirfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, listErr(&fs.PathError{Op: "open", Path: dir, Err: err})
	}
	defer unix.Close(dirfd)
	if w.listDir == nil {
		if err := readFDNums(dirfd, dir, func(n int) { fds = append(fds, n) }); err != nil {
			return nil, listErr(err)
		}
	}
	links := make([]fdLink, 0, len(fds))
	for _, num := range fds {
		if err := ctx.Err(); err != nil {
			return links, err
		}
		link, err := readlinkAt(dirfd, num, b)
		if err != nil {
			if isGone(err) {
				continue
			}
			return links, fmt.Errorf("pid %d: readlink fd %d: %w", pid, num, permissionHint(&fs.PathError{Op: "readlink", Path: dir + "/" + strconv.Itoa(num), Err: err}))
		}
		for len(prev) > 0 && int(prev[0].num) < num {
			prev = prev[1:]
		}
		if len(prev) > 0 && int(prev[0].num) == num && prev[0].target != "" && prev[0].target == string(link) {
			links = append(links, prev[0])
			continue
		}
		links = append(links, newFDLink(dir, num, link))
	}
	return links, nil
}

// newFDLink keeps what the collectors need of fd num's link text: the
// strings of a link to a file, the inode of a socket, nothing else.
func newFDLink(dir string, num int, link []byte) fdLink {
	if rest, ok := bytes.CutPrefix(link, []byte("socket:[")); ok {
		if inner, ok := bytes.CutSuffix(rest, []byte("]")); ok {
			if n, ok := atoiNUL(inner); ok && n > 0 && bytes.IndexByte(inner, 0) < 0 {
				return fdLink{socket: uint64(n), num: int32(num)}
			}
		}
		return fdLink{num: int32(num)}
	}
	if len(link) == 0 || link[0] != '/' && link[0] != '.' {
		return fdLink{num: int32(num)} // pipe:[N], anon_inode:..., other pseudo files
	}
	return fdLink{path: dir + "/" + strconv.Itoa(num), target: string(link), num: int32(num)}
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

// fdLink is one /proc/PID/fd entry. A link to a file (an absolute path,
// or a relative one in fixture trees) keeps the fd link's path
// (/proc/PID/fd/N, which reaches an unlinked file) and its text; a socket
// keeps its inode; a pipe or anonymous inode keeps nothing and is only
// counted.
type fdLink struct {
	path, target string
	socket       uint64
	num          int32 // the fd number
}

// fdCache shares one walk of each process's fds between the collectors of a
// scrape: readlink on every fd is most of a scrape's cost with many
// processes, and both the temp-file and the socket collector need them.
//
// prev is the scrape before's walks (read only): an fd whose link has not
// changed since keeps its strings (see walk).
type fdCache struct {
	w    fdWalker
	mu   sync.Mutex
	m    map[int]*fdEntry
	prev map[int]*fdEntry
}

type fdEntry struct {
	once  sync.Once
	links []fdLink
	err   error
}

func newFDCache(w fdWalker) *fdCache { return &fdCache{w: w, m: map[int]*fdEntry{}} }

// next returns the cache of the next scrape, which reuses this one's
// unchanged links.
func (c *fdCache) next() *fdCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &fdCache{w: c.w, m: make(map[int]*fdEntry, len(c.m)), prev: c.m}
}

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
		var prev []fdLink
		if p := c.prev[pid]; p != nil && p.err == nil {
			prev = p.links
		}
		e.links, e.err = c.w.walk(ctx, pid, prev)
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
