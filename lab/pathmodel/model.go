// Package pathmodel is the path model: how many bytes of one slow download the path between
// the app and the client can hold, predicted before the run from
// configuration only (the kernel's socket buffer settings of the
// namespace the cell runs in, the buffers the app, the proxy and the
// client set), never from what the run measures. The app is held until
// all but that many bytes have been read, so its send time is
// max(0, size - capacity) / rate.
//
// Each hop is a buffer as the kernel or the proxy sizes it:
//   - a socket whose owner sets SO_SNDBUF or SO_RCVBUF to v gets
//     max(2 * min(v, net.core.wmem_max or rmem_max), the kernel's minimum):
//     Linux doubles the value for its bookkeeping and locks the size;
//   - a send buffer nobody sets is autotuned up to tcp_wmem's maximum;
//   - a receive buffer nobody sets starts at tcp_rmem's default and is
//     grown by receive autotuning only when its reader copies more than
//     it holds per round trip; every reader on this path drains at the
//     slow client's rate (NGINX reads from the app only as fast as the
//     client takes it), far less, so the model keeps the default. Measured,
//     the proxy's receive queue from the app did grow past it (up to
//     4.4 MiB), so the model also gives the most it can grow to,
//     tcp_rmem's maximum (Capacity.Most);
//   - the proxy holds proxy_buffer_size with buffering off (the one
//     buffer it relays through), proxy_buffer_size + proxy_buffers and up
//     to proxy_max_temp_file_size on disk with buffering on
//     (proxy_busy_buffers_size is a part of proxy_buffers, not more).
//
// The model counts buffer sizes, not the payload they hold: the kernel
// charges a socket's buffer with each packet's whole memory (truesize),
// advertises only part of a receive buffer as window, autotunes a send
// buffer to what its congestion window asks (which may stay under the
// maximum) and wakes a blocked writer only when a third of its buffer is
// free. Where the measured send time differs, those are the reasons; the
// model is not adjusted to the measurements.
//
// It owns the prediction, its measured error bounds (MaxUnder,
// MaxOver) and the judgement made with them (Judge: a response fits in
// the least the path holds, holds the app over the most, or the model
// cannot tell; Unpredicted, where it has no prediction): buffer-sweep
// writes the prediction beside what its runs measure (sweep.csv), and
// its TestModelErrorEmbedded and TestModelErrorReal hold the measured
// capacity within those bounds over a small sweep on loopback; assess
// judges its large response with it, and the experiments whose finding
// needs the app held by a slow download (slow-client, temp-cliff,
// stalled-reader) warn with it (Judgement.Warning, through package
// holds) where the path may hold the whole response. Reading the kernel's
// settings is lab's (NetSettings), the proxies' buffer settings
// lab/stack's.
package pathmodel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// Kernel minima of a socket buffer set with SO_SNDBUF or SO_RCVBUF
// (SOCK_MIN_SNDBUF and SOCK_MIN_RCVBUF on 64-bit Linux: 2048 bytes and a
// socket buffer's own 256, twice that for a send buffer).
const (
	sockMinRcvBuf = 2048 + 256
	sockMinSndBuf = 2 * sockMinRcvBuf
)

// Config is everything the model reads: configuration, all of it
// known before the run.
type Config struct {
	Route            stack.Route
	TCPWmem, TCPRmem recorder.TCPMem // net.ipv4.tcp_wmem, tcp_rmem of the cell's namespace
	WmemMax, RmemMax int64           // net.core.wmem_max, rmem_max: the most SO_SNDBUF, SO_RCVBUF may ask
	AppSndBuf        int64           // SO_SNDBUF the app sets; 0: none (autotuned)
	ClientRcvBuf     int64           // SO_RCVBUF the slow client sets; 0: none
	Proxy            stack.ResponseBuffers
}

// Capacity is the model's capacity of a path, hop by hop, in bytes
// (0 for the hops a route does not have).
type Capacity struct {
	AppSend       int64 // the app's send buffer
	ProxyRecv     int64 // the proxy's receive buffer from the app
	ProxyMemory   int64 // the proxy's memory buffers
	ProxyTempFile int64 // the proxy's temp file
	ProxySend     int64 // the proxy's send buffer to the client
	ClientRecv    int64 // the client's receive buffer
	// ProxyRecvMax is the most the proxy's receive buffer from the app
	// can grow to (tcp_rmem's maximum): receive autotuning grew it past
	// ProxyRecv in the runs measured. Most counts it; Total does not.
	ProxyRecvMax int64
}

// Total is the path's capacity: every hop's.
func (p Capacity) Total() int64 {
	return p.AppSend + p.ProxyRecv + p.ProxyMemory + p.ProxyTempFile + p.ProxySend + p.ClientRecv
}

// Most is the most the path can hold: Total with the proxy's receive
// buffer grown to ProxyRecvMax.
func (p Capacity) Most() int64 {
	return p.Total() + max(0, p.ProxyRecvMax-p.ProxyRecv)
}

// String writes the capacity and its hops: "1.02 MiB: app send 1m +
// client receive 16k".
func (p Capacity) String() string {
	var parts []string
	for _, h := range []struct {
		name string
		v    int64
	}{{"app send", p.AppSend}, {"proxy receive", p.ProxyRecv}, {"proxy memory", p.ProxyMemory},
		{"proxy temp file", p.ProxyTempFile}, {"proxy send", p.ProxySend}, {"client receive", p.ClientRecv}} {
		if h.v > 0 {
			parts = append(parts, h.name+" "+bytesize.Format(h.v))
		}
	}
	return fmt.Sprintf("%.2f MiB: %s", float64(p.Total())/(1<<20), strings.Join(parts, " + "))
}

