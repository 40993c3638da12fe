package hops

import (
	"net/netip"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// Path is how a run's downloads went from the app to the client.
type Path struct {
	AppPort uint16
	// ProxyPort is the proxy's listening port; 0 on the direct route.
	ProxyPort uint16
	// ProxyMemory is the most memory the proxy buffers a response in by
	// its configuration (NGINX's proxy_buffer_size + proxy_buffers): the
	// bound Check puts on its memory. For a proxy that does not report its
	// buffers (NGINX), the split of what it holds into proxy_memory and
	// proxy_temp_file is derived from it (for the reader; Check leaves
	// derived hops out).
	ProxyMemory int64
	// ProxyReports says the samples have the proxy's own report.
	ProxyReports bool
}

// Download is one slow download to follow.
type Download struct {
	Client int
	// Local is the client socket's address.
	Local netip.AddrPort
	// PeerPort is the remote port of the app's socket: the port the app
	// reported the request came from; 0 when unknown (then a reporting
	// proxy's upstream address is used).
	PeerPort uint16
	// Total is what the app writes in all (header and body) when the
	// download completed, 0 when it did not or is unknown: what an app
	// whose socket closed wrote.
	Total int64
	// Body is the response body's bytes when the download completed, 0
	// when it did not or is unknown: a reporting proxy that has read less
	// of it from the app has its socket to the app open.
	Body int64
}

// state carries what was last seen of a download's sockets, for the
// samples after a socket closed.
type state struct {
	appWritten int64 // the app's bytes written, last seen
	appSeen    bool
	upRead     int64 // the proxy's bytes read from the app's socket, last seen
	upSeen     bool
	clientSent int64 // the proxy's bytes written to the client's socket, last seen
	clientSeen bool
}

// lastSeen is when a download's sockets to the app were last in a
// sample: a socket not in a sample although in a later one was skipped by
// the dump (a dump is not atomic while sockets come and go), not closed.
type lastSeen struct {
	app, up     time.Duration // the app's socket, the proxy's to it
	appOK, upOK bool          // seen at all
}

// later says whether a socket last seen at t, seen at all if ok, is in a
// sample after smp.
func later(t time.Duration, ok bool, smp Sample) bool { return ok && t > smp.T }

// Hops turns samples into hops.csv rows for each download, for the
// samples in which the download's client socket was open.
//
// A socket to the app (the app's, the proxy's to it) that is not in a
// sample but is in a later one of the run was skipped by the dump (which
// is not atomic while sockets come and go), and so was the proxy's to
// the app when the proxy reports it had read less than the body
// (Download.Body), and so, then, was the app's (its side cannot reach
// TIME_WAIT, the one state not dumped, before the proxy closes): their
// hops are missing (0, source missing, not counted), and so is anything
// derived from them.
// Otherwise a socket that is not in a sample although it was seen
// before, or (through a proxy) the response has started, has closed: its
// queues are empty (0, source derived), and what passed through it is
// derived: an app that closed its socket wrote the whole response when the
// download completed (Download.Total), else at least what was last seen or
// what the proxy read; a proxy's socket to the app that closed read all
// the app wrote. A socket not in a sample before the response started is
// missing (0, source missing, not counted), and so is anything derived
// from it.
//
// On a proxied route whose samples measured the proxy's temp files, each
// sample in which a download was followed gets the proxy's own rows
// (Download recorder.HopProxyWide): the temp files' size and the proxy's
// memory bound per response. Every unaccounted row is what Check
// computes from the measured hops.
func Hops(runID string, p Path, downloads []Download, samples []Sample) []recorder.Hop {
	// Samples in memory cannot fail to be read.
	a, _ := NewAttribution(runID, p, downloads, func(fn func(Sample) error) error {
		for _, smp := range samples {
			if err := fn(smp); err != nil {
				return err
			}
		}
		return nil
	})
	var rows []recorder.Hop
	for _, smp := range samples {
		rows = a.Rows(rows, smp)
	}
	return rows
}

// Attribution is Hops one sample at a time, in time order, so that a
// run's samples need not all be in memory: what it carries from one
// sample to the next is the last seen of each download's sockets, and
// from a first pass over the samples when each of its sockets to the app
// was last in one.
type Attribution struct {
	runID     string
	p         Path
	downloads []Download
	st        []state
	seen      []lastSeen
}

// NewAttribution follows downloads (those that connected) on p. samples
// hands each of the run's samples, in time order, to its argument,
// stopping at the first error (Spill.Each): a first pass that notes when
// each download's sockets to the app were last seen, to tell a socket the
// dump skipped from one that closed. Rows must then be given the same
// samples. Its error is samples'.
func NewAttribution(runID string, p Path, downloads []Download, samples func(func(Sample) error) error) (*Attribution, error) {
	var ds []Download
	for _, d := range downloads {
		if d.Local.IsValid() {
			ds = append(ds, d)
		}
	}
	a := &Attribution{runID: runID, p: p, downloads: ds, st: make([]state, len(ds)), seen: make([]lastSeen, len(ds))}
	err := samples(func(smp Sample) error {
		for i, d := range a.downloads {
			_, peer := p.upstream(d, smp)
			if _, ok := find(smp.Sockets, p.AppPort, peer); ok {
				a.seen[i].app, a.seen[i].appOK = smp.T, true
			}
			if _, ok := find(smp.Sockets, peer, p.AppPort); ok && p.ProxyPort != 0 {
				a.seen[i].up, a.seen[i].upOK = smp.T, true
			}
		}
		return nil
	})
	return a, err
}

// Rows appends smp's rows (each download's, then the proxy's) to rows,
// their unaccounted rows computed; samples must come in time order.
func (a *Attribution) Rows(rows []recorder.Hop, smp Sample) []recorder.Hop {
	n := len(rows)
	for i, d := range a.downloads {
		rows = a.p.sample(rows, a.runID, d, smp, &a.st[i], a.seen[i])
	}
	if len(rows) > n && a.p.ProxyPort != 0 && smp.HasTemp {
		rows = a.p.proxyRows(rows, a.runID, smp)
	}
	account(rows[n:])
	return rows
}

func find(socks []Socket, localPort, remotePort uint16) (Socket, bool) {
	if localPort == 0 || remotePort == 0 {
		return Socket{}, false
	}
	for _, s := range socks {
		if s.Local.Port() == localPort && s.Remote.Port() == remotePort && s.HasInfo {
			return s, true
		}
	}
	return Socket{}, false
}

// sampleRows builds one sample's rows and sums.
type sampleRows struct {
	rows    []recorder.Hop
	base    recorder.Hop
	missing []string
	// moved is the most any one of the download's own sockets moved
	// during the sample; unknown (the sample's whole skew stands) when a
	// socket's movement was not kept.
	moved   int64
	unmoved bool
}

// socket notes that so, found in smp, is one of the download's sockets.
func (r *sampleRows) socket(smp Sample, so Socket) {
	m, ok := smp.moved(so)
	r.moved = max(r.moved, m)
	r.unmoved = r.unmoved || !ok
}

func (r *sampleRows) add(hop string, bytes int64, source string) {
	h := r.base
	h.Hop, h.Bytes, h.Source = hop, bytes, source
	r.rows = append(r.rows, h)
}

// put adds a hop in transit, noting it when missing.
func (r *sampleRows) put(hop string, bytes int64, source string) {
	r.add(hop, bytes, source)
	if source == recorder.HopSourceMissing {
		r.missing = append(r.missing, hop)
	}
}

// upstream is the proxy's report on d in smp (nil without one) and the
// remote port of the app's socket of d: what the app reported, else the
// client's own port directly, else the proxy's upstream port it reports.
func (p Path) upstream(d Download, smp Sample) (*ProxyBuffer, uint16) {
	var pb *ProxyBuffer
	if p.ProxyReports {
		for i := range smp.Proxy {
			if smp.Proxy[i].Client.Port() == d.Local.Port() {
				pb = &smp.Proxy[i]
			}
		}
	}
	peer := d.PeerPort
	if peer == 0 && p.ProxyPort == 0 {
		peer = d.Local.Port()
	}
	if peer == 0 && pb != nil {
		peer = pb.UpstreamLocal.Port()
	}
	return pb, peer
}

func (p Path) sample(rows []recorder.Hop, runID string, d Download, smp Sample, st *state, seen lastSeen) []recorder.Hop {
	front := p.AppPort
	if p.ProxyPort != 0 {
		front = p.ProxyPort
	}
	client, ok := find(smp.Sockets, d.Local.Port(), front)
	if !ok {
		return rows
	}
	r := &sampleRows{rows: rows, base: recorder.Hop{RunID: runID, TS: smp.T.Seconds(), Download: d.Client}}
	r.socket(smp, client)
	pb, peer := p.upstream(d, smp)
	started := client.BytesReceived > 0

	// The app's socket.
	var written int64
	var writtenOK bool
	writtenSrc := recorder.HopSourceKernel
	app, appOK := find(smp.Sockets, p.AppPort, peer)
	switch {
	case appOK:
		r.socket(smp, app)
		written, writtenOK = int64(app.BytesAcked)+int64(app.SendQ), true
		st.appWritten, st.appSeen = written, true
		r.put(recorder.HopAppSendQueue, int64(app.SendQ), recorder.HopSourceKernel)
		r.add(recorder.HopAppSendQueueNotSent, int64(app.NotSent), recorder.HopSourceKernel)
	case later(seen.app, seen.appOK, smp) || pb != nil && d.Body > 0 && pb.UpstreamRead < d.Body:
		// Skipped by the dump: in a later sample, so not closed; or the
		// proxy has not read the whole body, so its socket to the app is
		// open and the app's (at most FIN_WAIT2, which is dumped) too.
		r.put(recorder.HopAppSendQueue, 0, recorder.HopSourceMissing)
		r.add(recorder.HopAppSendQueueNotSent, 0, recorder.HopSourceMissing)
	case st.appSeen || started && p.ProxyPort != 0:
		// Closed (seen before), or through a proxy that already sends the
		// response: an app released by a buffering proxy can close before
		// the first sample. Directly, an app socket not yet seen cannot have
		// closed (the client has read too little): it is missing.
		written, writtenOK, writtenSrc = max(st.appWritten, d.Total), true, recorder.HopSourceDerived
		if pb != nil {
			written = max(written, pb.UpstreamRead)
		}
		if p.ProxyPort == 0 {
			written = max(written, int64(client.BytesReceived))
		}
		// Never seen, and neither the whole response nor the proxy's
		// read known (a download that did not complete): not 0 but
		// unknown.
		writtenOK = written > 0
		r.put(recorder.HopAppSendQueue, 0, recorder.HopSourceDerived)
		r.add(recorder.HopAppSendQueueNotSent, 0, recorder.HopSourceDerived)
	default:
		r.put(recorder.HopAppSendQueue, 0, recorder.HopSourceMissing)
		r.add(recorder.HopAppSendQueueNotSent, 0, recorder.HopSourceMissing)
	}

	if p.ProxyPort != 0 {
		p.proxyHops(r, d, smp, st, pb, peer, started, written, later(seen.up, seen.upOK, smp))
	}
	if appOK {
		recv := client
		if p.ProxyPort != 0 {
			recv, ok = find(smp.Sockets, peer, p.AppPort)
		}
		r.delivered(recorder.HopAppSendQueueDelivered, app, recv, ok)
	}
	r.clientRows(client)
	if !writtenOK {
		writtenSrc = recorder.HopSourceMissing
	}
	r.add(recorder.HopAppWritten, written, writtenSrc)
	checkRows(r, smp, pb, writtenOK)
	return r.rows
}

// clientRows adds the client's hops: its receive queue, its receive
// buffer (when the dump has it) and what it has read.
func (r *sampleRows) clientRows(client Socket) {
	r.put(recorder.HopClientRecvQueue, int64(client.RecvQ), recorder.HopSourceKernel)
	if client.RcvBuf > 0 {
		r.add(recorder.HopClientRecvBuffer, int64(client.RcvBuf), recorder.HopSourceKernel)
	}
	r.add(recorder.HopClientRead, int64(client.BytesReceived)-int64(client.RecvQ), recorder.HopSourceKernel)
}

// checkRows adds a download's sample_skew (the most any one of its own
// sockets moved during the sample, with the proxy report's movement; the
// temp files' is the proxy's own sample_skew: two sockets of a dump are read at two instants, and
// what one of the pair moved in between is in its movement from the
// first dump to the second, read before both and after both) and its
// unaccounted row, whose bytes account sets from the measured hops.
func checkRows(r *sampleRows, smp Sample, pb *ProxyBuffer, writtenOK bool) {
	skew := smp.Skew
	if !r.unmoved {
		skew = r.moved
	}
	if pb != nil {
		skew += pb.Skew
	}
	r.add(recorder.HopSampleSkew, skew, recorder.HopSourceCheck)
	src := recorder.HopSourceCheck
	if len(r.missing) > 0 || !writtenOK {
		src = recorder.HopSourceMissing
	}
	r.add(recorder.HopUnaccounted, 0, src)
}

// delivered adds the part of sender's send queue the receiver already
// has: received beyond what the sender saw acknowledged. Check takes it
// off the bytes in transit, which would count it twice.
func (r *sampleRows) delivered(hop string, sender, receiver Socket, ok bool) {
	if !ok {
		return
	}
	n := min(max(int64(receiver.BytesReceived)-int64(sender.BytesAcked), 0), int64(sender.SendQ))
	r.add(hop, n, recorder.HopSourceKernel)
}
