package slowupload

import (
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

func TestValidScenario(t *testing.T) {
	cfg, err := lab.LoadScenario("../testdata/scenarios/valid-slowupload-quick.yml", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*Config)
	st, _, err := stack.Lookup(stack.NameEmbedded)
	if err != nil {
		t.Fatal(err)
	}
	runs, skipped := c.Runs(st)
	if len(runs) != 3 || len(skipped) != 0 || c.Upload.Size != 2<<20 || c.Upload.Rate != 1<<20 {
		t.Fatalf("scenario decoded to %+v, runs %v, skipped %v", c, runs, skipped)
	}
	// Fields left out keep the published values.
	if d := Published(); c.Fast != d.Fast || c.Upload.SndBuf != d.Upload.SndBuf || c.Upload.WriteSize != d.Upload.WriteSize {
		t.Errorf("defaults lost: %+v", c)
	}
	want := []string{"direct.sync-2.up2.rep1", "proxy-request-buffering-on.sync-2.up2.timeout30s.rep1", "direct.async.up1.rep1"}
	for i, r := range runs {
		if r.ID() != want[i] {
			t.Errorf("run %d: id %s, want %s", i, r.ID(), want[i])
		}
	}
	if d := c.Duration(2 << 20); d != time.Duration(c.Fast.Offset+c.Fast.Duration) {
		t.Errorf("duration %v: want the fast schedule's, longer than a 2 s upload", d)
	}
}

// The published matrix and --quick's both validate; --quick runs each
// route, gthread, async and the timeout condition once with smaller
// uploads, and keeps a size the user gave.
func TestPublishedAndQuick(t *testing.T) {
	p := Published()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	q := Published()
	q.Reduce()
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(q.Conditions) != 6 || q.Upload.Size != 8<<20 || q.Conditions[5] != timeoutCondition() {
		t.Errorf("quick: %+v", q)
	}
	own := Published()
	own.Upload.Size = 4 << 20
	own.Reduce()
	if own.Upload.Size != 4<<20 {
		t.Errorf("--quick replaced the size given: %d", own.Upload.Size)
	}
	// The timeout condition's upload outlives its timeout at the
	// published rate.
	tc := timeoutCondition()
	if up := time.Duration(float64(tc.Size) / float64(p.Upload.Rate) * float64(time.Second)); up <= time.Duration(tc.AppTimeout) {
		t.Errorf("timeout condition: a %v upload does not outlive its %v timeout", up, time.Duration(tc.AppTimeout))
	}
}
