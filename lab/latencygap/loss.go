package latencygap

import (
	"context"
	"fmt"
	"math"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/recorder"
)

// pathCounts are a condition's packets: the path's own count of what it
// dropped (netem.Loss) and its ends' count of what crossed it
// (netem.Transit), over the same interval.
type pathCounts struct {
	own     netem.Loss
	transit netem.Transit
}

func (c pathCounts) sub(before pathCounts) pathCounts {
	return pathCounts{own: c.own.Sub(before.own), transit: c.transit.Sub(before.transit)}
}

// randomLoss is what the ends measured of the random loss: the packets
// sent that did not arrive, of those sent, both without the ones the path
// dropped because its queue was full (a rate limit's, not the asked
// loss).
func (c pathCounts) randomLoss() (lost, of int64) {
	return c.transit.Lost() - c.own.Overflow, c.transit.Sent - c.own.Overflow
}

// readCounts waits until the path carries nothing (netem.Path.Settle) and
// reads both counts, so that no packet is between the ends at either end
// of the interval.
func readCounts(ctx context.Context, path *netem.Path) (pathCounts, error) {
	t, err := path.Settle(ctx)
	if err != nil {
		return pathCounts{}, err
	}
	own, err := path.Counts()
	return pathCounts{own: own, transit: t}, err
}

// lossAlpha is the chance, at most, that a path dropping each packet at
// random with the asked probability loses a share of its packets that
// lossAgrees refuses, on each side: a grid of 500 conditions measured 3
// times over refuses a faithful path with a chance under 0.3%.
const lossAlpha = 1e-6

// lossAgrees reports whether losing lost of n packets agrees with dropping
// each one at random with probability askedPct percent, by the Chernoff
// bound of the binomial: a share x of n packets, against p, has a
// probability of at most exp(-n D(x||p)) (D the Kullback-Leibler
// divergence of Bernoulli x from Bernoulli p) on its side of p, so it
// agrees while n D(x||p) <= ln(1/lossAlpha). The tolerance shrinks with
// the packets counted: 1% of 5,000 packets agrees from 0.36% to 1.8%, of
// 50,000 from 0.78% to 1.24%; with no loss asked no packet may be lost.
func lossAgrees(askedPct float64, lost, n int64) bool {
	if n <= 0 {
		return lost == 0
	}
	if lost < 0 || lost > n {
		return false
	}
	return float64(n)*bernoulliKL(float64(lost)/float64(n), askedPct/100) <= math.Log(1/lossAlpha)
}

// lossBounds are the loss percentages of n packets that lossAgrees
// accepts for askedPct, found by bisection (D is monotone on each side of
// p).
func lossBounds(askedPct float64, n int64) (lo, hi float64) {
	if n <= 0 {
		return 0, 0
	}
	p, limit := askedPct/100, math.Log(1/lossAlpha)/float64(n)
	edge := func(in, out float64) float64 { // in agrees, out does not
		for range 60 {
			mid := (in + out) / 2
			if bernoulliKL(mid, p) <= limit {
				in = mid
			} else {
				out = mid
			}
		}
		return in
	}
	lo, hi = 0, 1
	if bernoulliKL(0, p) > limit {
		lo = edge(p, 0)
	}
	if bernoulliKL(1, p) > limit {
		hi = edge(p, 1)
	}
	return 100 * lo, 100 * hi
}

// bernoulliKL is D(x||p) = x ln(x/p) + (1-x) ln((1-x)/(1-p)), with
// 0 ln 0 = 0; +Inf where x is impossible under p.
func bernoulliKL(x, p float64) float64 {
	term := func(a, b float64) float64 {
		if a == 0 {
			return 0
		}
		if b == 0 {
			return math.Inf(1)
		}
		return a * math.Log(a/b)
	}
	return term(x, p) + term(1-x, 1-p)
}

// setLoss fills a row's loss columns from the condition's counts and
// applies the loss rule: the random loss the ends measured must agree with
// the asked one (lossAgrees). Without counts (they could not be read) the
// row is not valid: nothing shows the path applied what was asked. The
// path's own count (path_packets, loss_applied_pct) is reported beside
// it, from paths that drop (not method none without loss).
func setLoss(p *Path, asked float64, method string, c *pathCounts) {
	if c == nil {
		p.Valid = false
		return
	}
	if method != string(netem.MethodNone) || asked > 0 {
		p.PathPackets = recorder.Some(float64(c.own.Packets))
		if c.own.Packets > 0 {
			p.LossAppliedPct = recorder.Some(c.own.Pct())
		}
		p.OverflowDrops = recorder.Some(float64(c.own.Overflow))
	}
	p.SentPackets, p.ReceivedPackets = recorder.Some(float64(c.transit.Sent)), recorder.Some(float64(c.transit.Received))
	lost, of := c.randomLoss()
	if of > 0 {
		p.LossMeasuredPct = recorder.Some(100 * float64(lost) / float64(of))
	}
	p.Valid = p.Valid && lossAgrees(asked, lost, of)
}

// lossWhy says why a row's loss did not agree with the asked one, "" if
// it did.
func lossWhy(p Path) string {
	if !p.SentPackets.Valid || !p.ReceivedPackets.Valid {
		return "the packets crossing the path could not be counted at its ends"
	}
	sent, recv, overflow := int64(p.SentPackets.Value), int64(p.ReceivedPackets.Value), int64(or0(p.OverflowDrops))
	lost, of := sent-recv-overflow, sent-overflow
	if lossAgrees(p.LossPct, lost, of) {
		return ""
	}
	lo, hi := lossBounds(p.LossPct, of)
	return fmt.Sprintf("its ends lost %d of %d packets (%s%%, not counting %d queue overflows), asked %g%%: %d packets agree with %.3g%% to %.3g%% (binomial, Chernoff bound at %g)",
		lost, of, lab.Num(recorder.Some(100*float64(lost)/float64(max(of, 0))), 2), overflow, p.LossPct, of, lo, hi, lossAlpha)
}
