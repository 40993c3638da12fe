package slowclient

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// The p95 figure's caption says how many latencies each run's p95 ranks:
// its ok requests, not its scheduled ones (a failed or unsent request has
// no latency), so a run with 60 ok of 72 says 60.
func TestP95CaptionCountsRankedLatencies(t *testing.T) {
	run := func(id string, slow, ok int) recorder.Run {
		return recorder.Run{RunID: id, Route: "direct", Server: "sync-2", SlowClients: slow, Rep: 1, Status: recorder.RunOK,
			FastTotal: 72, FastPlanned: 72, FastSent: 70, FastOK: ok, P95MS: recorder.Some(10)}
	}
	for _, c := range []struct {
		oks  []int
		want string
	}{
		{[]int{60, 60}, "a run's 60 /fast latencies"},
		{[]int{60, 72}, "a run's 60 to 72 /fast latencies"},
		{[]int{72, 72}, "a run's 72 /fast latencies"},
	} {
		keys, groups := okRunsByCondition([]recorder.Run{run("a", 0, c.oks[0]), run("b", 1, c.oks[1])})
		f, why := p95Figure(keys, groups)
		if f == nil {
			t.Fatalf("no figure: %s", why)
		}
		if !strings.Contains(f.Caption(), c.want) {
			t.Errorf("ok %v: caption %q, want %q", c.oks, f.Caption(), c.want)
		}
	}
}
