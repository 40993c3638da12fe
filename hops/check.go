package hops

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/recorder"
)

// Tolerance of the conservation check: a sample holds when its unaccounted
// bytes are within TolerancePct of app_written or ToleranceBytes,
// whichever is larger, plus the sample's skew.
const (
	TolerancePct   = 5.0
	ToleranceBytes = 256 << 10
)

// Violation is a sample at which bytes were not conserved, or at which a
// cumulative count fell since the sample before (Reason says so).
type Violation struct {
	RunID string
	TS    float64
	// Download is the slow client's number, recorder.HopProxyWide for the
	// proxy's own check over every download it relays at TS.
	Download    int
	AppWritten  int64
	Unaccounted int64
	// ClientReceived is what the client's socket had received (read or
	// queued): 0 before the response reached the client.
	ClientReceived int64
	Allowed        int64
	// Low and High bound what the hops in the check leave to the proxy
	// where what it holds is not measured (NGINX): at least what its temp
	// files hold unsent, at most its temp files and its memory bound. Both
	// 0 where every hop is measured.
	Low, High int64
	// Missing names the hops whose sockets were not in the sample.
	Missing []string
	// Reason is set when a cumulative count fell: which one, from what.
	Reason string
}

// Setup reports a violation in a sample taken before the response reached
// the client, with a hop's socket missing from the dump: the proxy's side
// of a connection still being set up (seen at the first millisecond of a
// run). Every other violation is bytes the hops cannot explain.
func (v Violation) Setup() bool { return v.Reason == "" && v.ClientReceived == 0 && len(v.Missing) > 0 }

// Unchecked reports a violation in a sample whose app_written is unknown:
// the app's socket was never seen (it closed before the first sample)
// and the download did not complete, so what the app wrote is not known
// and there is nothing to conserve against.
func (v Violation) Unchecked() bool {
	return v.Reason == "" && slices.Contains(v.Missing, recorder.HopAppWritten)
}

func (v Violation) String() string {
	who := fmt.Sprintf("download %d", v.Download)
	if v.Download == recorder.HopProxyWide {
		who = "the proxy"
	}
	if v.Reason != "" {
		return fmt.Sprintf("%s %s at %.3f s: %s", v.RunID, who, v.TS, v.Reason)
	}
	s := fmt.Sprintf("%s %s at %.3f s: %d of %d bytes written unaccounted (allowed %d)",
		v.RunID, who, v.TS, v.Unaccounted, v.AppWritten, v.Allowed)
	if v.High > 0 {
		s += fmt.Sprintf(" beyond what the proxy can hold, %d to %d bytes (temp files, memory bound)", v.Low, v.High)
	}
	if len(v.Missing) > 0 {
		s += "; missing from the sample: " + strings.Join(v.Missing, ", ")
	} else {
		s += "; every hop was sampled"
	}
	return s
}

// Check tests the conservation of bytes at every sample of every download
// in rows (as Hops writes them, in any order), from the measured hops
// only: it recomputes what is unaccounted and does not read the
// unaccounted rows. A derived hop (NGINX's memory and temp file split)
// stays out; where the proxy's holding is not measured, it must lie
// within what the proxy's temp files (measured from the files, HopProxyWide
// rows) and its configured memory bound allow, per download and, over
// every download the proxy relays at the sample, at least what its temp
// files hold unsent. Check also tests that client_read and app_written
// (as read from the app's socket) never fall from one sample of a
// download to the next. It returns the
// samples where a test does not hold.
func Check(rows []recorder.Hop) []Violation {
	gs := evaluate(rows)
	var out []Violation
	for _, g := range gs {
		if g.v.Reason != "" || abs(g.v.Unaccounted) > g.v.Allowed {
			out = append(out, g.v)
		}
	}
	return append(out, monotonic(gs)...)
}

// account sets every unaccounted row of rows to what Check computes.
func account(rows []recorder.Hop) {
	for _, g := range evaluate(rows) {
		for _, i := range g.rows {
			if rows[i].Hop == recorder.HopUnaccounted {
				rows[i].Bytes = g.v.Unaccounted
			}
		}
	}
}

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

