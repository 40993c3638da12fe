package assess

import (
	"fmt"
	"strings"
	"testing"
)

// levelsOf builds the windows of a verdict from "1h 1h 2d": a count of
// clients and the first letter of each window's status.
func levelsOf(t *testing.T, s string) []Level {
	t.Helper()
	var out []Level
	for _, w := range strings.Fields(s) {
		var n int
		var st byte
		if _, err := fmt.Sscanf(w, "%d%c", &n, &st); err != nil {
			t.Fatalf("window %q: %v", w, err)
		}
		status := map[byte]string{'h': statusHeld, 'd': statusDegraded, 'i': statusInvalid, 's': statusShort}[st]
		out = append(out, Level{Clients: n, Status: status, FastSent: 25, FastOK: 25})
	}
	return out
}

// TestFinishSureRules: the verdict read from the windows, each rule of
// finish on windows that tell it from its neighbours: a tie at a level
// counts as degraded, a tie above the threshold is not "unstable", one
// dissenting window below it makes "majority", a single degraded window
// "once", a gap between the levels "between".
func TestFinishSureRules(t *testing.T) {
	for _, tc := range []struct {
		levels      string
		threshold   int // 0: none
		heldInPlace int
		sure        string
		windows     int
	}{
		{"1h 1h 2d 2d", 2, 1, "confirmed", 4},
		// A tie at 2 (one window each way) degrades: the threshold is 2.
		{"1h 1h 2h 2d", 2, 1, "once", 4},
		// A tie above the threshold does not overturn it.
		{"1h 1h 2d 2d 3h 3d", 2, 1, "confirmed", 4},
		// A level above the threshold that held by majority does.
		{"1h 1h 2d 2d 3h 3h 3d", 2, 1, "unstable", 4},
		// One window at 1 degraded, outvoted: 1 held, but not unanimously.
		{"1h 1h 1d 2d 2d", 2, 1, "majority", 5},
		// One degraded window at the threshold: not confirmed.
		{"1h 1h 2d", 2, 1, "once", 3},
		// Held at 2, degraded at 4, nothing at 3 between them.
		{"1h 2h 4d 4d", 4, 2, "between", 2},
		{"1h 2h 4h", 0, 4, "held", 1},
		// Invalid and short windows are no votes.
		{"1h 1i 1h 2i 2d 2d", 2, 1, "confirmed", 4},
	} {
		v := Verdict{Levels: levelsOf(t, tc.levels)}
		finish(&v)
		got := 0
		if v.ClientsToDegrade != nil {
			got = *v.ClientsToDegrade
		}
		if got != tc.threshold || v.HeldInPlace != tc.heldInPlace || v.Sure != tc.sure || v.Windows != tc.windows {
			t.Errorf("%s: threshold %d, held in place %d, %s/%d; want %d, %d, %s/%d", tc.levels,
				got, v.HeldInPlace, v.Sure, v.Windows, tc.threshold, tc.heldInPlace, tc.sure, tc.windows)
		}
	}
}
