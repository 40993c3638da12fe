package exporter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"

	"github.com/slowlab/slowlab/internal/sockdiag"
)

func init() {
	registerCollector("sockets", "TCP send/receive/not-sent queue bytes and socket counts by state (netlink sock_diag)", true,
		func(env collectorEnv) (Collector, error) {
			dump := env.opts.dumpTCP
			if dump == nil {
				dump = dumpTCPNetlink
			}
			return &socketsCollector{fds: env.fdWalker(), dump: dump}, nil
		}, nil)
}

var (
	socketSendQueue = newGroupDesc("slowlab_socket_send_queue_bytes",
		"Bytes in the send queues of the group's TCP sockets, written by the process but not yet acknowledged by the peer (sock_diag idiag_wqueue; listening sockets excluded), by side: accepted (the socket's local port is one the group listens on: its clients) or connected (the group connected out: its upstreams).", "side")
	socketRecvQueue = newGroupDesc("slowlab_socket_receive_queue_bytes",
		"Bytes received on the group's TCP sockets that the process has not read yet (sock_diag idiag_rqueue; listening sockets excluded), by side: accepted or connected.", "side")
	socketNotSent = newGroupDesc("slowlab_socket_notsent_bytes",
		"Bytes in the group's TCP send queues not yet sent even once (TCP_INFO tcpi_notsent_bytes), a part of the send queue, by side: accepted or connected.", "side")
	socketCount = newGroupDesc("slowlab_sockets",
		"TCP sockets of the group by state.", "state")
	openFDs = newGroupDesc("slowlab_process_open_fds",
		"File descriptors open in the group's processes (the entries of /proc/PID/fd, summed; read by the sockets collector's walk of them).")
	acceptQueue = newGroupDesc("slowlab_socket_accept_queue",
		"Connections waiting in the accept queue of the group's listening TCP sockets on port (sock_diag idiag_rqueue of a LISTEN socket, summed over the port's listeners): handshakes done, not yet accepted by the process. Above 0 while the process is idle: its workers are held by something other than work (slow clients).", "port")
	acceptQueueLimit = newGroupDesc("slowlab_socket_accept_queue_limit",
		"The accept queue's limit of the group's listening TCP sockets on port (idiag_wqueue of a LISTEN socket: min(listen backlog, net.core.somaxconn), summed over the port's listeners); a handshake over it is dropped (ListenOverflows).", "port")
	listenOverflows = newGroupDesc("slowlab_listen_overflows_total",
		"Handshakes dropped because a listening socket's accept queue was full, in the network namespaces of the group's processes (/proc/PID/net/netstat TcpExt ListenOverflows, summed over distinct namespaces; groups sharing a namespace report the same count).")
	listenDrops = newGroupDesc("slowlab_listen_drops_total",
		"Incoming connections dropped at a listening socket for any reason, overflows included, in the network namespaces of the group's processes (TcpExt ListenDrops, summed over distinct namespaces).")
	socketQuiet = newGroupDesc("slowlab_sockets_quiet",
		"Established TCP sockets of the group that have received no data for at least `quiet` (TCP_INFO tcpi_last_data_recv; a connection that never sent anything counts from its handshake), by side: accepted (clients holding a connection without sending: idle or abandoned keep-alive, or a request never sent) or connected.", "side", "quiet")
)

// quietAfter are the thresholds of slowlab_sockets_quiet, cumulative: a
// socket quiet for 2 minutes counts in all three.
var quietAfter = []struct {
	label string
	ms    uint32
}{{"10s", 10_000}, {"60s", 60_000}, {"300s", 300_000}}

// tcpStates are the kernel's TCP states (include/net/tcp_states.h), index =
// state number; all are exported for every group.
var tcpStates = []string{
	"", "established", "syn_sent", "syn_recv", "fin_wait1", "fin_wait2", "time_wait",
	"close", "close_wait", "last_ack", "listen", "closing", "new_syn_recv",
}

const (
	tcpEstablished = 1
	tcpListen      = 10
)

// tcpSocket is what the collector needs from one sock_diag record.
type tcpSocket struct {
	state          uint8
	inode          uint64
	localPort      uint16
	rqueue, wqueue uint32
	notsent        uint32
	// lastDataRecv is TCP_INFO tcpi_last_data_recv: milliseconds since
	// the socket last received data (or since its handshake).
	lastDataRecv uint32
}

// socketsCollector matches TCP sockets from one sock_diag dump to groups by
// the socket inodes open in the groups' processes, or by local port.
type socketsCollector struct {
	fds fdWalker
	// dump returns the family's sockets: those with a full socket (every
	// state but TIME_WAIT and NEW_SYN_RECV), and the TIME_WAIT and
	// NEW_SYN_RECV ones on ports, which only port: selectors count.
	dump func(family uint8, ports []uint16) ([]tcpSocket, error)
}

var _ Collector = (*socketsCollector)(nil)

// Sides of a socket: accepted from one of the group's listening ports, or
// connected out by the group.
var sides = [2]string{"accepted", "connected"}

