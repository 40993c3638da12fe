package hops

import (
	"slices"

	"github.com/slowlab/slowlab/recorder"
)

type groupKey struct {
	run      string
	download int
	ts       float64
}

// group is one sample of one download, or the proxy's rows at one sample.
type group struct {
	k    groupKey
	rows []int
	v    Violation
	// What the rows say.
	writtenOK   bool
	writtenSeen bool  // app_written is from sock_diag, not derived
	measured    int64 // hops in transit measured (sock_diag, proxy), less their delivered parts
	kernel      int64 // of those, sock_diag's
	read        int64
	clientSent  int64 // what the proxy's socket to the client took: its queue, less delivered, + received
	skew        int64
	bounded     bool // the proxy's holding is derived: bounded, not measured
	hasTemp     bool
	tempSize    int64
	memoryBound int64
	// rangeSkew is the proxy's skew (its temp files' movement with the
	// sockets') where the range of what the proxy may hold is from them;
	// proxyMemory its memory bound per response (0 without its rows).
	rangeSkew, proxyMemory int64
	// Each hop's row (the last of its name), for the path's identities.
	val map[string]hopVal
	// The verdict on the sample: judged or why not, and the identities
	// that did not hold.
	status status
	vs     []Violation
}

type hopVal struct {
	bytes  int64
	source string
}

// status is whether a sample's conservation was judged.
type status int

const (
	judged status = iota
	// tooSkewed: the sample's skew is not below what the client's receive
	// queue can hold (or that is not known), so the check cannot resolve
	// every hop at it.
	tooSkewed
	// unmeasured: app_written unknown, or through a proxy its socket to
	// the app missing, or, on the direct route after the
	// app's socket closed, derived from the client's own count.
	unmeasured
)

// get is hop's bytes and whether it was measured (from the kernel, the
// proxy's report or its files), not derived or missing.
func (g *group) get(hop string) (int64, bool) {
	h, ok := g.val[hop]
	return h.bytes, ok && (h.source == recorder.HopSourceKernel || h.source == recorder.HopSourceProxy || h.source == recorder.HopSourceFile)
}

// known is hop's bytes and whether it is in the rows, measured or derived.
func (g *group) known(hop string) (int64, bool) {
	h, ok := g.val[hop]
	return h.bytes, ok && h.source != recorder.HopSourceMissing
}

// evaluate groups rows by sample and computes each group's Violation
// (whether or not it holds), download groups first, in first-seen order.
func evaluate(rows []recorder.Hop) []*group {
	at := map[groupKey]*group{}
	var order []*group
	for i, h := range rows {
		k := groupKey{h.RunID, h.Download, h.TS}
		g := at[k]
		if g == nil {
			g = &group{k: k, v: Violation{RunID: h.RunID, TS: h.TS, Download: h.Download}}
			at[k] = g
			order = append(order, g)
		}
		g.rows = append(g.rows, i)
		g.add(h)
	}
	proxy := map[groupKey]*group{}
	byProxy := map[groupKey][]*group{}
	for _, g := range order {
		pk := groupKey{g.k.run, recorder.HopProxyWide, g.k.ts}
		if g.k.download == recorder.HopProxyWide {
			proxy[pk] = g
		} else {
			byProxy[pk] = append(byProxy[pk], g)
		}
	}
	for _, g := range order {
		if g.k.download != recorder.HopProxyWide {
			g.downloadCheck(proxy[groupKey{g.k.run, recorder.HopProxyWide, g.k.ts}])
		}
	}
	for pk, g := range proxy {
		g.proxyCheck(byProxy[pk])
	}
	return order
}

func (g *group) add(h recorder.Hop) {
	v := &g.v
	if g.val == nil {
		g.val = map[string]hopVal{}
	}
	g.val[h.Hop] = hopVal{h.Bytes, h.Source}
	if h.Source == recorder.HopSourceMissing && h.Hop != recorder.HopUnaccounted && h.Hop != recorder.HopAppSendQueueNotSent &&
		!slices.Contains(v.Missing, h.Hop) {
		v.Missing = append(v.Missing, h.Hop)
	}
	switch h.Hop {
	case recorder.HopAppWritten:
		v.AppWritten, g.writtenOK, g.writtenSeen = h.Bytes, h.Source != recorder.HopSourceMissing, h.Source == recorder.HopSourceKernel
	case recorder.HopSampleSkew:
		g.skew = h.Bytes
	case recorder.HopClientRead:
		v.ClientReceived += h.Bytes
		g.read = h.Bytes
		g.clientSent += h.Bytes
	case recorder.HopClientRecvQueue:
		v.ClientReceived += h.Bytes
	case recorder.HopProxyTempFileSize:
		g.hasTemp, g.tempSize = h.Source == recorder.HopSourceFile, h.Bytes
	case recorder.HopProxyMemoryBound:
		g.memoryBound = h.Bytes
	case recorder.HopAppSendQueueDelivered, recorder.HopProxyClientSendQueueDelivered:
		if h.Source == recorder.HopSourceKernel {
			g.measured -= h.Bytes
			g.kernel -= h.Bytes
			if h.Hop == recorder.HopProxyClientSendQueueDelivered {
				g.clientSent -= h.Bytes
			}
		}
	}
	if h.Hop == recorder.HopProxyClientSendQueue && h.Source == recorder.HopSourceKernel {
		g.clientSent += h.Bytes
	}
	if h.Hop == recorder.HopClientRecvQueue {
		g.clientSent += h.Bytes
	}
	if !slices.Contains(recorder.HopsInTransit, h.Hop) {
		return
	}
	switch h.Source {
	case recorder.HopSourceKernel:
		g.measured += h.Bytes
		g.kernel += h.Bytes
	case recorder.HopSourceProxy:
		g.measured += h.Bytes
	case recorder.HopSourceDerived:
		if h.Hop == recorder.HopProxyMemory || h.Hop == recorder.HopProxyTempFile {
			g.bounded = true
		}
	}
}

