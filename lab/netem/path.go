package netem

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Path is a client namespace and a server namespace joined by a delayed
// link. Create it with New; Close removes everything.
type Path struct {
	Name                   string // slowlab-<random>
	Method                 Method // the method in use (never auto)
	Delay                  time.Duration
	DelayUp, DelayDown     time.Duration // client to server, server to client
	Loss                   float64       // percent, each direction
	Client, Server         *Namespace
	ClientAddr, ServerAddr netip.Addr
	// ClientAddr6 and ServerAddr6 are the ends' IPv6 addresses, and
	// SilentAddr6 one on the same link that the client's packets reach
	// the server namespace for, where no one answers (a SYN to it is
	// dropped without a reply): set only with Config.IPv6.
	ClientAddr6, ServerAddr6, SilentAddr6 netip.Addr

	cc    string
	rate  int64 // bytes per second, each direction; 0: no limit
	tuns  []*tunDevice
	lines []*DelayLine
	veth  bool
	once  sync.Once
	err   error
}

// New creates the namespaces and the path between them. On error
// everything created so far is removed.
func New(ctx context.Context, c Config) (_ *Path, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Method == "" {
		c.Method = MethodAuto
	}
	x := byte(rand.IntN(256))
	up, down := c.oneWay()
	p := &Path{Name: fmt.Sprintf("slowlab-%06x", rand.IntN(1<<24)), Delay: c.Delay, DelayUp: up, DelayDown: down, Loss: c.Loss, cc: c.CongestionControl, rate: c.Rate,
		ClientAddr: netip.AddrFrom4([4]byte{10, 255, x, 1}), ServerAddr: netip.AddrFrom4([4]byte{10, 255, x, 2})}
	if c.IPv6 {
		p.ClientAddr6, p.ServerAddr6, p.SilentAddr6 = addr6(x, 1), addr6(x, 2), addr6(x, 0xdead)
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if p.Client, err = NewNamespace(p.Name + "-cli"); err != nil {
		return nil, err
	}
	if p.Server, err = NewNamespace(p.Name + "-srv"); err != nil {
		return nil, err
	}
	for _, ns := range []*Namespace{p.Client, p.Server} {
		if err := prepare(ns, c.CongestionControl, c.IPv6); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.Method = c.Method
	if p.Method == MethodAuto {
		p.Method = MethodNetem
		if c.plain() {
			p.Method = MethodNone
		}
	}
	switch p.Method {
	case MethodNone:
		err = p.setupVeth(nil)
	case MethodNetem:
		err = p.setupVeth(&c)
		if errors.Is(err, ErrNoNetem) && c.Method == MethodAuto {
			if err = p.removeVeth(); err == nil {
				p.Method = MethodTUN
				err = p.setupTUN(c)
			}
		}
	case MethodTUN:
		err = p.setupTUN(c)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// prepare sets the namespace's sysctls before any link exists: no IPv6
// (nothing but the experiment's packets on the path), or with ipv6 an
// IPv6 that sends nothing of its own (no link-local address, router
// solicitation or duplicate address detection), and no TCP metrics cache
// (every new connection starts cold).
func prepare(ns *Namespace, cc string, ipv6 bool) error {
	if ipv6 {
		for _, kv := range [][2]string{{"net.ipv6.conf.all.disable_ipv6", "0"}, {"net.ipv6.conf.default.disable_ipv6", "0"},
			{"net.ipv6.conf.all.forwarding", "0"}, {"net.ipv6.conf.all.accept_ra", "0"}, {"net.ipv6.conf.default.accept_ra", "0"},
			{"net.ipv6.conf.default.router_solicitations", "0"}, {"net.ipv6.conf.default.accept_dad", "0"},
			{"net.ipv6.conf.default.dad_transmits", "0"}, {"net.ipv6.conf.default.addr_gen_mode", "1"}} {
			if err := ns.sysctl(kv[0], kv[1]); err != nil {
				return fmt.Errorf("IPv6 on the path: %w", err)
			}
		}
	} else {
		for _, key := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
			if err := ns.sysctl(key, "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	if err := ns.sysctl("net.ipv4.tcp_no_metrics_save", "1"); err != nil {
		return err
	}
	if cc == "" {
		return nil
	}
	avail, err := ns.readSysctl("net.ipv4.tcp_available_congestion_control")
	if err != nil {
		return fmt.Errorf("namespace %s: %w", ns.Name, err)
	}
	if !slices.Contains(strings.Fields(avail), cc) {
		return fmt.Errorf("congestion control %q: not available in this kernel (available: %s)", cc, avail)
	}
	return nil
}

// addr6 is host's address in the path's IPv6 prefix, 2001:db8:ff:X::/64
// (the documentation prefix: it names nothing outside the namespaces, and
// as a global address a client prefers it to IPv4 by RFC 6724's default
// policy, as it would a real server's).
func addr6(x byte, host uint16) netip.Addr {
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0x00, 0xff, 0, x, 14: byte(host >> 8), 15: byte(host)})
}

// prefixes are the addresses of the client's and the server's ends.
func (p *Path) prefixes() (cli, srv []netip.Prefix) {
	cli, srv = []netip.Prefix{netip.PrefixFrom(p.ClientAddr, 30)}, []netip.Prefix{netip.PrefixFrom(p.ServerAddr, 30)}
	if p.ClientAddr6.IsValid() {
		cli, srv = append(cli, netip.PrefixFrom(p.ClientAddr6, 64)), append(srv, netip.PrefixFrom(p.ServerAddr6, 64))
	}
	return cli, srv
}

// Across reports whether a is an address across the path from the
// client: the server's, or with IPv6 its IPv6 one or SilentAddr6.
func (p *Path) Across(a netip.Addr) bool {
	return a.IsValid() && (a == p.ServerAddr || a == p.ServerAddr6 || a == p.SilentAddr6)
}

// setupVeth joins the namespaces with a veth pair, with netem on both ends
// when c is not nil.
func (p *Path) setupVeth(c *Config) error {
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: clientLink, MTU: MTU, TxQLen: -1}, PeerName: serverLink,
		PeerNamespace: netlink.NsFd(int(p.Server.h)), PeerTxQLen: -1}
	if err := p.Client.nl.LinkAdd(v); err != nil {
		return fmt.Errorf("add veth pair: %w", permission(err))
	}
	p.veth = true
	cliPrefix, srvPrefix := p.prefixes()
	if err := configureLink(p.Client, clientLink, MTU, cliPrefix); err != nil {
		return err
	}
	if err := configureLink(p.Server, serverLink, MTU, srvPrefix); err != nil {
		return err
	}
	ends := []struct {
		ns   *Namespace
		link string
		peer netip.Addr
	}{{p.Client, clientLink, p.ServerAddr}, {p.Server, serverLink, p.ClientAddr}}
	links := make([]netlink.Link, 2)
	for i, e := range ends {
		l, err := e.ns.nl.LinkByName(e.link)
		if err != nil {
			return fmt.Errorf("namespace %s: %s: %w", e.ns.Name, e.link, err)
		}
		links[i] = l
	}
	// Static neighbours: ARP (or neighbour discovery) would add a round
	// trip to the first packet. The silent address is the server's
	// end's, which drops what it gets for it (not its own; no forwarding).
	for i, e := range ends {
		peers := []netip.Addr{e.peer}
		if p.ServerAddr6.IsValid() {
			peers = append(peers, p.ServerAddr6, p.SilentAddr6)
			if i == 1 {
				peers = []netip.Addr{e.peer, p.ClientAddr6}
			}
		}
		for _, a := range peers {
			fam := netlink.FAMILY_V4
			if a.Is6() {
				fam = netlink.FAMILY_V6
			}
			n := &netlink.Neigh{LinkIndex: links[i].Attrs().Index, Family: fam, State: netlink.NUD_PERMANENT,
				IP: a.AsSlice(), HardwareAddr: links[1-i].Attrs().HardwareAddr}
			if err := e.ns.nl.NeighAdd(n); err != nil {
				return fmt.Errorf("namespace %s: neighbour %s: %w", e.ns.Name, a, permission(err))
			}
		}
	}
	if c == nil {
		return nil
	}
	limit := uint32(c.QueueLimit)
	if limit == 0 {
		limit = 10000 // packets in flight over the delay, per direction
	}
	up, down := c.oneWay()
	for i, e := range ends {
		delay := up // the client's end sends toward the server
		if i == 1 {
			delay = down
		}
		q := netlink.NewNetem(netlink.QdiscAttrs{LinkIndex: links[i].Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
			netlink.NetemQdiscAttrs{Latency: uint32(delay.Microseconds()), Limit: limit, Loss: float32(c.Loss), Rate64: uint64(c.Rate)})
		if err := e.ns.nl.QdiscAdd(q); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("namespace %s: add netem qdisc to %s: %w: %w", e.ns.Name, e.link, ErrNoNetem, err)
			}
			return fmt.Errorf("namespace %s: add netem qdisc to %s: %w", e.ns.Name, e.link, permission(err))
		}
	}
	return nil
}

