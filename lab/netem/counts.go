package netem

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
)

// TakeLateness returns the lateness of the packets the delay lines (both
// directions) forwarded since the previous call. Only MethodTUN has delay
// lines; the others report no packets.
func (p *Path) TakeLateness() Lateness {
	var all []time.Duration
	dropped := 0
	for _, l := range p.lines {
		late, d := l.take()
		all = append(all, late...)
		dropped += d
	}
	return summarize(all, dropped)
}

// Counts returns the packets that entered the path in both directions
// since it was made, and how many it dropped, by its own count: the delay
// lines' random losses and queue overflows (tun), or the netem qdiscs'
// drops, random or over their queue limit, which netem does not tell
// apart (netem: all in Lost; a packet counts when it leaves the qdisc or
// is dropped, so the ones still delayed are not in yet). Subtract two
// Counts for an interval's loss as applied. Transit counts the same
// packets at the path's ends instead.
func (p *Path) Counts() (Loss, error) {
	var sum Loss
	for _, l := range p.lines {
		c := l.Counts()
		sum.Packets += c.Packets
		sum.Lost += c.Lost
		sum.Overflow += c.Overflow
	}
	if p.Method != MethodNetem {
		return sum, nil
	}
	stats, err := p.netemStats()
	if err != nil {
		return Loss{}, err
	}
	for _, st := range stats {
		sum.Packets += int64(st.Basic.Packets) + int64(st.Queue.Drops)
		sum.Lost += int64(st.Queue.Drops)
	}
	return sum, nil
}

// netemStats returns the statistics of the netem qdisc at each end.
func (p *Path) netemStats() ([]*netlink.QdiscStatistics, error) {
	var out []*netlink.QdiscStatistics
	for _, e := range []struct {
		ns   *Namespace
		link string
	}{{p.Client, clientLink}, {p.Server, serverLink}} {
		l, err := e.ns.nl.LinkByName(e.link)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %s: %w", e.ns.Name, e.link, err)
		}
		qs, err := e.ns.nl.QdiscList(l)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: qdiscs of %s: %w", e.ns.Name, e.link, err)
		}
		i := slices.IndexFunc(qs, func(q netlink.Qdisc) bool { return q.Type() == "netem" })
		if i < 0 || qs[i].Attrs().Statistics == nil || qs[i].Attrs().Statistics.Basic == nil || qs[i].Attrs().Statistics.Queue == nil {
			return nil, fmt.Errorf("namespace %s: %s has no netem qdisc with statistics", e.ns.Name, e.link)
		}
		out = append(out, qs[i].Attrs().Statistics)
	}
	return out, nil
}

// held is how many packets the path holds now: queued in its delay lines
// or being written (tun), or in its netem qdiscs (netem).
func (p *Path) held() (int64, error) {
	var n int64
	for _, l := range p.lines {
		n += l.inFlight.Load()
	}
	if p.Method != MethodNetem {
		return n, nil
	}
	stats, err := p.netemStats()
	if err != nil {
		return 0, err
	}
	for _, st := range stats {
		n += int64(st.Queue.Qlen)
	}
	return n, nil
}

// Transit is what the two ends of a path counted, summed over both
// directions and independently of the path's own counts (Counts): the IP
// packets each namespace's stack sent (Ip OutRequests in its
// /proc/net/snmp, and with IPv6 Ip6OutRequests in /proc/net/snmp6) and
// those it received (Ip InReceives, Ip6InReceives). The namespaces
// have no other traffic (their loopback is idle), so
// Sent - Received are the packets the path lost, whoever dropped them:
// its random loss, its queue overflows, a TUN device's full queue, a
// qdisc. They are counted before the netem qdisc and the TUN device, which
// is why the links' own tx_packets, counted after netem, cannot be used.
type Transit struct {
	Sent, Received int64
}

// Lost is Sent - Received.
func (t Transit) Lost() int64 { return t.Sent - t.Received }

// Sub returns the packets since before.
func (t Transit) Sub(before Transit) Transit {
	return Transit{Sent: t.Sent - before.Sent, Received: t.Received - before.Received}
}

// Transit reads both ends' IP counters. Packets still on the path (sent,
// not yet received) count as sent only: call Settle for a reading without
// any.
func (p *Path) Transit() (Transit, error) {
	var sum Transit
	for _, ns := range []*Namespace{p.Client, p.Server} {
		c, err := ns.ipCounters(p.ServerAddr6.IsValid())
		if err != nil {
			return Transit{}, err
		}
		sum.Sent += c.Sent
		sum.Received += c.Received
	}
	return sum, nil
}

// ErrNotQuiet is wrapped by Settle's error when the path kept carrying
// packets.
var ErrNotQuiet = errors.New("the path did not fall quiet")

// settleWindows bounds how many quiet windows Settle waits for.
const settleWindows = 50