// outside is how far x is outside [lo, hi]: negative below, positive
// above, 0 within.
func outside(x, lo, hi int64) int64 {
	switch {
	case x < lo:
		return x - lo
	case x > hi:
		return x - hi
	}
	return 0
}

// downloadCheck: app_written = measured hops + client_read, the proxy's
// holding, where it is not measured, within [0, its temp files + its
// memory bound] (p: the proxy's rows at the sample, nil without them).
func (g *group) downloadCheck(p *group) {
	v := &g.v
	if !g.writtenOK && !slices.Contains(v.Missing, recorder.HopAppWritten) {
		v.Missing = append(v.Missing, recorder.HopAppWritten)
	}
	held := v.AppWritten - g.measured - g.read
	if g.bounded {
		if p == nil || !p.hasTemp {
			v.Missing = append(v.Missing, recorder.HopProxyTempFileSize)
		} else {
			v.High = p.tempSize + p.memoryBound
			g.rangeSkew = p.skew
		}
	}
	if p != nil {
		g.proxyMemory = p.memoryBound
	}
	v.Unaccounted = outside(held, 0, v.High)
	// The skew bounds what one pair of sockets read at two instants of a
	// dump can be off by: the whole path through a proxy is three pairs.
	// Through a proxy the headers the sockets count differ (the proxy
	// rewrites them), and so do they where app_written is derived from
	// the download's total as the client received it.
	v.Allowed = g.skew + g.rangeSkew
	if _, proxied := g.val[recorder.HopProxyUpstreamRecvQ]; proxied {
		v.Allowed = 3*g.skew + g.rangeSkew + HeaderSlack
	} else if !g.writtenSeen {
		v.Allowed += HeaderSlack
	}
	g.judge()
}

// proxyCheck: over the downloads ds the proxy relays at the sample, what
// the sockets leave to the proxy (app_written less the socket hops and
// client_read) lies between what its temp files hold unsent at least
// (their size less what it sent to the clients) and their size plus its
// memory bound per download.
func (g *group) proxyCheck(ds []*group) {
	v := &g.v
	if !g.hasTemp {
		v.Missing = append(v.Missing, recorder.HopProxyTempFileSize)
	}
	var held, sent int64
	for _, d := range ds {
		for _, m := range d.v.Missing {
			if m != recorder.HopProxyTempFileSize && !slices.Contains(v.Missing, m) {
				v.Missing = append(v.Missing, m)
			}
		}
		held += d.v.AppWritten - d.kernel - d.read
		sent += d.clientSent
		v.AppWritten += d.v.AppWritten
		v.ClientReceived += d.v.ClientReceived
	}
	v.Low = max(g.tempSize-sent, 0)
	v.High = g.tempSize + int64(len(ds))*g.memoryBound
	v.Unaccounted = outside(held, v.Low, v.High)
	v.Allowed = g.skew + int64(len(ds))*HeaderSlack
	// It tests what the proxy holds, of which the smallest part is its
	// memory for the downloads (its memory bound each; not known, a
	// client's receive buffer): judged where its skew (the temp files'
	// movement with every socket's) is below that, and what each
	// download's app wrote is known.
	res := int64(len(ds)) * g.memoryBound
	for _, d := range ds {
		if rb, ok := d.get(recorder.HopClientRecvBuffer); ok && g.memoryBound <= 0 && (res <= 0 || rb < res) {
			res = rb
		}
	}
	if len(ds) == 0 || g.skew >= res {
		g.status = tooSkewed
	}
	for _, d := range ds {
		if !d.writtenOK || d.upMissing() {
			g.status = unmeasured
		}
	}
	if g.status == judged {
		g.fail(*v, proxyWideHops)
	}
}
