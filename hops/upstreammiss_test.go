package hops

import (
	"slices"
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// twoDownloads is a run of two 8 MiB downloads through a proxy that
// reports nothing (NGINX, its memory bound 80 KiB), its temp files
// measured, each spooling all it read but 32 KiB, sampled at 0.1, 0.2 and
// 0.3 s. mid changes the sample at 0.2 s, when the app has written every
// byte: it is given that sample's sockets and returns them.
func twoDownloads(mid func([]Socket) []Socket) (Path, []Download, []Sample) {
	const app, proxy, k = 8000, 8080, 1 << 10
	p := Path{AppPort: app, ProxyPort: proxy, ProxyMemory: 80 * k}
	var ds []Download
	for i := range 2 {
		ds = append(ds, Download{Client: i, Local: ap(uint16(40000 + 10*i)), PeerPort: uint16(40001 + 10*i), Total: 8192 * k})
	}
	// front is the proxy's socket to client i, which wrote sent (64 KiB
	// queued), and the client's, 8 KiB unread.
	front := func(i int, sent uint64) []Socket {
		c := ds[i].Local.Port()
		return []Socket{sock(proxy, c, 0, 64*k, sent-64*k, 100), sock(c, proxy, 8*k, 0, 100, sent-64*k)}
	}
	// back is the app's socket to the proxy for download i, which wrote
	// written (sq queued), and the proxy's to it, 64 KiB unread.
	back := func(i int, written uint64, sq uint32) []Socket {
		peer := ds[i].PeerPort
		return []Socket{sock(app, peer, 0, sq, written-uint64(sq), 100), sock(peer, app, 64*k, 0, 100, written-uint64(sq))}
	}
	at := func(ms int, socks []Socket, temp int64) Sample {
		return Sample{T: time.Duration(ms) * time.Millisecond, Sockets: socks, HasTemp: true, TempFile: temp}
	}
	var s1, s2, s3 []Socket
	for i := range 2 {
		s1 = append(append(s1, back(i, 4096*k, 256*k)...), front(i, 512*k)...)
		s2 = append(append(s2, back(i, 8192*k, 0)...), front(i, 1024*k)...)
		s3 = append(s3, front(i, 2048*k)...)
	}
	// The temp files hold what the proxy read but its receive queue and
	// 32 KiB in memory, each.
	spooled := func(read int64) int64 { return 2 * (read - 64*k - 32*k) }
	return p, ds, []Sample{at(100, s1, spooled(3840*k)), at(200, mid(s2), spooled(8192*k)), at(300, s3, spooled(8192*k))}
}

// without is socks less the socket from local to remote.
func without(socks []Socket, local, remote uint16) []Socket {
	return slices.DeleteFunc(socks, func(s Socket) bool { return s.Local.Port() == local && s.Remote.Port() == remote })
}

// The corruptions of what a proxy that reports nothing (NGINX) received
// from the app (proxy_upstream_received) and of the client's hops the
// check must catch (checkHopMutations) are those past twice what the test
// that sees them accepts, and Check catches them. Where the app's socket
// closed (it has sent all, the proxy still reading it: the sample a live
// run on a loaded machine once missed the doubled count at), only what the
// proxy may hold sees the count, from nothing to its temp files (every
// download's) and memory bound: doubled, it stays within them and is not
// caught; past twice that range's allowance it is. Where the dump skipped
// the proxy's socket to the client, the app's side (both its sockets in
// the sample) still sees the count within the sample's skew, and the
// client's hops are seen only through the whole path, within the range.
func TestCheckUpstreamReceivedMutations(t *testing.T) {
	for _, tc := range []struct {
		name string
		mid  func([]Socket) []Socket
		// writtenSeen: app_written of download 0 at 0.2 s is read from
		// the app's socket.
		writtenSeen bool
		// hop's doubling at download 0 at 0.2 s, within the range, is
		// not caught; a corruption past twice its allowance is.
		hop string
	}{
		{"the app's socket closed, the proxy still reading it", func(s []Socket) []Socket { return without(s, 8000, 40001) }, false,
			recorder.HopProxyUpstreamReceived},
		{"the proxy's socket to the client skipped by the dump", func(s []Socket) []Socket { return without(s, 8080, 40000) }, true,
			recorder.HopClientRead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ds, samples := twoDownloads(tc.mid)
			rows := Hops("r", p, ds, samples)
			g := groupAt(rows, 0, 0.2)
			if g == nil || g.status != judged || g.writtenSeen != tc.writtenSeen || !g.bounded || g.v.High == 0 {
				t.Fatalf("download 0 at 0.2 s: %+v, want judged, app_written seen %t, within what the proxy may hold", g, tc.writtenSeen)
			}
			checkHopMutations(t, rows, []string{recorder.HopProxyUpstreamReceived})
			i := slices.IndexFunc(rows, func(h recorder.Hop) bool { return h.Download == 0 && h.TS == 0.2 && h.Hop == tc.hop })
			a := allowance(g, tc.hop)
			for _, m := range []struct {
				name  string
				bytes int64
				catch bool
			}{{"doubled", 2 * rows[i].Bytes, false}, {"past twice the allowance", rows[i].Bytes + 2*a + 1, true}} {
				mut := slices.Clone(rows)
				mut[i].Bytes = m.bytes
				res := Check(mut)
				if names(res, tc.hop) != m.catch || (abs(m.bytes-rows[i].Bytes) > 2*a) != m.catch {
					t.Errorf("%s %s (%d, allowance %d): %v, want caught %t", tc.hop, m.name, m.bytes, a, res.Violations, m.catch)
				}
			}
		})
	}
}

// groupAt is download's sample at ts in rows, nil without one.
func groupAt(rows []recorder.Hop, download int, ts float64) *group {
	for _, g := range evaluate(rows) {
		if g.k.download == download && g.k.ts == ts {
			return g
		}
	}
	return nil
}
