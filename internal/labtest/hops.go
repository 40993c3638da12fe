package labtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/hops"
	"github.com/slowlab/slowlab/recorder"
)

// CheckConserved fails t unless bytes are conserved at every hop sample
// of rows (hops.csv) that the check judges, and it judges one at least;
// samples taken while a connection was still being set up (a hop's socket
// not yet in the dump, nothing received yet) are logged, and so are how
// many samples were judged and how many were not (hops.Result). A violation is reported with the download's rows
// at that sample and the one before, so a failure seen once (on a loaded
// CI machine) can be read without rerunning it.
func CheckConserved(t testing.TB, what string, rows []recorder.Hop) {
	t.Helper()
	checkConserved(t, what, rows, true)
}

// CheckConservedWhereJudged is CheckConserved for a run whose samples
// may all be beyond what the check resolves (a load generator held to a
// small CPU share reads in bursts, moving its socket while a sample is
// taken): no judged sample is logged, not failed; a violation still
// fails.
func CheckConservedWhereJudged(t testing.TB, what string, rows []recorder.Hop) {
	t.Helper()
	checkConserved(t, what, rows, false)
}

func checkConserved(t testing.TB, what string, rows []recorder.Hop, needJudged bool) {
	t.Helper()
	res := hops.Check(rows)
	t.Logf("%s: %s", what, res)
	if res.Judged == 0 && needJudged {
		t.Errorf("%s: no hop sample judged: %s", what, res)
	}
	for _, v := range res.Violations {
		if v.Setup() {
			t.Logf("%s: during setup: %s", what, v)
			continue
		}
		t.Errorf("%s: not conserved: %s\n%s", what, v, around(rows, v))
	}
}

// around is the rows of v's download (all downloads for a proxy-wide
// violation) at v's sample and the sample before it, one per line.
func around(rows []recorder.Hop, v hops.Violation) string {
	var prev float64 = -1
	for _, h := range rows {
		if h.RunID == v.RunID && h.Download == v.Download && h.TS < v.TS && h.TS > prev {
			prev = h.TS
		}
	}
	var b strings.Builder
	for _, h := range rows {
		if h.RunID == v.RunID && (h.Download == v.Download || v.Download == recorder.HopProxyWide) && (h.TS == v.TS || h.TS == prev) {
			fmt.Fprintf(&b, "    %.3f s %3d %-40s %12d %s\n", h.TS, h.Download, h.Hop, h.Bytes, h.Source)
		}
	}
	return b.String()
}
