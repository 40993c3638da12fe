package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// MaxLookup is the most sockets one LookupPair looks up, and lookupChunk
// how many requests go in one sendto: the kernel answers them all before
// the call returns, and their replies (about 450 bytes each with TCP_INFO
// and memory) must fit the netlink socket's receive buffer, or the kernel
// drops them.
const (
	MaxLookup   = 4096
	lookupChunk = 128
	// lookupTimeout bounds each receive: the kernel answers every request
	// (a socket or an error), so only a dropped reply would wait on it.
	lookupTimeout = time.Second
)

// LookupPair looks up each of socks (as a Dump returned them) by its exact
// address pair, twice, the second pass straight after the first: the
// kernel finds each socket in its hash table instead of walking the table,
// so a pass over a few sockets takes microseconds where a Dump walks every
// bucket (about a millisecond on an idle host). What a socket moved from
// first to second bounds what any socket of the pair moved while second
// was read, which is what a caller judging several sockets at one instant
// needs to know. A socket no longer there (closed, or in TIME_WAIT or
// NEW_SYN_RECV, which carry no TCP_INFO) is left out of a pass, as is
// what the kernel answers for a connection gone: its listener. Only f's
// Info and MemInfo apply; each pass keeps socks' order.
func LookupPair(socks []Socket, f Filter) (first, second []Socket, err error) {
	if len(socks) > MaxLookup {
		return nil, nil, fmt.Errorf("sock_diag lookup: %d sockets, at most %d", len(socks), MaxLookup)
	}
	if len(socks) == 0 {
		return nil, nil, nil
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, nil, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, nil, fmt.Errorf("sock_diag bind: %w", err)
	}
	tv := unix.NsecToTimeval(lookupTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, nil, fmt.Errorf("sock_diag receive timeout: %w", err)
	}
	reqs := make([][]byte, 0, (len(socks)+lookupChunk-1)/lookupChunk)
	for i := 0; i < len(socks); i += lookupChunk {
		chunk := socks[i:min(i+lookupChunk, len(socks))]
		var b []byte
		for j, s := range chunk {
			b = append(b, LookupRequest(s, uint32(i+j+1), f)...)
		}
		reqs = append(reqs, b)
	}
	// Both passes are received raw and parsed after the second, so that
	// nothing but the syscalls lies between them.
	buf := make([]byte, 64<<10)
	raw := [2][]byte{make([]byte, 0, 512*len(socks)), make([]byte, 0, 512*len(socks))}
	var ends [2][]reply
	for pass := range raw {
		for i, b := range reqs {
			if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
				return nil, nil, fmt.Errorf("sock_diag lookup request: %w", err)
			}
			n := min(lookupChunk, len(socks)-i*lookupChunk)
			if raw[pass], ends[pass], err = receiveN(fd, buf, n, raw[pass], ends[pass]); err != nil {
				return nil, nil, err
			}
		}
	}
	var out [2][]Socket
	for pass := range raw {
		start := 0
		for _, r := range ends[pass] {
			s, ok := ParseMsg(raw[pass][start:r.end])
			start = r.end
			// Where the connection is gone the kernel answers with the
			// socket a packet of it would reach: the listener.
			if ok && r.seq >= 1 && int(r.seq) <= len(socks) && s.State != TimeWait && s.State != NewSynRecv &&
				s.Local == socks[r.seq-1].Local && s.Remote == socks[r.seq-1].Remote {
				out[pass] = append(out[pass], s)
			}
		}
	}
	return out[0], out[1], nil
}

// LookupRequest is the netlink message asking for the one socket s is (by
// its family, ports and addresses, any cookie), with the attributes f
// asks for.
func LookupRequest(s Socket, seq uint32, f Filter) []byte {
	total := unix.NLMSG_HDRLEN + reqV2Size
	b := make([]byte, total)
	ne, be := binary.NativeEndian, binary.BigEndian
	ne.PutUint32(b[0:], uint32(total))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], seq)
	r := b[unix.NLMSG_HDRLEN:]
	r[0], r[1] = unix.AF_INET6, unix.IPPROTO_TCP
	if s.Local.Addr().Is4() {
		r[0] = unix.AF_INET
	}
	if f.Info {
		r[2] = 1 << (diagInfo - 1)
	}
	if f.MemInfo {
		r[2] |= 1 << (diagSkMemInfo - 1)
	}
	ne.PutUint32(r[4:], AllStates)
	id := r[8:]
	be.PutUint16(id[0:], s.Local.Port())
	be.PutUint16(id[2:], s.Remote.Port())
	putAddr(id[4:20], s.Local)
	putAddr(id[20:36], s.Remote)
	// idiag_if 0; idiag_cookie INET_DIAG_NOCOOKIE twice: any socket of
	// these addresses.
	ne.PutUint32(id[40:], ^uint32(0))
	ne.PutUint32(id[44:], ^uint32(0))
	return b
}

// putAddr puts ap's address as inet_diag_sockid holds it: an IPv4 one in
// its first four bytes, an IPv6 one in all sixteen.
func putAddr(b []byte, ap netip.AddrPort) {
	if a := ap.Addr(); a.Is4() {
		v := a.As4()
		copy(b, v[:])
	} else {
		v := a.As16()
		copy(b, v[:])
	}
}

// reply is where one socket's message ends in a pass's raw replies, and
// the sequence number of the request it answers.
type reply struct {
	end int
	seq uint32
}

// receiveN receives n replies to lookups, appending each socket's message
// to raw and its end and sequence number to ends; a socket not found
// (ENOENT) adds nothing.
func receiveN(fd int, buf []byte, n int, raw []byte, ends []reply) ([]byte, []reply, error) {
	ne := binary.NativeEndian
	for got := 0; got < n; {
		m, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return raw, ends, fmt.Errorf("sock_diag lookup receive (%d of %d replies): %w", got, n, err)
		}
		for b := buf[:m]; len(b) >= unix.NLMSG_HDRLEN; {
			l := int(ne.Uint32(b[0:]))
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return raw, ends, fmt.Errorf("sock_diag lookup receive: a message of %d bytes in %d", l, len(b))
			}
			data := b[unix.NLMSG_HDRLEN:l]
			switch ne.Uint16(b[4:]) {
			case unix.NLMSG_ERROR:
				got++
				if len(data) >= 4 {
					if errno := unix.Errno(-int32(ne.Uint32(data))); errno != 0 && errno != unix.ENOENT {
						return raw, ends, fmt.Errorf("sock_diag: %w", os.NewSyscallError("lookup", errno))
					}
				}
			case unix.SOCK_DIAG_BY_FAMILY:
				got++
				raw = append(raw, data...)
				ends = append(ends, reply{len(raw), ne.Uint32(b[8:])})
			}
			b = b[min((l+3)&^3, len(b)):]
		}
	}
	return raw, ends, nil
}
