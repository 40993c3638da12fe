package hops

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Socket is one TCP socket of a sock_diag dump.
type Socket struct {
	Local, Remote netip.AddrPort
	State         uint8
	// RecvQ is the bytes received and not yet read; SendQ the bytes
	// written and not yet acknowledged; NotSent the part of SendQ never
	// sent (TCP_INFO tcpi_notsent_bytes).
	RecvQ, SendQ, NotSent uint32
	// BytesAcked and BytesReceived are TCP_INFO's cumulative counters;
	// HasInfo says the dump had TCP_INFO for the socket.
	BytesAcked, BytesReceived uint64
	HasInfo                   bool
}

// Kernel constants of include/uapi/linux/inet_diag.h and tcp_states.h.
const (
	diagReqBytecode = 1  // INET_DIAG_REQ_BYTECODE
	diagInfo        = 2  // INET_DIAG_INFO: struct tcp_info
	bcSEq           = 11 // INET_DIAG_BC_S_EQ
	bcDEq           = 12 // INET_DIAG_BC_D_EQ
	reqV2Size       = 56 // struct inet_diag_req_v2
	diagMsgSize     = 72 // struct inet_diag_msg
	tcpTimeWait     = 6
	tcpListen       = 10
	tcpNewSynRecv   = 12
)

// wantStates are the states dumped: every one with a full socket and
// TCP_INFO; not TIME_WAIT (a host can hold tens of thousands, none of
// them holding data), not listening sockets and not half-open requests.
const wantStates = 0xfff &^ (1<<tcpTimeWait | 1<<tcpListen | 1<<tcpNewSynRecv)

// DumpTCP dumps the TCP sockets of the current network namespace whose
// local or remote port is one of ports, with TCP_INFO: IPv4 sockets, and
// IPv6 ones too with v6 (each family is one walk of the kernel's socket
// table). The kernel filters them (by state, and by an INET_DIAG bytecode
// of port comparisons), so little is copied whatever else the host has;
// the walk itself still visits every socket of the table.
func DumpTCP(ports []uint16, v6 bool) ([]Socket, error) {
	if len(ports) == 0 || len(ports) > 15 {
		return nil, fmt.Errorf("sock_diag dump: %d ports, want 1 to 15", len(ports))
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag bind: %w", err)
	}
	var out []Socket
	buf := make([]byte, 64<<10)
	families := []uint8{unix.AF_INET}
	if v6 {
		families = append(families, unix.AF_INET6)
	}
	for seq, family := range families {
		if err := unix.Sendto(fd, request(family, uint32(seq+1), ports), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return nil, fmt.Errorf("sock_diag request: %w", err)
		}
		if out, err = receive(fd, buf, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// request is a dump request of TCP sockets of family with TCP_INFO, in
// the wanted states, filtered to ports.
func request(family uint8, seq uint32, ports []uint16) []byte {
	bc := bytecode(ports)
	attrLen := 4 + len(bc)
	total := unix.NLMSG_HDRLEN + reqV2Size + attrLen
	b := make([]byte, total)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(total))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(b[8:], seq)
	r := b[unix.NLMSG_HDRLEN:]
	r[0], r[1], r[2] = family, unix.IPPROTO_TCP, 1<<(diagInfo-1)
	ne.PutUint32(r[4:], wantStates)
	a := r[reqV2Size:]
	ne.PutUint16(a[0:], uint16(attrLen))
	ne.PutUint16(a[2:], diagReqBytecode)
	copy(a[4:], bc)
	return b
}

// bytecode accepts a socket whose local or remote port is one of ports.
// The kernel's audit follows "yes" as fall-through, so an OR of
// comparisons c1..cn is laid out as iproute2's ss does: c1 J c2 J ... cn,
// each comparison falling through on a match to a J that always jumps
// ("no") to the end (accept), and on a mismatch skipping its J to the
// next comparison; the last one's mismatch jumps 4 past the end (reject).
func bytecode(ports []uint16) []byte {
	const jmp = 1 // INET_DIAG_BC_JMP
	n := 2 * len(ports)
	b := make([]byte, 12*n-4)
	ne := binary.NativeEndian
	for i := range n {
		op := b[12*i:]
		op[0] = bcSEq
		if i%2 == 1 {
			op[0] = bcDEq
		}
		op[1] = 8                // yes: fall through to the J
		ne.PutUint16(op[2:], 12) // no: past the J to the next comparison
		ne.PutUint16(op[6:], ports[i/2])
		if i < n-1 {
			j := op[8:]
			j[0], j[1] = jmp, 4
			ne.PutUint16(j[2:], uint16(len(b)-12*i-8)) // to the end
		}
	}
	return b
}

// receive reads one dump's replies into out.
func receive(fd int, buf []byte, out []Socket) ([]Socket, error) {
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return out, fmt.Errorf("sock_diag receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return out, fmt.Errorf("sock_diag receive: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := -int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
						return out, fmt.Errorf("sock_diag: %w", os.NewSyscallError("dump", unix.Errno(errno)))
					}
				}
				return out, nil
			case unix.SOCK_DIAG_BY_FAMILY:
				if s, ok := parseMsg(m.Data); ok {
					out = append(out, s)
				}
			}
		}
	}
}

// parseMsg parses one struct inet_diag_msg and its attributes.
func parseMsg(d []byte) (Socket, bool) {
	if len(d) < diagMsgSize {
		return Socket{}, false
	}
	family := d[0]
	s := Socket{State: d[1]}
	be := binary.BigEndian
	sport, dport := be.Uint16(d[4:]), be.Uint16(d[6:])
	s.Local = netip.AddrPortFrom(ipOf(family, d[8:24]), sport)
	s.Remote = netip.AddrPortFrom(ipOf(family, d[24:40]), dport)
	ne := binary.NativeEndian
	s.RecvQ, s.SendQ = ne.Uint32(d[56:]), ne.Uint32(d[60:])
	for a := d[diagMsgSize:]; len(a) >= 4; {
		l := int(ne.Uint16(a[0:]))
		if l < 4 || l > len(a) {
			break
		}
		if ne.Uint16(a[2:])&0x3fff == diagInfo {
			var info unix.TCPInfo
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&info)), unsafe.Sizeof(info)), a[4:l])
			s.NotSent, s.BytesAcked, s.BytesReceived, s.HasInfo = info.Notsent_bytes, info.Bytes_acked, info.Bytes_received, true
		}
		a = a[min((l+3)&^3, len(a)):]
	}
	return s, true
}

func ipOf(family uint8, b []byte) netip.Addr {
	if family == unix.AF_INET {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16([16]byte(b[:16])).Unmap()
}
