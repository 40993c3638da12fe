// Package netem builds the network path of the latency-gap experiment: a
// client and a server network namespace created by the run, joined by a
// path that delays every packet for real, so the TCP handshake, delayed
// ACKs and slow start happen as they would across a wide-area link.
//
// # Design
//
// Namespaces. NewNamespace creates an anonymous namespace (unshare on a
// locked OS thread, like netns.New) and keeps that thread, in the
// namespace, for the namespace's life: Namespace.Do runs a function on it.
// A socket, a TUN device or a netlink socket belongs to the namespace of
// the thread that created it, forever, so the path's listener, its dialer's
// sockets and its netlink handles are created through Do and then used from
// any goroutine. Nothing is bind-mounted under /var/run/netns: a namespace
// vanishes when the last thread, socket or file descriptor holding it is
// gone, so even a lab killed with SIGKILL leaves nothing behind. The names
// (slowlab-<random>-cli, -srv) label them in errors and logs only.
//
// Paths. New picks the method:
//
//   - netem: a veth pair between the namespaces (MTU 1500, static neighbour
//     entries so ARP adds no round trip) with a netem qdisc delaying each
//     end's egress by Delay, so the round trip is 2*Delay (or by DelayUp at
//     the client's end and DelayDown at the server's), dropping Loss
//     percent at random and pacing at Rate.
//   - tun: where adding the netem qdisc fails with ENOENT (kernels built
//     without sch_netem), a TUN device in each namespace (MTU 1500, no
//     offloads, so every packet is at most one MTU as on a real link) and
//     one DelayLine per direction in this process. A DelayLine reads a
//     packet from one TUN device and writes it to the other when it is due:
//     due = max(arrival + Delay, previous due), so order is kept, optionally
//     after pacing at Rate; it drops Loss percent of the packets at random
//     as they arrive. It records every packet's lateness (actual write
//     minus due); a path whose p99 lateness exceeds MaxP99Lateness did not
//     delay faithfully (Lateness.Valid). To keep lateness in tens of
//     microseconds on a busy host, the reader and the writer each own an
//     OS thread, SCHED_FIFO where allowed, with a 1 ns timer slack; they
//     block in poll(2) and nanosleep(2) rather than in the runtime poller
//     and Go timers (which wake up to 1 ms late), and GOMAXPROCS is raised
//     by one per such thread while lines run, so a thread coming back from
//     a system call finds an idle P at once.
//   - none: a veth pair with no delay (used for the 0 ms conditions).
//
// Addresses are 10.255.X.1/30 (client) and 10.255.X.2/30 (server). They
// exist only inside the two namespaces, which have no other interface but
// their loopback and no route anywhere else, so traffic cannot leave them.
//
// Both namespaces disable IPv6 (no router solicitations or MLD reports
// travel the path) and set tcp_no_metrics_save, so every new connection
// starts cold instead of inheriting the previous one's RTT and ssthresh.
// Config.IPv6 gives the path IPv6 too, for a client that chooses between
// the families (happy eyeballs): 2001:db8:ff:X::1/64 (client) and ::2
// (server) on the same link, the documentation prefix, which names
// nothing outside the namespaces; addresses without duplicate address
// detection, no link-local address and no router solicitation, so IPv6
// adds no packets of its own on a TUN path (a veth one still carries the
// MLD reports of its addresses' groups, which Transit counts at both
// ends). 2001:db8:ff:X::dead (SilentAddr6) is on the link and reaches the
// server namespace, which drops it (not its address, no forwarding)
// without a reply: an address whose SYN is never answered. The server's
// listener (Path.Listen) answers at both of its addresses.
//
// Path.Counts reports the packets that entered the path and those it
// dropped, by its own count: the delay lines' (random losses and queue
// overflows apart) or the netem qdiscs' statistics. Path.Transit counts
// the same packets at the path's ends instead, from each namespace's IP
// counters (packets its stack sent, packets it received): what the path
// lost whoever dropped it, the figure to check the path's own count and
// the asked loss against. Path.Settle waits until no packet is between
// the ends, so that an interval's two readings match. Every link carries
// GSO packets of one segment only, so that a packet to the IP layer is a
// packet on the path (and netem drops packets, not 64 KB bursts).
//
// Privileges: creating a namespace needs CAP_SYS_ADMIN and configuring
// links CAP_NET_ADMIN (root); without them New fails with an error that
// wraps ErrPermission and says so.
//
// The package does not serve or measure HTTP (lab does); it owns namespaces,
// links, qdiscs, TUN devices and the delay line, and removes all of them in
// Close.
package netem
