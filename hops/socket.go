package hops

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/internal/sockdiag"
)

// Socket is one TCP socket of a sock_diag dump.
type Socket = sockdiag.Socket

// wantStates are the states dumped: every one with a full socket and
// TCP_INFO; not TIME_WAIT (a host can hold tens of thousands, none of
// them holding data), not listening sockets and not half-open requests.
const wantStates = sockdiag.AllStates &^ (1<<sockdiag.TimeWait | 1<<sockdiag.Listen | 1<<sockdiag.NewSynRecv)

// DumpTCP dumps the TCP sockets of the current network namespace whose
// local or remote port is one of ports, with TCP_INFO and their receive
// buffers: IPv4 sockets, and
// IPv6 ones too with v6 (each family is one walk of the kernel's socket
// table). The kernel filters them (by state, and by an INET_DIAG bytecode
// of port comparisons), so little is copied whatever else the host has;
// the walk itself still visits every socket of the table.
func DumpTCP(ports []uint16, v6 bool) ([]Socket, error) {
	if len(ports) == 0 || len(ports) > sockdiag.MaxPorts {
		return nil, fmt.Errorf("sock_diag dump: %d ports, want 1 to %d", len(ports), sockdiag.MaxPorts)
	}
	families := []uint8{unix.AF_INET}
	if v6 {
		families = append(families, unix.AF_INET6)
	}
	return sockdiag.Dump(sockdiag.Filter{States: wantStates, Ports: ports, Info: true, MemInfo: true}, families...)
}