func allowed(written, skew int64) int64 {
	return max(int64(float64(written)*TolerancePct/100), ToleranceBytes) + skew
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
		}
	}
	v.Unaccounted = outside(held, 0, v.High)
	v.Allowed = allowed(v.AppWritten, g.skew)
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
	v.Allowed = allowed(v.AppWritten, g.skew)
}

// WrittenJitter is how far app_written, read from the app's socket, may
// fall between two samples although nothing went back: the kernel fills
// its send queue (write_seq - snd_una) and TCP_INFO's bytes_acked (snd_una)
// one after the other, so an ACK processed in between counts what it
// acknowledged twice in that sample (a fall of 8 KiB was seen on loopback);
// one ACK on loopback covers at most a few 64 KiB segments.
const WrittenJitter = 128 << 10

// ReadJitter is how far client_read may fall between two samples although
// the client took nothing back: it is TCP_INFO's bytes_received less the
// receive queue (rcv_nxt - copied_seq), which the kernel reads one after
// the other, so a segment that arrives in between counts in one and not
// the other (a fall of 8,023 bytes was seen on loopback on a loaded
// machine); one loopback segment is at most 64 KiB.
const ReadJitter = 64 << 10

// monotonic returns a violation for each sample of a download at which
// client_read, or app_written read from the app's socket, is less than at
// the sample before (client_read: by more than ReadJitter; app_written: by
// more than the samples' skew or WrittenJitter): cumulative counts never fall, so a sample out of its
// time order does not hold. (A derived app_written, the whole response
// once the app's socket closed, is no count of the kernel's.)
func monotonic(gs []*group) []Violation {
	byDownload := map[groupKey][]*group{}
	for _, g := range gs {
		if g.k.download != recorder.HopProxyWide {
			k := groupKey{run: g.k.run, download: g.k.download}
			byDownload[k] = append(byDownload[k], g)
		}
	}
	var out []Violation
	for _, s := range byDownload {
		slices.SortStableFunc(s, func(a, b *group) int { return cmp.Compare(a.k.ts, b.k.ts) })
		for i := 1; i < len(s); i++ {
			if v, ok := fell(s[i-1], s[i]); ok {
				out = append(out, v)
			}
		}
	}
	slices.SortFunc(out, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.Download, b.Download), cmp.Compare(a.TS, b.TS))
	})
	return out
}

// fell is the violation of cur, the sample of a download after prev, when
// a cumulative count fell between them.
func fell(prev, cur *group) (Violation, bool) {
	reason := ""
	switch {
	case cur.read < prev.read-ReadJitter:
		reason = fmt.Sprintf("client_read fell from %d (at %.3f s) to %d", prev.read, prev.k.ts, cur.read)
	case prev.writtenSeen && cur.writtenSeen && cur.v.AppWritten < prev.v.AppWritten-max(prev.skew, cur.skew, WrittenJitter):
		reason = fmt.Sprintf("app_written fell from %d (at %.3f s) to %d", prev.v.AppWritten, prev.k.ts, cur.v.AppWritten)
	}
	if reason == "" {
		return Violation{}, false
	}
	v := cur.v
	v.Reason, v.Missing = reason, nil
	return v, true
}

// Checker is Check one sample at a time, in time order (the rows
// Attribution.Rows gives for each), so that a run's rows need not all be
// in memory: it keeps each download's last sample for the counts that
// must not fall.
type Checker struct {
	last map[groupKey]*group
}

// Add checks one sample's rows and returns where they do not hold.
func (c *Checker) Add(rows []recorder.Hop) []Violation {
	if c.last == nil {
		c.last = map[groupKey]*group{}
	}
	var out []Violation
	for _, g := range evaluate(rows) {
		if g.v.Reason != "" || abs(g.v.Unaccounted) > g.v.Allowed {
			out = append(out, g.v)
		}
		if g.k.download == recorder.HopProxyWide {
			continue
		}
		k := groupKey{run: g.k.run, download: g.k.download}
		if prev := c.last[k]; prev != nil {
			if v, ok := fell(prev, g); ok {
				out = append(out, v)
			}
		}
		g.rows = nil // rows are the caller's: keep the sums only
		c.last[k] = g
	}
	return out
}
