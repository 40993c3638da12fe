package exporter

import (
	"context"
	"fmt"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	registerCollector("tempfiles", "reverse-proxy temp files open by each group's processes, unlinked ones included", true,
		func(env collectorEnv) (Collector, error) {
			return &tempFilesCollector{fds: env.fdWalker()}, nil
		})
}

var (
	tempFiles = newGroupDesc("slowlab_proxy_temp_files",
		"Regular files under the group's temp dirs held open by its processes, unlinked ones included, counted once per device and inode.")
	tempLogical = newGroupDesc("slowlab_proxy_temp_logical_bytes",
		"Summed size (st_size) of the group's open temp files.")
	tempAllocated = newGroupDesc("slowlab_proxy_temp_allocated_bytes",
		"Summed disk space allocated (st_blocks*512) to the group's open temp files.")
)

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
		var logical, allocated int64
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
				logical += st.Size
				allocated += st.Blocks * 512
			}
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("tempfiles: %w", err)
				}
				errs.add(fmt.Errorf("group %s: %w", t.Group, err))
			}
		}
		ch <- t.metric(tempFiles, prometheus.GaugeValue, float64(len(seen)))
		ch <- t.metric(tempLogical, prometheus.GaugeValue, float64(logical))
		ch <- t.metric(tempAllocated, prometheus.GaugeValue, float64(allocated))
	}
	return errs.err()
}