type socketTotals struct {
	send, recv, notsent [2]float64 // by side
	quiet               [2][3]int  // by side and quietAfter
	states              [13]int
	// accept are the group's listening ports' accept queues and limits.
	accept map[uint16]*acceptTotals
}

type acceptTotals struct{ queue, limit float64 }

func (c *socketsCollector) Update(ctx context.Context, targets []Target, ch chan<- prometheus.Metric) error {
	var errs partialErrors
	byInode, byPort, fds, fdsRead, err := c.walk(ctx, targets, &errs)
	if err != nil {
		return err
	}
	totals := sumSockets(c.match(byInode, byPort, &errs), len(targets))
	for i, t := range targets {
		tt := totals[i]
		for side, name := range sides {
			ch <- t.metric(socketSendQueue, prometheus.GaugeValue, tt.send[side], name)
			ch <- t.metric(socketRecvQueue, prometheus.GaugeValue, tt.recv[side], name)
			ch <- t.metric(socketNotSent, prometheus.GaugeValue, tt.notsent[side], name)
			for q, after := range quietAfter {
				ch <- t.metric(socketQuiet, prometheus.GaugeValue, float64(tt.quiet[side][q]), name, after.label)
			}
		}
		for st := 1; st < len(tcpStates); st++ {
			ch <- t.metric(socketCount, prometheus.GaugeValue, float64(tt.states[st]), tcpStates[st])
		}
		for port, a := range tt.accept {
			p := strconv.Itoa(int(port))
			ch <- t.metric(acceptQueue, prometheus.GaugeValue, a.queue, p)
			ch <- t.metric(acceptQueueLimit, prometheus.GaugeValue, a.limit, p)
		}
		if fdsRead[i] { // else absent: a count of what could be read is not the group's
			ch <- t.metric(openFDs, prometheus.GaugeValue, float64(fds[i]))
		}
		if over, drops, ok := c.listenStats(t, &errs); ok {
			ch <- t.metric(listenOverflows, prometheus.CounterValue, over)
			ch <- t.metric(listenDrops, prometheus.CounterValue, drops)
		}
	}
	return errs.err()
}

// walk reads the targets' open fds: which targets hold each socket inode,
// which listen on each port, and how many fds each has; fdsRead says
// whether every fd table of the target was read (its processes found, none
// unreadable). A target's error goes to errs; the context's ending is
// walk's own error.
func (c *socketsCollector) walk(ctx context.Context, targets []Target, errs *partialErrors) (byInode map[uint64][]int, byPort map[uint16][]int, fds []int, fdsRead []bool, err error) {
	byInode = map[uint64][]int{} // socket inode -> target indexes
	fds = make([]int, len(targets))
	fdsRead = make([]bool, len(targets))
	byPort = map[uint16][]int{}
	for i, t := range targets {
		errs.add(t.Err)
		fdsRead[i] = t.Err == nil
		for _, port := range t.Ports {
			byPort[uint16(port)] = append(byPort[uint16(port)], i)
		}
		// Walk from the other end than the temp-file collector: the two share
		// each process's fd walk, so they split the work between CPUs.
		for j := len(t.PIDs) - 1; j >= 0; j-- {
			pid := t.PIDs[j]
			links, err := fdLinks(ctx, t, c.fds, pid)
			fds[i] += len(links)
			for _, l := range links {
				if ino := l.socket; ino != 0 {
					byInode[ino] = appendOnce(byInode[ino], i)
				}
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, nil, nil, fmt.Errorf("sockets: %w", err)
				}
				errs.add(fmt.Errorf("group %s: %w", t.Group, err))
				fdsRead[i] = false
			}
		}
	}
	return byInode, byPort, fds, fdsRead, nil
}

// socketMatch is a TCP socket and the targets it belongs to.
type socketMatch struct {
	s       tcpSocket
	targets []int
}

// match dumps the TCP sockets (kernel-filtered to the targets' ports) and
// keeps those a target holds or listens on the port of.
func (c *socketsCollector) match(byInode map[uint64][]int, byPort map[uint16][]int, errs *partialErrors) []socketMatch {
	var matched []socketMatch
	ports := make([]uint16, 0, len(byPort))
	for p := range byPort {
		ports = append(ports, p)
	}
	for _, family := range []uint8{syscall.AF_INET, syscall.AF_INET6} {
		socks, err := c.dump(family, ports)
		if err != nil {
			errs.add(fmt.Errorf("sock_diag dump (family %d): %w", family, err))
		}
		for _, s := range socks {
			if ts := mergeOnce(byInode[s.inode], byPort[s.localPort]); len(ts) > 0 {
				matched = append(matched, socketMatch{s, ts})
			}
		}
	}
	return matched
}