// NetConfig reads a namespace's socket buffer settings into c: tcp_wmem
// and tcp_rmem ("min default max"), wmem_max and rmem_max (bytes).
func NetConfig(n *recorder.NetSettings, c *Config) error {
	if n == nil {
		return errors.New("the kernel's socket buffer settings could not be read")
	}
	var err error
	if c.TCPWmem, err = n.TCPMem("tcp_wmem"); err != nil {
		return err
	}
	if c.TCPRmem, err = n.TCPMem("tcp_rmem"); err != nil {
		return err
	}
	// wmem_max and rmem_max matter only to a socket that sets its
	// buffer; Predict refuses one whose limit was not read.
	for _, m := range []struct {
		key, v string
		to     *int64
	}{{"net.core.wmem_max", n.WmemMax, &c.WmemMax}, {"net.core.rmem_max", n.RmemMax, &c.RmemMax}} {
		if m.v == "" {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(m.v), 10, 64)
		if err != nil || v < 0 {
			return fmt.Errorf("%s %q: want a byte count", m.key, m.v)
		}
		*m.to = v
	}
	return nil
}

// Predict is the capacity of c's path.
func Predict(c Config) (Capacity, error) {
	switch {
	case !c.Route.Valid():
		return Capacity{}, fmt.Errorf("route %q: allowed %v", c.Route, stack.Routes)
	case c.TCPWmem.Max <= 0 || c.TCPRmem.Default <= 0:
		return Capacity{}, fmt.Errorf("tcp_wmem max %d, tcp_rmem default %d: want both above 0", c.TCPWmem.Max, c.TCPRmem.Default)
	case c.AppSndBuf < 0 || c.ClientRcvBuf < 0:
		return Capacity{}, fmt.Errorf("SO_SNDBUF %d, SO_RCVBUF %d: want 0 (not set) or more", c.AppSndBuf, c.ClientRcvBuf)
	case (c.AppSndBuf > 0 && c.WmemMax <= 0) || (c.ClientRcvBuf > 0 && c.RmemMax <= 0):
		return Capacity{}, fmt.Errorf("wmem_max %d, rmem_max %d: a socket that sets its buffer needs the limit", c.WmemMax, c.RmemMax)
	}
	p := Capacity{AppSend: c.sndBuf(c.AppSndBuf), ClientRecv: c.rcvBuf(c.ClientRcvBuf)}
	if !c.Route.Proxied() {
		return p, nil
	}
	p.ProxyRecv, p.ProxySend = c.rcvBuf(0), c.sndBuf(0)
	p.ProxyRecvMax = max(p.ProxyRecv, c.TCPRmem.Max)
	p.ProxyMemory = c.Proxy.BufferSize
	if c.Route.Buffering() {
		p.ProxyMemory += int64(c.Proxy.Buffers.Count) * int64(c.Proxy.Buffers.Size)
		p.ProxyTempFile = c.Proxy.MaxTempFileSize
	}
	return p, nil
}

// sndBuf is a send buffer's size: set with SO_SNDBUF (set > 0), or
// autotuned up to tcp_wmem's maximum.
func (c Config) sndBuf(set int64) int64 {
	if set > 0 {
		return max(2*min(set, c.WmemMax), sockMinSndBuf)
	}
	return c.TCPWmem.Max
}

// rcvBuf is a receive buffer's size: set with SO_RCVBUF (set > 0), or
// tcp_rmem's default, which autotuning does not grow for a slow reader.
func (c Config) rcvBuf(set int64) int64 {
	if set > 0 {
		return max(2*min(set, c.RmemMax), sockMinRcvBuf)
	}
	return c.TCPRmem.Default
}

// AppSend is the app's send time in seconds for a download of
// size bytes read at rate bytes/s through a path holding capacity bytes.
func AppSend(size, rate, capacity int64) float64 {
	return float64(max(0, size-capacity)) / float64(rate)
}

// The prediction's error bounds, measured on loopback by buffer-sweep's
// TestModelErrorEmbedded and TestModelErrorReal (lab/buffersweep), which
// hold every point of a small sweep (direct and buffering off; tcp_wmem
// maxima of 1, 4 and 16 MiB and the host's) within them: the capacity
// measured is at least (1 - MaxUnder) times the prediction (Total), and
// what the samples surely had in flight (less each sample's skew) at
// most (1 + MaxOver) times the most the model says the path can hold
// (Most).
//
// Under: an autotuned send buffer held 81-83% of tcp_wmem's maximum in
// payload in most direct runs (the buffer is charged each packet's
// truesize), but autotuning does not always grow it that far: under
// 16 MiB one download held 10.6 MiB (-34%), the median of the cell's two
// -25.5%, the worst of 12 runs of each point on both stacks. 0.4 is that
// download's shortfall and a sixth more. Over: behind a proxy with
// buffering off the path held up to 86% more than Total (the proxy's
// receive queue from the app up to 4.4 MiB), never more than 83% of
// Most, which lets it grow to tcp_rmem's maximum; the samples' own skew
// (up to 10 MiB on a loaded machine) is why the over side is judged on
// what they surely saw. 0.1 allows a packet over a send buffer's maximum
// (64 KiB on loopback, 6% of a 1 MiB buffer), which the direct route's
// send queue was seen to hold.
const (
	MaxUnder = 0.4
	MaxOver  = 0.1
)
