package hops

import (
	"fmt"
	"math"
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
// holds (NGINX) lets through: its receive queue from the app, its temp
// files' size and its memory bound are seen only through
// what the proxy may hold (0 to its temp files and memory bound), which
// absorbs them unless they push it out of that range. They are tallied,
// not required.
var rangeOnly = map[string]bool{
	recorder.HopProxyUpstreamRecvQ + " zeroed": true, recorder.HopProxyUpstreamRecvQ + " doubled": true,
	recorder.HopProxyTempFileSize + " zeroed": true, recorder.HopProxyTempFileSize + " doubled": true,
	recorder.HopProxyMemoryBound + " zeroed": true,
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
	// over: samples where it shifts the hop by more than twice what the
	// sample's test allows (which the test holds within unmutated), where
	// the check must catch it; under: samples where it does not.
	over, under, caught int
	missed              []string
}

// allowance is half the width of what the test of a download's sample
// that sees a hop's corruption accepts: the unmutated sample may lie
// anywhere in it, so only a corruption past that width (twice the
// allowance) surely fails the test. A side of the path on its own (or the
// direct route) accepts its skew either way of 0. The whole path (tested
// where the proxy's socket to the client is not in the sample, or another
// hop is missing) accepts the download's Allowed (three times the skew
// and the slack) either way of what a proxy that reports nothing may
// hold, from nothing to its temp files and memory bound (Violation.High):
// a corruption within that range is absorbed (client_read doubled, 1 MiB
// more, while the temp files held 16 MiB was; no test can see it).
//
// What the proxy received from the app is tested against what the app
// wrote where both were measured at the sample (the app's side, with or
// without the rest of the path); elsewhere only the proxy's holding sees
// it, tested only with the proxy's socket to the client measured and no
// hop missing: within its memory and the headers' slack for a proxy that
// reports what it holds (a live run in a loaded fresh-clone suite had
// such a sample at 0.32 s, which the check rightly did not fail); from
// nothing to its temp files and memory bound for one that does not, and
// those temp files are every download's. A live run on a machine at load
// 15 had such a sample (the app's socket closed, the proxy's to it still
// open, unread bytes in it), at which what the proxy received doubled
// stayed within that range and was missed, the allowance then being its
// memory bound and slack (TestCheckUpstreamReceivedMutations has it).
func allowance(g *group, hop string) int64 {
	_, proxied := g.val[recorder.HopProxyUpstreamRecvQ]
	_, front := g.get(recorder.HopProxyClientWritten)
	whole := !front || len(g.v.Missing) > 0
	tol := g.skew + g.rangeSkew + HeaderSlack
	const unseen = math.MaxInt64 / 4 // no test sees it
	switch {
	case !proxied:
		return g.skew
	case hop != recorder.HopProxyUpstreamReceived && whole:
		return g.v.Allowed + g.v.High/2
	case hop != recorder.HopProxyUpstreamReceived, g.writtenSeen:
		return g.skew
	case whole, !g.bounded && g.proxyMemory <= 0:
		return unseen
	case g.bounded:
		return tol + g.v.High/2
	}
	return tol + g.proxyMemory
}

// spread is at most mutationSamples of at, spread over the run.
func spread(at []int) []int {
	if len(at) <= mutationSamples {
		return at
	}
	out := make([]int, mutationSamples)
	for k := range out {
		out[k] = at[k*len(at)/mutationSamples]
	}
	return out
}

// checkHopMutations: rows pass Check and it judges some of their samples;
// then each hopMutation, at each judged sample where the hop is measured
// and the mutation shifts it by more than twice what the sample's test
// allows, one sample at a time (at most mutationSamples of them), must
// fail Check with a violation naming the hop; client_recv_buffer zeroed
// must leave the sample unjudged. The corruptions only what a proxy may
// hold can absorb (rangeOnly) are tried and tallied, not required. want
// lists the hops the rows must let the check see: past twice the
// allowance at one judged sample at least.
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
		name := m.hop + " " + m.name
		var n mutationTally
		var at []int
		for i, h := range rows {
			g := status[groupKey{h.RunID, h.Download, h.TS}]
			if h.Hop != m.hop || !measured(h) || g.status != judged || m.bytes(h.Bytes) == h.Bytes {
				continue
			}
			if rangeOnly[name] || m.hop == recorder.HopClientRecvBuffer || abs(m.bytes(h.Bytes)-h.Bytes) > 2*allowance(g, m.hop) {
				n.over++
				at = append(at, i)
			} else {
				n.under++
			}
		}
		at = spread(at)
		for _, i := range at {
			h := rows[i]
			mut := slices.Clone(rows)
			mut[i].Bytes = m.bytes(h.Bytes)
			got := Check(mut)
			caught := names(got, m.hop)
			if m.hop == recorder.HopClientRecvBuffer {
				// Not knowing what the client's queue can hold, the check
				// cannot say what it resolves: the sample is not judged.
				caught = got.Judged < res.Judged && len(got.Violations) == 0
			}
			if caught {
				n.caught++
			} else {
				n.missed = append(n.missed, fmt.Sprintf("download %d at %.3f s", h.Download, h.TS))
				t.Logf("%s missed at download %d, %.3f s:\n%s", name, h.Download, h.TS, missDetail(rows, mut, i))
			}
		}
		t.Logf("%s: caught at %d of %d judged samples tried (%d past twice the allowance, %d not)", name, n.caught, len(at), n.over, n.under)
		if len(at) > 0 && !rangeOnly[name] {
			seen[m.hop] = true
			if len(n.missed) > 0 {
				t.Errorf("%s: missed at %d of %d samples past twice the allowance: %v", name, len(n.missed), len(at), n.missed)
			}
		}
	}
	for _, hop := range want {
		if !seen[hop] {
			t.Errorf("%s: no judged sample where its corruption must be seen: the rows do not let the check see it", hop)
		}
	}
}

// names says a violation in res names hop: among its hops, or in why a
// count fell.
func names(res Result, hop string) bool {
	return slices.ContainsFunc(res.Violations, func(v Violation) bool {
		return slices.Contains(v.Hops, hop) || strings.Contains(v.Reason, hop)
	})
}

// missDetail is what a missed mutation leaves to read in the test's log
// (a CI run keeps only its log): the sample's rows before and after the
// mutation, its group's allowances, and what Check said of the mutated
// sample.
func missDetail(rows, mut []recorder.Hop, i int) string {
	k := groupKey{rows[i].RunID, rows[i].Download, rows[i].TS}
	names := map[status]string{judged: "judged", tooSkewed: "too skewed", unmeasured: "unmeasured"}
	var b strings.Builder
	for _, g := range evaluate(rows) {
		if g.k == k {
			fmt.Fprintf(&b, "  unmutated: %s, skew %d, range skew %d, proxy memory %d, written seen %t, bounded %t\n",
				names[g.status], g.skew, g.rangeSkew, g.proxyMemory, g.writtenSeen, g.bounded)
		}
	}
	for _, g := range evaluate(mut) {
		if g.k == k {
			fmt.Fprintf(&b, "  mutated: %s, violations %v\n", names[g.status], g.vs)
		}
	}
	for j, h := range rows {
		if h.RunID == k.run && h.TS == k.ts && (h.Download == k.download || h.Download == recorder.HopProxyWide) {
			fmt.Fprintf(&b, "  %s %d (%s)", h.Hop, h.Bytes, h.Source)
			if mut[j].Bytes != h.Bytes {
				fmt.Fprintf(&b, " -> %d", mut[j].Bytes)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