// Settle waits until the path carries nothing: until both ends' counters
// stay unchanged over a window longer than a packet takes to cross (the
// longer one-way delay, two full packets at the rate, and the allowed
// lateness, twice over) and the path holds no packet (its delay lines or
// netem qdiscs, which a stalled delay line could keep a packet in for
// longer). Then no packet is between the ends, and the reading it returns
// has none on the way. It gives up after settleWindows windows with the
// last reading and an error wrapping ErrNotQuiet, or when ctx ends.
func (p *Path) Settle(ctx context.Context) (Transit, error) {
	w := p.quietWindow()
	prev, err := p.Transit()
	if err != nil {
		return Transit{}, err
	}
	t := time.NewTimer(w)
	defer t.Stop()
	for range settleWindows {
		select {
		case <-ctx.Done():
			return prev, ctx.Err()
		case <-t.C:
		}
		held, err := p.held()
		if err != nil {
			return Transit{}, err
		}
		cur, err := p.Transit()
		if err != nil {
			return Transit{}, err
		}
		if cur == prev && held == 0 {
			return cur, nil
		}
		prev = cur
		t.Reset(w)
	}
	return prev, fmt.Errorf("path %s: %w: its ends' counters still changed after %d windows of %s", p.Name, ErrNotQuiet, settleWindows, w)
}

// quietWindow is how long the counters must stay unchanged for Settle.
func (p *Path) quietWindow() time.Duration {
	w := max(p.DelayUp, p.DelayDown) + MaxP99Lateness
	if p.rate > 0 {
		w += time.Duration(2 * MTU * int64(time.Second) / p.rate)
	}
	return 2*w + time.Millisecond
}

// ipCounters reads Ip OutRequests and InReceives in the namespace, with
// v6 the IPv6 ones added.
func (n *Namespace) ipCounters(v6 bool) (Transit, error) {
	var c Transit
	err := n.Do(func() error {
		// /proc/thread-self/net is the calling thread's namespace's.
		var err error
		if c, err = readCounters("/proc/thread-self/net/snmp", parseSNMP); err != nil || !v6 {
			return err
		}
		c6, err := readCounters("/proc/thread-self/net/snmp6", parseSNMP6)
		c.Sent, c.Received = c.Sent+c6.Sent, c.Received+c6.Received
		return err
	})
	if err != nil {
		return Transit{}, fmt.Errorf("namespace %s: IP counters: %w", n.Name, err)
	}
	return c, nil
}

// readCounters parses the file at path.
func readCounters(path string, parse func(io.Reader) (Transit, error)) (Transit, error) {
	f, err := os.Open(path)
	if err != nil {
		return Transit{}, err
	}
	defer f.Close()
	return parse(f)
}

// parseSNMP6 reads Ip6OutRequests (as Sent) and Ip6InReceives (as
// Received) from /proc/net/snmp6's format: a line "Name value" each.
func parseSNMP6(r io.Reader) (Transit, error) {
	s := bufio.NewScanner(r)
	var t Transit
	var got [2]bool
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) != 2 {
			continue
		}
		i := slices.Index([]string{"Ip6OutRequests", "Ip6InReceives"}, fields[0])
		if i < 0 {
			continue
		}
		v, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil || v < 0 {
			return Transit{}, fmt.Errorf("snmp6: %s %q is not a count", fields[0], fields[1])
		}
		if got[i] {
			return Transit{}, fmt.Errorf("snmp6: %s given twice", fields[0])
		}
		got[i] = true
		if i == 0 {
			t.Sent = v
		} else {
			t.Received = v
		}
	}
	if err := s.Err(); err != nil {
		return Transit{}, fmt.Errorf("snmp6: %w", err)
	}
	if !got[0] || !got[1] {
		return Transit{}, errors.New("snmp6: no Ip6OutRequests and Ip6InReceives counters")
	}
	return t, nil
}

// parseSNMP reads the Ip counters OutRequests (as Sent) and InReceives (as
// Received) from /proc/net/snmp's format: for each protocol a header line
// "Ip: Name Name..." followed by a value line "Ip: N N...".
func parseSNMP(r io.Reader) (Transit, error) {
	s := bufio.NewScanner(r)
	var header []string
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 || fields[0] != "Ip:" {
			continue
		}
		if header == nil {
			header = fields
			continue
		}
		if len(fields) != len(header) {
			return Transit{}, fmt.Errorf("snmp: Ip has %d names but %d values", len(header)-1, len(fields)-1)
		}
		var t Transit
		for _, want := range []struct {
			name string
			to   *int64
		}{{"OutRequests", &t.Sent}, {"InReceives", &t.Received}} {
			i := slices.Index(header, want.name)
			if i < 1 {
				return Transit{}, fmt.Errorf("snmp: Ip has no %s counter", want.name)
			}
			v, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil || v < 0 {
				return Transit{}, fmt.Errorf("snmp: Ip %s %q is not a count", want.name, fields[i])
			}
			*want.to = v
		}
		return t, nil
	}
	if err := s.Err(); err != nil {
		return Transit{}, fmt.Errorf("snmp: %w", err)
	}
	return Transit{}, errors.New("snmp: no Ip counters")
}
