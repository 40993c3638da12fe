// Package sockdiag dumps TCP sockets through netlink sock_diag with the
// kernel doing the filtering: by TCP state, and by an INET_DIAG bytecode
// of port comparisons, so that a host with tens of thousands of sockets
// (most of them TIME_WAIT) copies only the few a caller wants. It parses
// struct inet_diag_msg and the TCP_INFO attribute itself, into one flat
// struct without allocations per attribute.
//
// It owns the request encoding and the reply parsing; what a socket means
// (whose it is, which hop of a response it holds) is its callers' (hops,
// exporter).
package sockdiag

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

// Socket is one TCP socket of a dump.
type Socket struct {
	Local, Remote netip.AddrPort
	State         uint8
	Inode         uint32
	// RecvQ is the bytes received and not yet read (a listener: its
	// accept backlog); SendQ the bytes written and not yet acknowledged.
	RecvQ, SendQ uint32
	// From TCP_INFO, when the dump asked for it and the socket has it
	// (HasInfo): NotSent is the part of SendQ never sent; BytesAcked and
	// BytesReceived the cumulative counters; LastDataRecv the milliseconds
	// since data last arrived (since the handshake when none has).
	NotSent                   uint32
	BytesAcked, BytesReceived uint64
	LastDataRecv              uint32
	HasInfo                   bool
	// RcvBuf is the socket's receive buffer (sk_rcvbuf, the kernel's
	// double of SO_RCVBUF), when the dump asked for its memory
	// (Filter.MemInfo): the most its receive queue can hold. 0 otherwise.
	RcvBuf uint32
}

// TCP states (include/net/tcp_states.h) a Filter names as 1<<state.
const (
	Established = 1
	TimeWait    = 6
	Listen      = 10
	NewSynRecv  = 12
	AllStates   = 0xfff << 1 // every state, 1 to 12
)

// MaxPorts is the most ports a Filter can name (the bytecode grows with
// them; the kernel audits its jumps as 16-bit offsets).
const MaxPorts = 15

// Filter selects the sockets of a dump.
type Filter struct {
	States uint32   // bitmask of 1<<state; 0 is AllStates
	Ports  []uint16 // a socket whose local or remote port is one of these; nil: any
	Info   bool     // with TCP_INFO
	// MemInfo asks for the socket's memory (INET_DIAG_SKMEMINFO): RcvBuf.
	MemInfo bool
}

// Kernel constants of include/uapi/linux/inet_diag.h.
const (
	diagReqBytecode = 1  // INET_DIAG_REQ_BYTECODE
	diagInfo        = 2  // INET_DIAG_INFO: struct tcp_info
	diagSkMemInfo   = 7  // INET_DIAG_SKMEMINFO: u32 sk_meminfo[SK_MEMINFO_VARS]
	bcSEq           = 11 // INET_DIAG_BC_S_EQ
	bcDEq           = 12 // INET_DIAG_BC_D_EQ
	bcJmp           = 1  // INET_DIAG_BC_JMP
	reqV2Size       = 56 // struct inet_diag_req_v2
	msgSize         = 72 // struct inet_diag_msg
)

// Dump dumps the TCP sockets of the current network namespace of each
// family (unix.AF_INET, unix.AF_INET6) that f selects, one walk of the
// kernel's socket table per family.
func Dump(f Filter, families ...uint8) ([]Socket, error) {
	if len(f.Ports) > MaxPorts {
		return nil, fmt.Errorf("sock_diag dump: %d ports, at most %d", len(f.Ports), MaxPorts)
	}
	var out []Socket
	err := dumpRaw(f, families, func(msg []byte) {
		if s, ok := ParseMsg(msg); ok {
			out = append(out, s)
		}
	})
	return out, err
}

// dumpRaw dumps as Dump does and hands each reply message to each.
func dumpRaw(f Filter, families []uint8, each func([]byte)) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("sock_diag bind: %w", err)
	}
	buf := make([]byte, 64<<10)
	for seq, family := range families {
		if err := unix.Sendto(fd, Request(family, uint32(seq+1), f), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return fmt.Errorf("sock_diag request: %w", err)
		}
		if err := receive(fd, buf, each); err != nil {
			return err
		}
	}
	return nil
}

