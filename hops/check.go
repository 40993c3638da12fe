package hops

import (
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

// Violation is a sample at which bytes were not conserved.
type Violation struct {
	RunID       string
	TS          float64
	Download    int
	AppWritten  int64
	Unaccounted int64
	// ClientReceived is what the client's socket had received (read or
	// queued): 0 before the response reached the client.
	ClientReceived int64
	Allowed        int64
	// Missing names the hops whose sockets were not in the sample.
	Missing []string
}

// Setup reports a violation in a sample taken before the response reached
// the client, with a hop's socket missing from the dump: the proxy's side
// of a connection still being set up (seen at the first millisecond of a
// run). Every other violation is bytes the hops cannot explain.
func (v Violation) Setup() bool { return v.ClientReceived == 0 && len(v.Missing) > 0 }

func (v Violation) String() string {
	s := fmt.Sprintf("%s download %d at %.3f s: %d of %d bytes written unaccounted (allowed %d)",
		v.RunID, v.Download, v.TS, v.Unaccounted, v.AppWritten, v.Allowed)
	if len(v.Missing) > 0 {
		s += "; missing from the sample: " + strings.Join(v.Missing, ", ")
	} else {
		s += "; every hop was sampled"
	}
	return s
}

// Check tests app_written = hops in transit + client_read at every sample
// of every download in rows (as Hops writes them, in order) and returns
// the samples where it does not hold.
func Check(rows []recorder.Hop) []Violation {
	var out []Violation
	var cur []recorder.Hop
	flush := func() {
		if len(cur) == 0 {
			return
		}
		v := Violation{RunID: cur[0].RunID, TS: cur[0].TS, Download: cur[0].Download}
		var skew int64
		for _, h := range cur {
			switch h.Hop {
			case recorder.HopAppWritten:
				v.AppWritten = h.Bytes
			case recorder.HopUnaccounted:
				v.Unaccounted = h.Bytes
			case recorder.HopSampleSkew:
				skew = h.Bytes
			case recorder.HopClientRead, recorder.HopClientRecvQueue:
				v.ClientReceived += h.Bytes
			}
			if h.Source == recorder.HopSourceMissing && h.Hop != recorder.HopUnaccounted && h.Hop != recorder.HopAppSendQueueNotSent &&
				!slices.Contains(v.Missing, h.Hop) {
				v.Missing = append(v.Missing, h.Hop)
			}
		}
		v.Allowed = max(int64(float64(v.AppWritten)*TolerancePct/100), ToleranceBytes) + skew
		if abs(v.Unaccounted) > v.Allowed {
			out = append(out, v)
		}
		cur = cur[:0]
	}
	for _, h := range rows {
		if len(cur) > 0 && (h.RunID != cur[0].RunID || h.Download != cur[0].Download || h.TS != cur[0].TS) {
			flush()
		}
		cur = append(cur, h)
	}
	flush()
	return out
}