// removeVeth deletes the veth pair (both ends go together).
func (p *Path) removeVeth() error {
	if !p.veth {
		return nil
	}
	l, err := p.Client.nl.LinkByName(clientLink)
	if err == nil {
		err = p.Client.nl.LinkDel(l)
	}
	var notFound netlink.LinkNotFoundError
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("namespace %s: delete veth %s: %w", p.Client.Name, clientLink, err)
	}
	p.veth = false
	return nil
}

// setupTUN creates a TUN device in each namespace and a delay line per
// direction between them.
func (p *Path) setupTUN(c Config) error {
	cliPrefix, srvPrefix := p.prefixes()
	cli, err := openTUN(p.Client, clientLink, MTU, cliPrefix)
	if err != nil {
		return err
	}
	p.tuns = append(p.tuns, cli)
	srv, err := openTUN(p.Server, serverLink, MTU, srvPrefix)
	if err != nil {
		return err
	}
	p.tuns = append(p.tuns, srv)
	up, down := c.oneWay()
	lc := LineConfig{Delay: up, Loss: c.Loss, Rate: c.Rate, QueueLimit: c.QueueLimit}
	upLine := StartLine(cli, srv, lc)
	lc.Delay = down
	p.lines = []*DelayLine{upLine, StartLine(srv, cli, lc)}
	return nil
}

// CongestionControl is the algorithm the path's sockets use.
func (p *Path) CongestionControl() string {
	if p.cc != "" {
		return p.cc
	}
	cc, err := p.Server.readSysctl("net.ipv4.tcp_congestion_control")
	if err != nil {
		return ""
	}
	return cc
}

// RTT is the round-trip time the path adds.
func (p *Path) RTT() time.Duration { return p.DelayUp + p.DelayDown }

// Close stops the delay lines, removes the links and TUN devices and
// releases the namespaces. Close sockets made with Listen and DialContext
// first: a namespace lasts as long as any socket in it.
func (p *Path) Close() error {
	p.once.Do(func() {
		var errs []error
		for _, d := range p.tuns {
			d.shutdown()
		}
		for _, l := range p.lines {
			errs = append(errs, l.Wait())
		}
		for _, d := range p.tuns {
			d.close()
		}
		if p.Client != nil {
			errs = append(errs, p.removeVeth())
		}
		for _, ns := range []*Namespace{p.Client, p.Server} {
			if ns != nil {
				errs = append(errs, ns.Close())
			}
		}
		p.err = errors.Join(errs...)
	})
	return p.err
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
