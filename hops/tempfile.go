package hops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// TempFiles measures a proxy's response temp files from outside the
// proxy, as the exporter's tempfiles collector does: the regular files
// under Dirs that the processes PIDs hold open, found through
// /proc/PID/fd (NGINX and the embedded proxy unlink them at once, so only
// the fds still show them, as "PATH (deleted)") and stat'ed through the
// fd. Request-body temp files are left out (the same rule as the
// exporter's: a client_body_temp, body or client_temp directory, or a
// client-body-temp-* name).
type TempFiles struct {
	PIDs []int
	Dirs []string
	// ProcFS is where procfs is mounted; "" is /proc.
	ProcFS string
}

// Size returns the summed size (st_size) of the temp files, each file
// (device and inode) once. A process or fd that goes away meanwhile is
// skipped; any other error (a process that cannot be read) is returned.
func (t TempFiles) Size() (int64, error) {
	proc := t.ProcFS
	if proc == "" {
		proc = "/proc"
	}
	type devIno struct{ dev, ino uint64 }
	seen := map[devIno]bool{}
	var total int64
	for _, pid := range t.PIDs {
		dir := filepath.Join(proc, strconv.Itoa(pid), "fd")
		ents, err := os.ReadDir(dir)
		if err != nil {
			return 0, fmt.Errorf("proxy temp files: pid %d: %w", pid, err)
		}
		for _, e := range ents {
			fdPath := filepath.Join(dir, e.Name())
			target, err := os.Readlink(fdPath)
			if err != nil {
				if gone(err) {
					continue
				}
				return 0, fmt.Errorf("proxy temp files: %w", err)
			}
			target = strings.TrimSuffix(target, " (deleted)")
			if !filepath.IsAbs(target) || !t.under(target) || requestBodyTemp(target) {
				continue
			}
			// Stat the fd link, not the path: it reaches unlinked files.
			fi, err := os.Stat(fdPath)
			if err != nil {
				if gone(err) {
					continue
				}
				return 0, fmt.Errorf("proxy temp files: %w", err)
			}
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok || !fi.Mode().IsRegular() {
				continue
			}
			k := devIno{uint64(st.Dev), st.Ino}
			if !seen[k] {
				seen[k] = true
				total += st.Size
			}
		}
	}
	return total, nil
}

func (t TempFiles) under(path string) bool {
	return slices.ContainsFunc(t.Dirs, func(d string) bool {
		rel, err := filepath.Rel(filepath.Clean(d), path)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && rel != "."
	})
}

// requestBodyTemp reports whether the temp file at path holds a request
// body (the exporter's isRequestBodyTemp rule).
func requestBodyTemp(path string) bool {
	if strings.HasPrefix(filepath.Base(path), "client-body-temp-") {
		return true
	}
	return slices.Contains([]string{"client_body_temp", "body", "client_temp"}, filepath.Base(filepath.Dir(path)))
}

// gone reports an fd or process that went away between listing and
// reading it.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}
