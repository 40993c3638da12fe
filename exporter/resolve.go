package exporter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/slowlab/slowlab/cgroup"
)

// resolver turns the configured groups into Targets once per scrape, so every
// collector sees the same processes.
type resolver struct {
	procFS   string
	cgroupFS string
	groups   []group
	maxDyn   int // Options.MaxDynamicGroups
	slots    *dynSlots
}

// procEntry is one process from a full /proc scan.
type procEntry struct {
	pid, ppid int
	comm      string
}

// procTable is a full /proc scan, made only when a comm, cmdline or tree
// selector needs it.
type procTable struct {
	fs       procfs.FS
	procs    []procEntry
	cmdlines map[int]string
}

func (r *resolver) resolve(ctx context.Context) ([]Target, dynStats, error) {
	var (
		table       *procTable
		scanErr     error
		layout      cgroup.Layout
		layoutErr   error
		layoutReady bool
	)
	if r.needsScan() {
		table, scanErr = scanProcs(ctx, r.procFS)
	}
	targets := make([]Target, 0, len(r.groups))
	hasDyn := false
	for _, g := range r.groups {
		if g.dyn != nil {
			hasDyn = true
			continue
		}
		t := Target{Group: g.name, Cgroup: g.cgroup, Ports: g.ports, TempDirs: g.tempDirs, ErrorLogs: g.errorLogs}
		pids := map[int]bool{}
		var errs partialErrors
		for _, s := range g.selectors {
			switch s.kind {
			case "pid":
				if _, err := os.Stat(filepath.Join(r.procFS, strconv.Itoa(s.n))); err == nil {
					pids[s.n] = true
				} else if !isGone(err) {
					errs.add(fmt.Errorf("pid:%d: %w", s.n, err))
				}
			case "tree", "comm", "cmdline":
				if scanErr != nil {
					errs.add(scanErr)
					continue
				}
				table.match(s, pids)
			case "cgroup":
				if !layoutReady {
					layout, layoutErr = cgroup.Detect(r.cgroupFS)
					layoutReady = true
				}
				if layoutErr != nil {
					errs.add(layoutErr)
					continue
				}
				if err := layout.AddPids(s.path, pids); err != nil {
					errs.add(fmt.Errorf("cgroup:%s: %w", s.path, err))
				}
			}
		}
		t.PIDs = make([]int, 0, len(pids))
		for pid := range pids {
			t.PIDs = append(t.PIDs, pid)
		}
		sort.Ints(t.PIDs)
		if err := errs.err(); err != nil {
			t.Err = fmt.Errorf("group %s: select processes: %w", g.name, err)
		}
		targets = append(targets, t)
	}
	if !hasDyn {
		return targets, dynStats{}, nil
	}
	if !layoutReady {
		layout, layoutErr = cgroup.Detect(r.cgroupFS)
	}
	if layoutErr != nil {
		return targets, dynStats{}, fmt.Errorf("cgroup-re: %w", layoutErr)
	}
	return r.resolveDynamic(ctx, layout, targets)
}

// resolveDynamic adds the dynamic groups' targets to the fixed ones.
func (r *resolver) resolveDynamic(ctx context.Context, layout cgroup.Layout, targets []Target) ([]Target, dynStats, error) {
	matches, err := matchDynamic(ctx, layout, r.groups)
	if err != nil {
		return targets, dynStats{}, err
	}
	taken := map[string]bool{}
	for _, t := range targets {
		taken[dynMatch{name: t.Group}.key()] = true
	}
	if matches, err = skipSandboxes(ctx, layout, r.procFS, matches); err != nil {
		return targets, dynStats{}, err
	}
	dyn, st := r.slots.assign(ctx, layout, matches, r.maxDyn, taken)
	return append(targets, dyn...), st, nil
}

// dynamic reports whether any group is a cgroup-re: group.
func (r *resolver) dynamic() bool {
	return slices.ContainsFunc(r.groups, func(g group) bool { return g.dyn != nil })
}

func (r *resolver) needsScan() bool {
	for _, g := range r.groups {
		for _, s := range g.selectors {
			switch s.kind {
			case "tree", "comm", "cmdline":
				return true
			}
		}
	}
	return false
}

// scanProcs reads the pid, parent and comm of every process.
func scanProcs(ctx context.Context, procFS string) (*procTable, error) {
	pfs, err := procfs.NewFS(procFS)
	if err != nil {
		return nil, fmt.Errorf("scan processes: %w", err)
	}
	all, err := pfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("scan processes: %w", err)
	}
	t := &procTable{fs: pfs, procs: make([]procEntry, 0, len(all)), cmdlines: map[int]string{}}
	for _, p := range all {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("scan processes: %w", err)
		}
		st, err := p.Stat()
		if err != nil {
			// Exited since the directory listing, or unreadable: a process
			// whose stat cannot be read cannot be matched by any selector.
			continue
		}
		t.procs = append(t.procs, procEntry{pid: p.PID, ppid: st.PPID, comm: st.Comm})
	}
	return t, nil
}

// match adds the processes selected by a tree, comm or cmdline selector.
func (t *procTable) match(s selector, pids map[int]bool) {
	switch s.kind {
	case "tree":
		children := map[int][]int{}
		found := false
		for _, p := range t.procs {
			children[p.ppid] = append(children[p.ppid], p.pid)
			found = found || p.pid == s.n
		}
		if !found {
			return
		}
		seen := map[int]bool{}
		queue := []int{s.n}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if seen[pid] {
				continue
			}
			seen[pid] = true
			pids[pid] = true
			queue = append(queue, children[pid]...)
		}
	case "comm":
		for _, p := range t.procs {
			if s.re.MatchString(p.comm) {
				pids[p.pid] = true
			}
		}
	case "cmdline":
		for _, p := range t.procs {
			if s.re.MatchString(t.cmdline(p.pid)) {
				pids[p.pid] = true
			}
		}
	}
}

func (t *procTable) cmdline(pid int) string {
	if c, ok := t.cmdlines[pid]; ok {
		return c
	}
	var c string
	if p, err := t.fs.Proc(pid); err == nil {
		if args, err := p.CmdLine(); err == nil {
			c = strings.Join(args, " ")
		}
	}
	t.cmdlines[pid] = c
	return c
}
