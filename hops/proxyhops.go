package hops

import "github.com/slowlab/slowlab/recorder"

// proxyRows adds the proxy's own rows of one sample: its temp files'
// size (from the files), its memory bound (from its configuration), the
// sample's skew and the proxy's unaccounted bytes (set by account).
func (p Path) proxyRows(rows []recorder.Hop, runID string, smp Sample) []recorder.Hop {
	base := recorder.Hop{RunID: runID, TS: smp.T.Seconds(), Download: recorder.HopProxyWide}
	add := func(hop string, bytes int64, source string) {
		h := base
		h.Hop, h.Bytes, h.Source = hop, bytes, source
		rows = append(rows, h)
	}
	add(recorder.HopProxyTempFileSize, smp.TempFile, recorder.HopSourceFile)
	add(recorder.HopProxyMemoryBound, p.ProxyMemory, recorder.HopSourceConfig)
	add(recorder.HopSampleSkew, smp.Skew+smp.TempSkew, recorder.HopSourceCheck)
	add(recorder.HopUnaccounted, 0, recorder.HopSourceCheck)
	return rows
}

// proxyHops adds the proxy's hops: its receive queue from the app, its
// memory and temp file, its send queue to the client. upLater says its
// socket to the app is in a later sample: not in this one, it was
// skipped, not closed; so it was, too, while the proxy reports it has not
// read the whole body (it closes that socket once it has).
func (p Path) proxyHops(r *sampleRows, d Download, smp Sample, st *state, pb *ProxyBuffer, peer uint16, started bool, written int64, upLater bool) {
	up, upOK := find(smp.Sockets, peer, p.AppPort)
	upLater = upLater || pb != nil && d.Body > 0 && pb.UpstreamRead < d.Body
	acc, accOK := find(smp.Sockets, p.ProxyPort, d.Local.Port())
	switch {
	case upOK:
		r.socket(smp, up)
		r.put(recorder.HopProxyUpstreamRecvQ, int64(up.RecvQ), recorder.HopSourceKernel)
		r.add(recorder.HopProxyUpstreamReceived, int64(up.BytesReceived), recorder.HopSourceKernel)
		st.upRead, st.upSeen = int64(up.BytesReceived)-int64(up.RecvQ), true
	case upLater:
		r.put(recorder.HopProxyUpstreamRecvQ, 0, recorder.HopSourceMissing)
		r.add(recorder.HopProxyUpstreamReceived, 0, recorder.HopSourceMissing)
	case started || st.upSeen:
		// Closed: the proxy read it to the end, all the app wrote.
		st.upRead, st.upSeen = max(st.upRead, written), true
		r.put(recorder.HopProxyUpstreamRecvQ, 0, recorder.HopSourceDerived)
		r.add(recorder.HopProxyUpstreamReceived, st.upRead, recorder.HopSourceDerived)
	default:
		r.put(recorder.HopProxyUpstreamRecvQ, 0, recorder.HopSourceMissing)
		r.add(recorder.HopProxyUpstreamReceived, 0, recorder.HopSourceMissing)
	}
	switch {
	case accOK:
		r.socket(smp, acc)
		st.clientSent, st.clientSeen = int64(acc.BytesAcked)+int64(acc.SendQ), true
		r.add(recorder.HopProxyClientWritten, st.clientSent, recorder.HopSourceKernel)
	case st.clientSeen:
		r.add(recorder.HopProxyClientWritten, st.clientSent, recorder.HopSourceDerived)
	default:
		r.add(recorder.HopProxyClientWritten, 0, recorder.HopSourceMissing)
	}
	switch {
	case pb != nil:
		r.put(recorder.HopProxyMemory, pb.Memory, recorder.HopSourceProxy)
		r.put(recorder.HopProxyTempFile, pb.TempFile, recorder.HopSourceProxy)
	case p.ProxyReports && started:
		// Not in the report once the response started: it ended, the
		// proxy holds nothing of it.
		r.put(recorder.HopProxyMemory, 0, recorder.HopSourceProxy)
		r.put(recorder.HopProxyTempFile, 0, recorder.HopSourceProxy)
	case !p.ProxyReports && st.upSeen && (upOK || !upLater) && (accOK || st.clientSeen):
		// Not where the socket to the app was skipped: what the proxy
		// read is not known then.
		var held int64
		if accOK { // else its socket to the client closed: it sent everything
			held = max(st.upRead-st.clientSent, 0)
		}
		mem := min(held, p.ProxyMemory)
		r.put(recorder.HopProxyMemory, mem, recorder.HopSourceDerived)
		r.put(recorder.HopProxyTempFile, held-mem, recorder.HopSourceDerived)
	default:
		r.put(recorder.HopProxyMemory, 0, recorder.HopSourceMissing)
		r.put(recorder.HopProxyTempFile, 0, recorder.HopSourceMissing)
	}
	switch {
	case accOK:
		r.put(recorder.HopProxyClientSendQueue, int64(acc.SendQ), recorder.HopSourceKernel)
		client, ok := find(smp.Sockets, d.Local.Port(), p.ProxyPort)
		r.delivered(recorder.HopProxyClientSendQueueDelivered, acc, client, ok)
	case st.clientSeen:
		r.put(recorder.HopProxyClientSendQueue, 0, recorder.HopSourceDerived)
	default:
		r.put(recorder.HopProxyClientSendQueue, 0, recorder.HopSourceMissing)
	}
}
