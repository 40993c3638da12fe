package buffersweep

import (
	"cmp"
	"slices"

	"gonum.org/v1/plot/plotter"

	"github.com/slowlab/slowlab/recorder"
)

const mibScale = 1.0 / (1 << 20)

// hopStack is one download's hop samples, ready to stack.
type hopStack struct {
	ts      []float64  // sample times, ascending
	layers  []hopLayer // bottom to top: client_read, then the hops in transit from the client back to the app
	written plotter.XYs
	sources map[string]map[string]bool // sources seen per hop
	missing map[string]int             // samples in which a stacked hop's source was missing
}

// hopLayer is one stacked hop's bytes at each sample, in MiB.
type hopLayer struct {
	hop string
	mib []float64
}

// deliveredPart names the hop that is a part of a send queue's bytes the
// receiver already has: subtracted from the send queue, since the
// receiver's hop counts them too.
var deliveredPart = map[string]string{
	recorder.HopAppSendQueue:         recorder.HopAppSendQueueDelivered,
	recorder.HopProxyClientSendQueue: recorder.HopProxyClientSendQueueDelivered,
}

// stackHops arranges one download's rows (one run, one download) by
// sample. A hop without a row in a sample is 0 there; a stacked hop that
// has no row in any sample (the direct route's proxy hops) is left out.
func stackHops(rows []recorder.Hop) hopStack {
	st := hopStack{sources: map[string]map[string]bool{}, missing: map[string]int{}}
	type at struct {
		t   float64
		hop string
	}
	samples := map[at]int64{}
	for _, r := range rows {
		st.ts = append(st.ts, r.TS)
		samples[at{r.TS, r.Hop}] = r.Bytes
		if st.sources[r.Hop] == nil {
			st.sources[r.Hop] = map[string]bool{}
		}
		st.sources[r.Hop][r.Source] = true
		if r.Source == recorder.HopSourceMissing {
			st.missing[r.Hop]++
		}
		if r.Hop == recorder.HopAppWritten && r.Source != recorder.HopSourceMissing {
			st.written = append(st.written, plotter.XY{X: r.TS, Y: float64(r.Bytes) * mibScale})
		}
	}
	slices.Sort(st.ts)
	st.ts = slices.Compact(st.ts)
	slices.SortStableFunc(st.written, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	// Bottom to top: what the client has read, then the hops in transit
	// from the client back to the app, so the top of the stack is what the
	// app has written.
	order := append([]string{recorder.HopClientRead}, recorder.HopsInTransit...)
	slices.Reverse(order[1:])
	for _, hop := range order {
		if st.sources[hop] == nil {
			continue
		}
		l := hopLayer{hop: hop, mib: make([]float64, len(st.ts))}
		for i, t := range st.ts {
			b := samples[at{t, hop}]
			if part, ok := deliveredPart[hop]; ok {
				b = max(b-samples[at{t, part}], 0)
			}
			l.mib[i] = float64(b) * mibScale
		}
		st.layers = append(st.layers, l)
	}
	return st
}