// Request is the netlink message of a dump of family's TCP sockets that
// f selects.
func Request(family uint8, seq uint32, f Filter) []byte {
	var bc []byte
	if len(f.Ports) > 0 {
		bc = bytecode(f.Ports)
	}
	attrLen := 0
	if bc != nil {
		attrLen = 4 + len(bc)
	}
	total := unix.NLMSG_HDRLEN + reqV2Size + attrLen
	b := make([]byte, total)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(total))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(b[8:], seq)
	r := b[unix.NLMSG_HDRLEN:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	if f.Info {
		r[2] = 1 << (diagInfo - 1)
	}
	if f.MemInfo {
		r[2] |= 1 << (diagSkMemInfo - 1)
	}
	states := f.States
	if states == 0 {
		states = AllStates
	}
	ne.PutUint32(r[4:], states)
	if bc != nil {
		a := r[reqV2Size:]
		ne.PutUint16(a[0:], uint16(attrLen))
		ne.PutUint16(a[2:], diagReqBytecode)
		copy(a[4:], bc)
	}
	return b
}

// bytecode accepts a socket whose local or remote port is one of ports.
// The kernel's audit follows "yes" as fall-through, so an OR of
// comparisons c1..cn is laid out as iproute2's ss does: c1 J c2 J ... cn,
// each comparison falling through on a match to a J that always jumps
// ("no") to the end (accept), and on a mismatch skipping its J to the
// next comparison; the last one's mismatch jumps 4 past the end (reject).
func bytecode(ports []uint16) []byte {
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
			j[0], j[1] = bcJmp, 4
			ne.PutUint16(j[2:], uint16(len(b)-12*i-8)) // to the end
		}
	}
	return b
}

// receive reads one dump's replies, handing each socket's message to each.
func receive(fd int, buf []byte, each func([]byte)) error {
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("sock_diag receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("sock_diag receive: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := -int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
						return fmt.Errorf("sock_diag: %w", os.NewSyscallError("dump", unix.Errno(errno)))
					}
				}
				return nil
			case unix.SOCK_DIAG_BY_FAMILY:
				each(m.Data)
			}
		}
	}
}

// ParseMsg parses one struct inet_diag_msg and its attributes; false when
// d is too short to be one.
func ParseMsg(d []byte) (Socket, bool) {
	if len(d) < msgSize {
		return Socket{}, false
	}
	family := d[0]
	s := Socket{State: d[1]}
	be, ne := binary.BigEndian, binary.NativeEndian
	sport, dport := be.Uint16(d[4:]), be.Uint16(d[6:])
	s.Local = netip.AddrPortFrom(ipOf(family, d[8:24]), sport)
	s.Remote = netip.AddrPortFrom(ipOf(family, d[24:40]), dport)
	s.RecvQ, s.SendQ, s.Inode = ne.Uint32(d[56:]), ne.Uint32(d[60:]), ne.Uint32(d[68:])
	for a := d[msgSize:]; len(a) >= 4; {
		l := int(ne.Uint16(a[0:]))
		if l < 4 || l > len(a) {
			break
		}
		if ne.Uint16(a[2:])&0x3fff == diagSkMemInfo && l >= 4+8 {
			s.RcvBuf = ne.Uint32(a[8:]) // SK_MEMINFO_RCVBUF, the second
		}
		if ne.Uint16(a[2:])&0x3fff == diagInfo {
			// A shorter struct from an older kernel leaves the rest zero.
			var info unix.TCPInfo
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&info)), unsafe.Sizeof(info)), a[4:l])
			s.NotSent, s.BytesAcked, s.BytesReceived, s.LastDataRecv, s.HasInfo =
				info.Notsent_bytes, info.Bytes_acked, info.Bytes_received, info.Last_data_recv, true
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
