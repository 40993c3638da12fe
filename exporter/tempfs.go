package exporter

import (
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
)

// The filesystem under the proxy's temp dirs, as the proxy sees it: a temp
// dir on a tmpfs in a mount namespace of the proxy's own (the lab's
// temp-disk-full) is reached through /proc/PID/root. A full one makes
// NGINX's temp writes fail ("pwrite() ... failed (28: No space left on
// device)") and cut the responses it was buffering.
var (
	tempFSSize = newGroupDesc("slowlab_proxy_temp_fs_size_bytes",
		"Size of the filesystem holding the group's temp dir with the least space available, as its processes see it (statfs through /proc/PID/root; as the exporter sees it while none is alive).")
	tempFSAvail = newGroupDesc("slowlab_proxy_temp_fs_avail_bytes",
		"Space available to unprivileged writers on that filesystem (statfs f_bavail*f_bsize).")
)

// statfsFunc is syscall.Statfs; tests replace it.
var statfsFunc = syscall.Statfs

// tempFS returns the size and available bytes of the filesystem, among
// those holding dirs as the first live process of pids sees them, that has
// the least space available; without a live process (a proxy not started
// yet, or between restarts), as the exporter itself sees them. ok is false
// when no dir could be read (none exists, or no temp dirs): the metrics
// are then left out.
func tempFS(procFS string, pids []int, dirs []string) (size, avail uint64, ok bool, err error) {
	roots := make([]string, 0, len(pids)+1)
	for _, pid := range pids {
		roots = append(roots, filepath.Join(procFS, strconv.Itoa(pid), "root"))
	}
	roots = append(roots, "/")
	for i, root := range roots {
		host := i == len(roots)-1
		for _, dir := range dirs {
			var st syscall.Statfs_t
			if e := statfsFunc(filepath.Join(root, dir), &st); e != nil {
				if !isGone(e) && err == nil && !host {
					err = fmt.Errorf("pid %d: statfs %s: %w", pids[i], dir, permissionHint(e))
				}
				continue
			}
			a := st.Bavail * uint64(st.Bsize)
			if !ok || a < avail {
				size, avail, ok = st.Blocks*uint64(st.Bsize), a, true
			}
		}
		if ok {
			if host {
				err = nil // the processes' errors were about processes no longer there to read
			}
			return size, avail, true, err
		}
	}
	return 0, 0, false, err
}
