package hops

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/recorder"
)

// HeaderSlack is what the conservation check allows beyond a sample's
// skew where a test spans a proxy, or app_written is derived from the
// download's total as the client received it: the sockets count the
// headers, and the proxy's, which it rewrote, differ from the app's by
// some tens of bytes (2 bytes, NGINX's shorter than Gunicorn's, failed a
// test allowing none).
const HeaderSlack = 1 << 10

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
	// Hops names the hops of the identity that did not hold: one side of
	// the path (the client's, the app's, what the proxy holds), the
	// client's receive queue against its buffer, or the whole path.
	Hops []string
}

// Setup reports a violation in a sample taken before the response reached
// the client, with a hop's socket missing from the dump: the proxy's side
// of a connection still being set up (seen at the first millisecond of a
// run). Every other violation is bytes the hops cannot explain.
func (v Violation) Setup() bool { return v.Reason == "" && v.ClientReceived == 0 && len(v.Missing) > 0 }

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
	if len(v.Hops) > 0 {
		s += " among " + strings.Join(v.Hops, ", ")
	}
	if len(v.Missing) > 0 {
		s += "; missing from the sample: " + strings.Join(v.Missing, ", ")
	} else {
		s += "; every hop was sampled"
	}
	return s
}

// Result is Check's verdict: the samples where a test did not hold, and
// how many samples (of a download, or the proxy's at one instant) were
// judged and how many were not, and why. A verdict on no judged sample
// is no verdict.
type Result struct {
	Violations []Violation
	Judged     int
	// Skewed samples moved more while they were taken than the smallest
	// hop their test must see can hold: a download's, its client's
	// receive queue (its receive buffer; not judged where the rows do
	// not say it); the proxy's own, its memory bound for the downloads it
	// relays. At such a sample
	// the check cannot see that hop, so it does not judge it.
	Skewed int
	// Unmeasured samples are those whose app_written is unknown (the
	// app's socket closed before it was seen, the download incomplete,
	// or it was skipped by the dump), those through a proxy whose socket
	// to the app is not in the sample (not yet there, or skipped), and
	// the direct route's after the app's socket closed: what the app
	// wrote is then derived from what the client received, nothing to
	// test it against.
	Unmeasured int
}

// Count adds g's status to r.
func (r *Result) count(g *group) {
	switch g.status {
	case judged:
		r.Judged++
	case tooSkewed:
		r.Skewed++
	case unmeasured:
		r.Unmeasured++
	}
}

// Err says why r is no pass: a violation not of a sample taken while a
// connection was set up (ignored: Violation.Setup), or no sample judged.
func (r Result) Err() error {
	for _, v := range r.Violations {
		if !v.Setup() {
			return fmt.Errorf("bytes not conserved at %d hop samples; the first: %s", len(r.Violations), v)
		}
	}
	if r.Judged == 0 {
		return fmt.Errorf("no hop sample judged (%d skewed, %d unmeasured)", r.Skewed, r.Unmeasured)
	}
	return nil
}

func (r Result) String() string {
	return fmt.Sprintf("%d hop samples judged, %d not (skewed beyond what they must resolve), %d unmeasured (what the app wrote not measured), %d violations",
		r.Judged, r.Skewed, r.Unmeasured, len(r.Violations))
}

// Check tests the conservation of bytes at every sample of every download
// in rows (as Hops writes them, in any order), from the measured hops
// only: it recomputes what is unaccounted and does not read the
// unaccounted rows. A sample is judged when its skew is below the
// client's receive buffer (the most the smallest hop holds); where the
// rows have each side of the path (the proxy's cumulative counts of its
// two sockets), each side is tested on its own within the sample's skew,
// and what the proxy holds against what it reports or, where that is not
// measured (NGINX), what its temp files (measured from the files,
// HopProxyWide rows) and its configured memory bound allow, per download
// and, over every download the proxy relays at the sample, at least what
// its temp files hold unsent. Check also tests, at every sample, that
// client_read and app_written (as read from the app's socket) never fall
// from one sample of a download to the next.
func Check(rows []recorder.Hop) Result {
	gs := evaluate(rows)
	var r Result
	for _, g := range gs {
		r.count(g)
		r.Violations = append(r.Violations, g.vs...)
	}
	r.Violations = append(r.Violations, monotonic(gs)...)
	return r
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
	res  Result
}

// Result is what Add has judged so far, without the violations (Add
// returned them).
func (c *Checker) Result() Result { return c.res }

// Add checks one sample's rows and returns where they do not hold.
func (c *Checker) Add(rows []recorder.Hop) []Violation {
	if c.last == nil {
		c.last = map[groupKey]*group{}
	}
	var out []Violation
	for _, g := range evaluate(rows) {
		c.res.count(g)
		out = append(out, g.vs...)
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
