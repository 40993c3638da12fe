package exporter

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	registerCollector("tempfiles", "reverse-proxy temp files open by each group's processes, unlinked ones included", true,
		func(env collectorEnv) (Collector, error) {
			return &tempFilesCollector{fds: env.fdWalker()}, nil
		}, nil)
}

var (
	tempFiles = newGroupDesc("slowlab_proxy_temp_files",
		"Regular files under the group's temp dirs held open by its processes, unlinked ones included, counted once per device and inode.")
	tempLogical = newGroupDesc("slowlab_proxy_temp_logical_bytes",
		"Summed size (st_size) of the group's open temp files.")
	tempAllocated = newGroupDesc("slowlab_proxy_temp_allocated_bytes",
		"Summed disk space allocated (st_blocks*512) to the group's open temp files.")
	// The request-body temp files among them (proxy_request_buffering on:
	// bodies over client_body_buffer_size), counted in the totals above too.
	bodyTempFiles = newGroupDesc("slowlab_proxy_request_body_temp_files",
		"Of slowlab_proxy_temp_files, the request-body temp files: in a client_body_temp, body or client_temp directory (NGINX's client_body_temp_path) or named client-body-temp-* (the embedded proxy's).")
	bodyTempLogical = newGroupDesc("slowlab_proxy_request_body_temp_logical_bytes",
		"Summed size (st_size) of the group's open request-body temp files.")
	bodyTempAllocated = newGroupDesc("slowlab_proxy_request_body_temp_allocated_bytes",
		"Summed disk space allocated (st_blocks*512) to the group's open request-body temp files.")
)

// Request-body temp files are told from response ones by where they are:
// NGINX names no file by kind, so its client_body_temp_path directory
// says it (the lab's and NGINX's compiled-in default "client_body_temp",
// Debian's /var/lib/nginx/body, nginx.org's /var/cache/nginx/client_temp);
// the embedded proxy's start with its prefix (proxy.ClientBodyTempPrefix).
var (
	bodyTempDirNames = []string{"client_body_temp", "body", "client_temp"}
	bodyTempPrefix   = "client-body-temp-"
)

// isRequestBodyTemp reports whether the temp file at path holds a
// request body.
func isRequestBodyTemp(path string) bool {
	if strings.HasPrefix(filepath.Base(path), bodyTempPrefix) {
		return true
	}
	return slices.Contains(bodyTempDirNames, filepath.Base(filepath.Dir(path)))
}

// tempTotals are the counts of one kind of temp file.
type tempTotals struct {
	files              int
	logical, allocated int64
}

func (t *tempTotals) add(st *syscall.Stat_t) {
	t.files++
	t.logical += st.Size
	t.allocated += st.Blocks * 512
}

// tempFilesCollector finds proxy temp files through /proc/PID/fd: NGINX and
// the embedded proxy unlink them right after creating them, so only the open
// fds still show them (as "PATH (deleted)").
type tempFilesCollector struct {
	fds fdWalker
}

var _ Collector = (*tempFilesCollector)(nil)

type devIno struct{ dev, ino uint64 }

func (c *tempFilesCollector) Update(ctx context.Context, targets []Target, ch chan<- prometheus.Metric) error {
	var errs partialErrors
	for _, t := range targets {
		errs.add(t.Err)
		seen := map[devIno]bool{}
		var all, body tempTotals
		read := t.Err == nil // every fd of the group's processes read
		for _, pid := range t.PIDs {
			links, err := fdLinks(ctx, t, c.fds, pid)
			for _, l := range links {
				fdPath := l.path
				ft := parseFDTarget(fdPath, l.target)
				if ft.path == "" || !under(ft.path, t.TempDirs) {
					continue
				}
				// Stat the fd link, not the path: it reaches unlinked files.
				fi, err := c.fds.stat(fdPath)
				if err != nil {
					if !isGone(err) {
						errs.add(fmt.Errorf("group %s: pid %d: stat %s: %w", t.Group, pid, fdPath, permissionHint(err)))
						read = false
					}
					continue
				}
				st, ok := fi.Sys().(*syscall.Stat_t)
				if !ok || !fi.Mode().IsRegular() {
					continue
				}
				key := devIno{uint64(st.Dev), st.Ino}
				if seen[key] {
					continue
				}
				seen[key] = true
				all.add(st)
				if isRequestBodyTemp(ft.path) {
					body.add(st)
				}
			}
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("tempfiles: %w", err)
				}
				errs.add(fmt.Errorf("group %s: %w", t.Group, err))
				read = false
			}
		}
		// A group whose fds could not all be read has no temp-file series:
		// a count of what could be read (0, with every process unreadable)
		// would say "no temp files" where nothing is known.
		if read {
			ch <- t.metric(tempFiles, prometheus.GaugeValue, float64(all.files))
			ch <- t.metric(tempLogical, prometheus.GaugeValue, float64(all.logical))
			ch <- t.metric(tempAllocated, prometheus.GaugeValue, float64(all.allocated))
			ch <- t.metric(bodyTempFiles, prometheus.GaugeValue, float64(body.files))
			ch <- t.metric(bodyTempLogical, prometheus.GaugeValue, float64(body.logical))
			ch <- t.metric(bodyTempAllocated, prometheus.GaugeValue, float64(body.allocated))
		}
		size, avail, ok, err := tempFS(c.fds.procFS, t.PIDs, t.TempDirs)
		if err != nil {
			errs.add(fmt.Errorf("group %s: %w", t.Group, err))
		}
		if ok {
			ch <- t.metric(tempFSSize, prometheus.GaugeValue, float64(size))
			ch <- t.metric(tempFSAvail, prometheus.GaugeValue, float64(avail))
		}
	}
	return errs.err()
}
