package hops

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// hopMutation corrupts one hop's bytes at one sample.
type hopMutation struct {
	hop, name string
	bytes     func(int64) int64
}

// mutationSamples is how many judged samples each mutation is tried at,
// at most, spread over the run.
const mutationSamples = 60

// rangeOnly are the corruptions a proxy that does not report what it
// holds (NGINX) lets through: its receive queue from the app, and its
// temp files' size doubled or memory bound zeroed, are seen only through
// what the proxy may hold (0 to its temp files and memory bound), which
// absorbs them unless they push it out of that range. They are tallied,
// not required.
var rangeOnly = map[string]bool{
	recorder.HopProxyUpstreamRecvQ + " zeroed": true, recorder.HopProxyUpstreamRecvQ + " doubled": true,
	recorder.HopProxyTempFileSize + " doubled": true, recorder.HopProxyMemoryBound + " zeroed": true,
}

// hopMutations are the corruptions each hop the check claims to see must
// fail it with: zeroed and doubled (a bound only zeroed: doubling it
// loosens what it bounds, nothing to catch), the client's receive queue
// emptied and 256 KiB taken off client_read.
func hopMutations() []hopMutation {
	zero := func(int64) int64 { return 0 }
	double := func(b int64) int64 { return 2 * b }
	var out []hopMutation
	for _, hop := range []string{recorder.HopAppWritten, recorder.HopAppSendQueue, recorder.HopAppSendQueueDelivered,
		recorder.HopProxyUpstreamRecvQ, recorder.HopProxyUpstreamReceived, recorder.HopProxyMemory, recorder.HopProxyTempFile,
		recorder.HopProxyClientWritten, recorder.HopProxyClientSendQueue, recorder.HopProxyClientSendQueueDelivered,
		recorder.HopClientRecvQueue, recorder.HopClientRead, recorder.HopProxyTempFileSize} {
		out = append(out, hopMutation{hop, "zeroed", zero}, hopMutation{hop, "doubled", double})
	}
	return append(out,
		hopMutation{recorder.HopClientRead, "less 256 KiB", func(b int64) int64 { return b - 256<<10 }},
		hopMutation{recorder.HopClientRecvBuffer, "zeroed", zero},
		hopMutation{recorder.HopProxyMemoryBound, "zeroed", zero})
}

// measured says the row is a measurement the check reads (or, for the
// proxy's memory bound, the bound it applies), not derived or missing.
func measured(h recorder.Hop) bool {
	switch h.Source {
	case recorder.HopSourceKernel, recorder.HopSourceProxy, recorder.HopSourceFile, recorder.HopSourceConfig:
		return true
	}
	return false
}

// mutationTally is how one mutation fared over the judged samples it
// could be applied to (the hop measured there, the mutation changing it).
type mutationTally struct {
	tried, caught int
	// exact: samples whose client's side alone it shifts by more than
	// twice the sample's skew, where the check must catch it (the side
	// holds within the skew unmutated); missed: of those, not caught.
	exact, missed []string
}

// checkHopMutations: rows pass Check and it judges some of their samples;
// then each hopMutation, at each judged sample where the hop is measured,
// one at a time, must fail Check with a violation naming the hop at one
// sample at least, and where it shifts the client's side by more than
// twice the sample's skew (client_recv_queue, client_read), at every such
// sample. want lists the hops the rows must let the check see.
func checkHopMutations(t *testing.T, rows []recorder.Hop, want []string) {
	t.Helper()
	res := Check(rows)
	if err := res.Err(); err != nil {
		t.Fatalf("unmutated: %v", err)
	}
	t.Logf("unmutated: %s", res)
	status := map[groupKey]*group{}
	for _, g := range evaluate(rows) {
		status[g.k] = g
	}
	seen := map[string]bool{}
	for _, m := range hopMutations() {
		var at []int
		for i, h := range rows {
			g := status[groupKey{h.RunID, h.Download, h.TS}]
			if h.Hop == m.hop && measured(h) && g.status == judged && m.bytes(h.Bytes) != h.Bytes {
				at = append(at, i)
			}
		}
		// At most mutationSamples of them, spread over the run.
		if len(at) > mutationSamples {
			spread := make([]int, mutationSamples)
			for k := range spread {
				spread[k] = at[k*len(at)/mutationSamples]
			}
			at = spread
		}
		var n mutationTally
		for _, i := range at {
			h, g := rows[i], status[groupKey{rows[i].RunID, rows[i].Download, rows[i].TS}]
			n.tried++
			mut := slices.Clone(rows)
			mut[i].Bytes = m.bytes(h.Bytes)
			got := Check(mut)
			caught := slices.ContainsFunc(got.Violations, func(v Violation) bool {
				return slices.Contains(v.Hops, m.hop) || strings.Contains(v.Reason, m.hop)
			})
			if m.hop == recorder.HopClientRecvBuffer {
				// Not knowing what the client's queue can hold, the check
				// cannot say what it resolves: the sample is not judged.
				caught = got.Judged < res.Judged && len(got.Violations) == 0
			}
			if caught {
				n.caught++
			}
			if shift := abs(mut[i].Bytes - h.Bytes); (m.hop == recorder.HopClientRecvQueue || m.hop == recorder.HopClientRead) && shift > 2*g.skew {
				at := fmt.Sprintf("download %d at %.3f s (%d bytes, skew %d)", h.Download, h.TS, shift, g.skew)
				n.exact = append(n.exact, at)
				if !caught {
					n.missed = append(n.missed, at)
				}
			}
		}
		t.Logf("%s %s: caught at %d of %d judged samples; %d of %d past twice the skew missed", m.hop, m.name, n.caught, n.tried, len(n.missed), len(n.exact))
		if n.tried > 0 {
			seen[m.hop] = true
		}
		if n.tried > 0 && n.caught == 0 && !rangeOnly[m.hop+" "+m.name] {
			t.Errorf("%s %s: never caught at the %d judged samples where it holds bytes", m.hop, m.name, n.tried)
		}
		if len(n.missed) > 0 {
			t.Errorf("%s %s: missed at %d samples where it moves the client's side past twice the skew: %v", m.hop, m.name, len(n.missed), n.missed)
		}
	}
	for _, hop := range want {
		if !seen[hop] {
			t.Errorf("%s: no judged sample measures it: the rows do not let the check see it", hop)
		}
	}
}
