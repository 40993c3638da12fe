package hops

import (
	"slices"

	"github.com/slowlab/slowlab/recorder"
)

// The hops of each identity the check tests, named in its violations.
var (
	// The client's side of the path: what its sender wrote, less what
	// its send queue holds undelivered, is what the client received.
	frontHops = []string{recorder.HopProxyClientWritten, recorder.HopProxyClientSendQueue,
		recorder.HopProxyClientSendQueueDelivered, recorder.HopClientRecvQueue, recorder.HopClientRead}
	directHops = []string{recorder.HopAppWritten, recorder.HopAppSendQueue,
		recorder.HopAppSendQueueDelivered, recorder.HopClientRecvQueue, recorder.HopClientRead}
	// The app's side through a proxy: what the app wrote, less its send
	// queue undelivered, is what the proxy's socket to it received.
	backHops = []string{recorder.HopAppWritten, recorder.HopAppSendQueue,
		recorder.HopAppSendQueueDelivered, recorder.HopProxyUpstreamReceived}
	// What the proxy holds: what it received from the app, less its
	// receive queue, less what it wrote to the client.
	holdHops = []string{recorder.HopProxyUpstreamReceived, recorder.HopProxyUpstreamRecvQ,
		recorder.HopProxyClientWritten, recorder.HopProxyMemory, recorder.HopProxyTempFile}
	// What a proxy that reports nothing holds, within its temp files and
	// memory bound.
	boundedHoldHops = append(slices.Clip(holdHops), recorder.HopProxyTempFileSize, recorder.HopProxyMemoryBound)
	// The client's receive queue holds at most its receive buffer.
	capacityHops = []string{recorder.HopClientRecvQueue, recorder.HopClientRecvBuffer}
	// Every hop, where the sample has not the rows of each side.
	wholeHops = []string{recorder.HopAppWritten, recorder.HopAppSendQueue, recorder.HopAppSendQueueDelivered,
		recorder.HopProxyUpstreamRecvQ, recorder.HopProxyMemory, recorder.HopProxyTempFile,
		recorder.HopProxyClientSendQueue, recorder.HopProxyClientSendQueueDelivered,
		recorder.HopClientRecvQueue, recorder.HopClientRead}
	// The proxy's own test over its downloads: its temp files and memory
	// bound against every hop of each.
	proxyWideHops = append([]string{recorder.HopProxyTempFileSize, recorder.HopProxyMemoryBound}, wholeHops...)
)

// judge decides whether a download's sample is judged, and tests it:
// each side of the path on its own where the rows have it (a hop is then
// seen within the sample's skew, whatever a proxy that reports nothing
// may hold), else the whole path (g.v, computed already). The app's side
// through a proxy needs only its two sockets: it is tested wherever both
// are in the sample, the whole path or not. A sample is
// judged when its skew is below the client's receive buffer, the most
// the smallest hop can hold: a larger skew could hide that hop whole.
// A sample whose app_written is unknown (the app's socket closed before
// it was seen, the download incomplete), or on the direct route derived
// from what the client received (the app's socket closed), is not judged:
// there is nothing to test the hops against; nor is one through a proxy
// without the proxy's socket to the app (not yet there, or skipped by the
// dump): what the app wrote is not measured to the proxy.
func (g *group) judge() {
	v := &g.v
	rb, ok := g.get(recorder.HopClientRecvBuffer)
	_, proxied := g.val[recorder.HopProxyUpstreamRecvQ]
	switch {
	case !ok || g.skew >= rb:
		g.status = tooSkewed
		return
	case !g.writtenOK || !proxied && !g.writtenSeen || g.upMissing():
		g.status = unmeasured
		return
	}
	if len(v.Missing) > 0 {
		g.fail(*v, wholeHops)
		g.appSide()
		return
	}
	if q, _ := g.get(recorder.HopClientRecvQueue); q > rb {
		g.fail(g.identity(q-rb, g.skew, 0, 0), capacityHops)
	}
	written, front := g.get(recorder.HopProxyClientWritten)
	if !proxied {
		g.fail(*v, directHops)
		return
	}
	if !front {
		g.fail(*v, wholeHops)
		g.appSide()
		return
	}
	// The client's side.
	sq, _ := g.get(recorder.HopProxyClientSendQueue)
	del, _ := g.get(recorder.HopProxyClientSendQueueDelivered)
	crq, _ := g.get(recorder.HopClientRecvQueue)
	g.fail(g.identity(written-sq+del-crq-g.read, g.skew, 0, 0), frontHops)
	g.appSide()
	// The proxy's holding: measured (a proxy that reports it), or within
	// what its temp files and memory bound allow (v.High, as for g.v).
	received, upKnown := g.known(recorder.HopProxyUpstreamReceived)
	if !upKnown {
		return
	}
	urq, _ := g.known(recorder.HopProxyUpstreamRecvQ)
	held := received - urq - written
	// The sockets count the headers: the app's upstream, the proxy's
	// (rewritten) to the client.
	tol := g.skew + g.rangeSkew + HeaderSlack
	if g.bounded {
		g.fail(g.identity(outside(held, 0, v.High), tol, 0, v.High), boundedHoldHops)
		return
	}
	// A proxy that reports what it holds counts what it wrote to the
	// client when the write returns: a write in flight has put part of
	// itself in the socket already, at most the proxy's memory for the
	// response. Without
	// its memory bound that is not known: the holding is not tested.
	if g.proxyMemory <= 0 {
		return
	}
	mem, _ := g.get(recorder.HopProxyMemory)
	temp, _ := g.get(recorder.HopProxyTempFile)
	g.fail(g.identity(held-mem-temp, tol+g.proxyMemory, 0, 0), holdHops)
}

// appSide tests the app's side of a proxied sample where both its
// sockets are in it: what the app wrote, less its send queue
// undelivered, is what the proxy's socket to it received. It needs no
// other hop: a sample without the proxy's socket to the client (skipped
// by the dump) or with another hop missing still tests it.
func (g *group) appSide() {
	received, upSeen := g.get(recorder.HopProxyUpstreamReceived)
	if !g.writtenSeen || !upSeen {
		return
	}
	asq, _ := g.get(recorder.HopAppSendQueue)
	adel, _ := g.get(recorder.HopAppSendQueueDelivered)
	g.fail(g.identity(g.v.AppWritten-asq+adel-received, g.skew, 0, 0), backHops)
}

// upMissing says the proxy's socket to the app is missing from the
// sample (its hops are, on a proxied route).
func (g *group) upMissing() bool {
	h, ok := g.val[recorder.HopProxyUpstreamRecvQ]
	return ok && h.source == recorder.HopSourceMissing
}

// identity is a test of the sample: unaccounted bytes, allowed ones, and
// the range [low, high] of a holding not measured.
func (g *group) identity(unaccounted, allowed, low, high int64) Violation {
	v := g.v
	v.Unaccounted, v.Allowed, v.Low, v.High, v.Missing = unaccounted, allowed, low, high, nil
	return v
}

// fail keeps v, naming hops, when it does not hold.
func (g *group) fail(v Violation, hops []string) {
	if v.Reason == "" && abs(v.Unaccounted) <= v.Allowed {
		return
	}
	v.Hops = hops
	g.vs = append(g.vs, v)
}
