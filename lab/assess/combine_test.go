package assess

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// shardFixture writes the results of shard i of n of an idle assessment
// up to 4 clients, shard 0 degrading at 2 (its levels 1 and 2), the
// others holding their share of 1, 2 and 4; edit changes the assessment
// before it is written.
func shardFixture(t *testing.T, root string, i, n int, edit func(*Assessment)) string {
	t.Helper()
	c := quick("sync-2", "direct", 4, ProbeIdle)
	c.ext = extFlags{fast: "http://127.0.0.1:8000/fast"}
	if err := c.ApplyExternal(); err != nil {
		t.Fatal(err)
	}
	c.Shard, c.StartAt = "0/"+itoa(n), "2026-12-05T10:00:00Z"
	settings := c.shardSettings()
	off, errMS := 0.4, 1.5
	a := Assessment{Stack: "external", Server: "sync-2", Route: "direct", Shard: itoa(i) + "/" + itoa(n), StartAt: c.StartAt,
		ShardRecord: &ShardRecord{Settings: settings, SettingsHash: settingsHash(settings), ClockOffsetMS: &off, ClockErrorMS: &errMS}}
	v := Verdict{Probe: string(ProbeIdle), MaxClients: 4}
	levels := []int{1, 2, 4}
	if i == 0 {
		levels = levels[:2]
	}
	for k, clients := range levels {
		share := shareOf(clients, i, n)
		lv := Level{Clients: clients, ShardClients: &share, Connected: share, Placed: true, StartS: float64(10 * (k + 1))}
		if i == 0 {
			conns := float64(clients + 1)
			lv.AppConns, lv.Status, lv.FastSent, lv.FastOK = &conns, statusHeld, 25, 25
			if clients == 2 {
				lv.Status, lv.Degraded, lv.FastOK, lv.FastFail = statusDegraded, "25 of 25 /fast requests failed", 0, 25
			}
		}
		v.Levels = append(v.Levels, lv)
		v.Tried = clients
	}
	if i == 0 {
		v.Stopped = "degraded: 25 of 25 /fast requests failed"
		finish(&v)
	} else {
		v.Stopped = "shard " + a.Shard + ": held its share of every level's clients"
	}
	a.Verdicts = []Verdict{v}
	if edit != nil {
		edit(&a)
	}
	dir := filepath.Join(root, "shard-"+itoa(i))
	if err := WriteAssessment(mkdir(t, dir), a); err != nil {
		t.Fatal(err)
	}
	return dir
}

func itoa(i int) string { return strconv.Itoa(i) }

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCombine: a matching pair of shards gives shard 0's verdict judged
// over both; each way a set of shards cannot prove it ran as one is
// refused by name, and each way a level was not what it claimed marks it.
func TestCombine(t *testing.T) {
	pair := func(edit0, edit1 func(*Assessment)) []string {
		root := t.TempDir()
		return []string{shardFixture(t, root, 1, 2, edit1), shardFixture(t, root, 0, 2, edit0)}
	}
	res, err := Combine(pair(nil, nil), "idle<2")
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verdicts[0]
	if v.ClientsToDegrade == nil || *v.ClientsToDegrade != 2 || v.HeldInPlace != 1 || res.CombinedShards != 2 || res.Shard != "" {
		t.Errorf("matching pair: threshold %v, held in place %d, %d shards, shard %q; want 2, 1, 2, none", v.ClientsToDegrade, v.HeldInPlace, res.CombinedShards, res.Shard)
	}
	if broken, unjudged := res.Judge(); len(broken)+len(unjudged) != 0 {
		t.Errorf("matching pair, idle<2: broken %v, not judged %v", broken, unjudged)
	}
	for _, tc := range []struct {
		name   string
		dirs   func() []string
		refuse string
	}{
		{"missing", func() []string { return pair(nil, nil)[1:] }, "shard 1/2 missing"},
		{"twice", func() []string { d := pair(nil, nil); return append(d, d[0]) }, "shard 1/2 given twice"},
		{"another max_clients", func() []string {
			return pair(nil, func(a *Assessment) {
				a.ShardRecord.Settings["max_clients"] = "8"
				a.ShardRecord.SettingsHash = settingsHash(a.ShardRecord.Settings)
			})
		}, `configured differently: max_clients "8" against shard 0's "4"`},
		{"altered record", func() []string {
			return pair(nil, func(a *Assessment) { a.ShardRecord.Settings["window"] = "9s" })
		}, "the record was altered"},
		{"clock out of step", func() []string {
			return pair(nil, func(a *Assessment) { off := 900.0; a.ShardRecord.ClockOffsetMS = &off })
		}, "its clock is +900 ms from shard 0's"},
		{"clock not measured", func() []string {
			return pair(nil, func(a *Assessment) {
				a.ShardRecord.ClockOffsetMS, a.ShardRecord.ClockNote = nil, "no Date header"
			})
		}, "its clock was not measured (no Date header)"},
		{"a level not run", func() []string {
			return pair(nil, func(a *Assessment) { a.Verdicts[0].Levels = a.Verdicts[0].Levels[:1] })
		}, "shard 1 (" /* dir */},
		{"not a shard", func() []string {
			return pair(func(a *Assessment) { a.Shard, a.ShardRecord = "", nil }, nil)
		}, "not a shard's results"},
	} {
		_, err := Combine(tc.dirs(), "")
		if err == nil || !strings.Contains(err.Error(), tc.refuse) {
			t.Errorf("%s: %v, want a refusal with %q", tc.name, err, tc.refuse)
		}
	}
	for _, tc := range []struct {
		name          string
		edit0, edit1  func(*Assessment)
		threshold     int
		held          int
		stopped, sure string
	}{
		{"shard 1 short at 2", nil, func(a *Assessment) { a.Verdicts[0].Levels[1].Connected = 0 }, 0, 1, "short: at the level of 2 clients shard 1 had 0 of its 1", "held"},
		{"the app saw fewer", func(a *Assessment) { one := 1.0; a.Verdicts[0].Levels[1].AppConns = &one }, nil, 0, 1, "short: at the level of 2 clients the app held 1 connection of the level's 2 clients", "held"},
		{"shard 1 late at 2", nil, func(a *Assessment) { a.Verdicts[0].Levels[1].LateMS = 600 }, 0, 1, "invalid: the level that degraded was invalid over the shards: shard 1 started it 600 ms late", "held"},
	} {
		res, err := Combine(pair(tc.edit0, tc.edit1), "idle<3")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		v := res.Verdicts[0]
		got := 0
		if v.ClientsToDegrade != nil {
			got = *v.ClientsToDegrade
		}
		if got != tc.threshold || v.HeldInPlace != tc.held || !strings.HasPrefix(v.Stopped, tc.stopped) || v.Sure != tc.sure {
			t.Errorf("%s: threshold %d, held in place %d, %s, %q; want %d, %d, %s, %q", tc.name, got, v.HeldInPlace, v.Sure, v.Stopped, tc.threshold, tc.held, tc.sure, tc.stopped)
		}
		if broken, unjudged := res.Judge(); len(broken)+len(unjudged) != 1 {
			t.Errorf("%s, idle<3: broken %v, not judged %v: want it failed", tc.name, broken, unjudged)
		}
	}
}
