package exporter

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/procfs"
)

// ErrSelectsNothing is SelectNow's error for a selector that matches no
// process (or, for port:, no listening socket) now.
var ErrSelectsNothing = errors.New("selects nothing now")

// SelectNow resolves one selector ("KIND:VALUE", as in Group) once, as a
// scrape would: the processes it selects now, sorted. A port: selector
// selects no process; it needs a TCP socket listening on its port (in
// procFS's network namespace). A cgroup-re: selector makes groups rather
// than selecting processes and is refused. It fails with
// ErrSelectsNothing when the selector matches nothing: for callers that
// watch processes someone else started and must find them before they
// start measuring.
func SelectNow(ctx context.Context, sel, procFS, cgroupFS string) ([]int, error) {
	o := Options{ProcFS: procFS, CgroupFS: cgroupFS}.withDefaults()
	g, err := compileGroup(Group{Name: "select", Selectors: []string{sel}})
	if err != nil {
		return nil, err
	}
	s := g.selectors[0]
	switch s.kind {
	case "cgroup-re":
		return nil, fmt.Errorf("selector %q: cgroup-re: makes groups; give cgroup:, tree:, pid:, comm:, cmdline: or port:", sel)
	case "port":
		ok, err := listening(o.ProcFS, s.n)
		if err != nil {
			return nil, fmt.Errorf("selector %q: %w", sel, err)
		}
		if !ok {
			return nil, fmt.Errorf("selector %q %w: no TCP socket listens on port %d", sel, ErrSelectsNothing, s.n)
		}
		return nil, nil
	}
	r := resolver{procFS: o.ProcFS, cgroupFS: o.CgroupFS, groups: []group{g}}
	ts, _, err := r.resolve(ctx)
	if err != nil {
		return nil, err
	}
	t := ts[0]
	if t.Err != nil {
		return nil, fmt.Errorf("selector %q: %w", sel, errors.Unwrap(t.Err))
	}
	if len(t.PIDs) == 0 {
		return nil, fmt.Errorf("selector %q %w: no process", sel, ErrSelectsNothing)
	}
	return t.PIDs, nil
}

// listening reports whether a TCP socket (v4 or v6) listens on port.
func listening(procFS string, port int) (bool, error) {
	fs, err := procfs.NewFS(procFS)
	if err != nil {
		return false, err
	}
	const tcpListen = 0x0A
	v4, err := fs.NetTCP()
	if err != nil {
		return false, fmt.Errorf("read %s/net/tcp: %w", procFS, err)
	}
	v6, err6 := fs.NetTCP6()
	if err6 == nil {
		v4 = append(v4, v6...)
	}
	for _, l := range v4 {
		if l.St == tcpListen && l.LocalPort == uint64(port) {
			return true, nil
		}
	}
	return false, nil
}