// sumSockets adds up the matched sockets of each of n targets: counts by
// state, and queues and quiet connections by side. A socket is accepted
// when its local port is one its group listens on.
func sumSockets(matched []socketMatch, n int) []socketTotals {
	listening := make([]map[uint16]bool, n)
	for _, m := range matched {
		if m.s.state == tcpListen {
			for _, i := range m.targets {
				if listening[i] == nil {
					listening[i] = map[uint16]bool{}
				}
				listening[i][m.s.localPort] = true
			}
		}
	}
	totals := make([]socketTotals, n)
	for _, m := range matched {
		for _, i := range m.targets {
			tt := &totals[i]
			if int(m.s.state) < len(tt.states) {
				tt.states[m.s.state]++
			}
			if m.s.state == tcpListen { // a listener's queues are its accept queue and limit
				if tt.accept == nil {
					tt.accept = map[uint16]*acceptTotals{}
				}
				a := tt.accept[m.s.localPort]
				if a == nil {
					a = &acceptTotals{}
					tt.accept[m.s.localPort] = a
				}
				a.queue += float64(m.s.rqueue)
				a.limit += float64(m.s.wqueue)
				continue
			}
			side := 1
			if listening[i][m.s.localPort] {
				side = 0
			}
			tt.send[side] += float64(m.s.wqueue)
			tt.recv[side] += float64(m.s.rqueue)
			tt.notsent[side] += float64(m.s.notsent)
			if m.s.state == tcpEstablished {
				for q, after := range quietAfter {
					if m.s.lastDataRecv >= after.ms {
						tt.quiet[side][q]++
					}
				}
			}
		}
	}
	return totals
}

func appendOnce(s []int, v int) []int {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func mergeOnce(a, b []int) []int {
	if len(b) == 0 {
		return a
	}
	out := append([]int(nil), a...)
	for _, v := range b {
		out = appendOnce(out, v)
	}
	return out
}

// fullStates are the states of sockets that have an inode (a process
// can hold them) and TCP_INFO: all but TIME_WAIT and NEW_SYN_RECV, which a
// busy host has tens of thousands of.
const fullStates = sockdiag.AllStates &^ (1<<sockdiag.TimeWait | 1<<sockdiag.NewSynRecv)

// dumpTCPNetlink dumps one family's TCP sockets in the current network
// namespace, the kernel filtering them: every socket in fullStates with
// TCP_INFO, then the TIME_WAIT and NEW_SYN_RECV ones whose local or remote
// port is one of ports (all of them when there are more ports than a
// filter takes; none when there are no ports).
func dumpTCPNetlink(family uint8, ports []uint16) ([]tcpSocket, error) {
	full, err := sockdiag.Dump(sockdiag.Filter{States: fullStates, Info: true}, family)
	if err != nil {
		return nil, err
	}
	var half []sockdiag.Socket
	if len(ports) > 0 {
		f := sockdiag.Filter{States: 1<<sockdiag.TimeWait | 1<<sockdiag.NewSynRecv}
		if len(ports) <= sockdiag.MaxPorts {
			f.Ports = ports
		}
		if half, err = sockdiag.Dump(f, family); err != nil {
			return nil, err
		}
	}
	out := make([]tcpSocket, 0, len(full)+len(half))
	for _, list := range [][]sockdiag.Socket{full, half} {
		for _, so := range list {
			out = append(out, tcpSocket{state: so.State, inode: uint64(so.Inode), localPort: so.Local.Port(), rqueue: so.RecvQ, wqueue: so.SendQ,
				notsent: so.NotSent, lastDataRecv: so.LastDataRecv})
		}
	}
	return out, nil
}

// listenStats sums ListenOverflows and ListenDrops over the distinct
// network namespaces of t's processes (/proc/PID/ns/net names one;
// /proc/PID/net/netstat is its counters). ok is false, the series absent,
// when the group has no process or a namespace could not be read: a sum
// that missed one would look like a counter reset.
func (c *socketsCollector) listenStats(t Target, errs *partialErrors) (over, drops float64, ok bool) {
	fsys, err := procfs.NewFS(c.fds.procFS)
	if err != nil {
		errs.add(fmt.Errorf("group %s: listen stats: %w", t.Group, err))
		return 0, 0, false
	}
	seen := map[string]bool{}
	for _, pid := range t.PIDs {
		ns, err := os.Readlink(filepath.Join(c.fds.procFS, strconv.Itoa(pid), "ns", "net"))
		if err == nil && seen[ns] {
			continue
		}
		var st procfs.ProcNetstat
		if err == nil {
			var p procfs.Proc
			if p, err = fsys.Proc(pid); err == nil {
				st, err = p.Netstat()
			}
		}
		switch {
		case err != nil && isGone(err):
			continue
		case err != nil:
			errs.add(fmt.Errorf("group %s: pid %d: listen stats: %w", t.Group, pid, permissionHint(err)))
			return 0, 0, false
		case st.ListenOverflows == nil || st.ListenDrops == nil:
			errs.add(fmt.Errorf("group %s: pid %d: net/netstat has no TcpExt ListenOverflows and ListenDrops", t.Group, pid))
			return 0, 0, false
		}
		seen[ns] = true
		over += *st.ListenOverflows
		drops += *st.ListenDrops
	}
	return over, drops, len(seen) > 0
}
