package netem

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// tunDevice is a TUN device (IFF_TUN|IFF_NO_PI: each read returns one IP
// packet, each write takes one). It is read and written with plain system
// calls on the calling thread, not through the runtime poller, so the delay
// line's own threads pick a packet up as soon as it arrives. The device is
// not persistent: it disappears when its descriptor is closed.
type tunDevice struct {
	name string
	fd   int
	stop int // eventfd, readable after shutdown: ends a blocked Read

	once sync.Once
}

// openTUN creates the TUN device name in n, sets its MTU and address and
// brings it up.
func openTUN(n *Namespace, name string, mtu int, addrs []netip.Prefix) (*tunDevice, error) {
	d := &tunDevice{name: name, fd: -1, stop: -1}
	err := n.Do(func() error {
		// The device's namespace is the opener's, fixed at open(2).
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		d.fd = fd
		ifr, err := unix.NewIfreq(name)
		if err == nil {
			ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
			err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
		}
		if err != nil {
			return fmt.Errorf("TUNSETIFF %s: %w", name, err)
		}
		return nil
	})
	if err == nil {
		d.stop, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	}
	if err != nil {
		d.close()
		return nil, fmt.Errorf("namespace %s: %w", n.Name, permission(err))
	}
	if err := configureLink(n, name, mtu, addrs); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// Read waits for one packet; after shutdown it returns os.ErrClosed.
func (d *tunDevice) Read(p []byte) (int, error) {
	fds := []unix.PollFd{{Fd: int32(d.fd), Events: unix.POLLIN}, {Fd: int32(d.stop), Events: unix.POLLIN}}
	for {
		n, err := unix.Read(d.fd, p)
		switch err {
		case nil:
			return n, nil
		case unix.EAGAIN, unix.EINTR:
		default:
			return 0, fmt.Errorf("read %s: %w", d.name, err)
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			return 0, fmt.Errorf("poll %s: %w", d.name, err)
		}
		if fds[1].Revents != 0 {
			return 0, os.ErrClosed
		}
	}
}

// Write sends one packet into the device's namespace.
func (d *tunDevice) Write(p []byte) (int, error) {
	n, err := unix.Write(d.fd, p)
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", d.name, err)
	}
	return n, nil
}

// shutdown ends pending and future Reads.
func (d *tunDevice) shutdown() {
	if d.stop >= 0 {
		unix.Write(d.stop, binary.NativeEndian.AppendUint64(nil, 1))
	}
}

// close closes the descriptors, which removes the device. Call it only when
// no line uses the device any more.
func (d *tunDevice) close() {
	d.once.Do(func() {
		for _, fd := range []int{d.fd, d.stop} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	})
}

// configureLink sets the MTU and addresses of link name in n and brings
// it up. An IPv6 address is usable at once (no duplicate address
// detection: nothing else is on the link). It also limits the link's GSO packets to one segment: TCP then hands
// IP one wire packet at a time instead of up to 64 KB to be cut up below
// it, so a netem qdisc drops packets, not bursts of 44, and the IP
// counters Transit reads count packets.
func configureLink(n *Namespace, name string, mtu int, addrs []netip.Prefix) error {
	l, err := n.nl.LinkByName(name)
	if err == nil {
		err = n.nl.LinkSetMTU(l, mtu)
	}
	if err == nil {
		err = n.nl.LinkSetGSOMaxSegs(l, 1)
	}
	for _, a := range addrs {
		if err == nil {
			nla := &netlink.Addr{IPNet: ipNet(a)}
			if a.Addr().Is6() {
				nla.Flags = unix.IFA_F_NODAD
			}
			err = n.nl.AddrAdd(l, nla)
		}
	}
	if err == nil {
		err = n.nl.LinkSetUp(l)
	}
	if err != nil {
		return fmt.Errorf("namespace %s: configure %s: %w", n.Name, name, permission(err))
	}
	return nil
}
