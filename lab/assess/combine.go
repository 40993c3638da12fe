package assess

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/report"
)

// ClockTolerance bounds how far apart two shards' clocks, or a shard's
// start of a level and its slot, may be: a quarter of the second a level
// gives its clients to be in place before /fast begins.
const ClockTolerance = shardPlace / 4

// shardDir is one shard's results as Combine read them.
type shardDir struct {
	dir  string
	i, n int
	a    Assessment
}

// Combine checks the results directories of the N shards of one sharded
// assessment against each other, then gives shard 0's verdicts with each
// level judged over every shard: a level where a shard had fewer clients
// connected than its share, or where the app (seen, on a direct route)
// held fewer connections than the level's clients, is short; one a shard
// started late or found invalid is invalid. It refuses, naming what is
// wrong, a directory that is not a shard's, a shard missing or given
// twice, shards configured differently (the settings that differ) or out
// of step (their clocks, or a level started late by more than
// ClockTolerance), and a shard that did not run a level shard 0 ran.
// failOn is judged against the combined verdicts. The result's Dir is
// shard 0's directory.
func Combine(dirs []string, failOn string) (*Result, error) {
	shards, err := readShards(dirs)
	if err != nil {
		return nil, err
	}
	if err := checkSettings(shards); err != nil {
		return nil, err
	}
	if err := checkClocks(shards); err != nil {
		return nil, err
	}
	out := shards[0].a
	out.Verdicts = slices.Clone(out.Verdicts)
	probes := make([]Probe, len(out.Verdicts))
	for j := range out.Verdicts {
		if err := combineProbe(&out.Verdicts[j], j, shards); err != nil {
			return nil, err
		}
		probes[j] = Probe(out.Verdicts[j].Probe)
	}
	out.Shard, out.ShardRecord, out.CombinedShards = "", nil, len(shards)
	res := &Result{Assessment: out, Dir: shards[0].dir}
	max, _ := strconv.Atoi(shards[0].a.ShardRecord.Settings["max_clients"])
	if res.bounds, err = checkBounds(failOn, probes, max); err != nil {
		return nil, fmt.Errorf("%w: --fail-on: %w", ErrRefused, err)
	}
	return res, nil
}

// readShards reads every directory's assessment.json, in shard order,
// each shard of one N once.
func readShards(dirs []string) ([]shardDir, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: no shard directories", ErrRefused)
	}
	var shards []shardDir
	for _, d := range dirs {
		a, err := ReadAssessment(d)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		if a.Shard == "" || a.ShardRecord == nil {
			return nil, fmt.Errorf("%w: %s: not a shard's results (no shard or shard_record in %s: run with --shard I/N --start-at)", ErrRefused, d, File)
		}
		i, n, err := loadgen.ParseShard(a.Shard)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrRefused, d, err)
		}
		shards = append(shards, shardDir{dir: d, i: i, n: n, a: a})
	}
	n := shards[0].n
	out := make([]shardDir, n) // by shard; a read shard's Shard is not ""
	for _, s := range shards {
		switch {
		case s.n != n:
			return nil, fmt.Errorf("%w: %s is shard %d/%d, %s shard %d/%d: shards of different assessments", ErrRefused, s.dir, s.i, s.n, shards[0].dir, shards[0].i, n)
		case out[s.i].a.Shard != "":
			return nil, fmt.Errorf("%w: shard %d/%d given twice: %s and %s", ErrRefused, s.i, n, out[s.i].dir, s.dir)
		}
		out[s.i] = s
	}
	for i, s := range out {
		if s.a.Shard == "" {
			return nil, fmt.Errorf("%w: shard %d/%d missing: give every shard's results directory", ErrRefused, i, n)
		}
	}
	return out, nil
}

// checkSettings refuses shards whose settings differ from shard 0's, or
// whose settings do not hash to what they recorded.
func checkSettings(shards []shardDir) error {
	want := shards[0].a.ShardRecord.Settings
	for _, s := range shards {
		rec := s.a.ShardRecord
		if got := settingsHash(rec.Settings); got != rec.SettingsHash {
			return fmt.Errorf("%w: shard %d (%s): its settings hash to %s, not the %s it recorded: the record was altered", ErrRefused, s.i, s.dir, got[:12], short(rec.SettingsHash))
		}
		var diff []string
		all := map[string]string{}
		maps.Copy(all, want)
		maps.Copy(all, rec.Settings)
		for _, k := range slices.Sorted(maps.Keys(all)) {
			if rec.Settings[k] != want[k] {
				diff = append(diff, fmt.Sprintf("%s %q against shard 0's %q", k, rec.Settings[k], want[k]))
			}
		}
		if len(diff) > 0 {
			return fmt.Errorf("%w: shard %d (%s) was configured differently: %s", ErrRefused, s.i, s.dir, strings.Join(diff, ", "))
		}
	}
	return nil
}

// checkClocks refuses shards whose clocks, measured against the stack's,
// were further apart than ClockTolerance beyond their error.
func checkClocks(shards []shardDir) error {
	zero := shards[0].a.ShardRecord
	for _, s := range shards {
		rec := s.a.ShardRecord
		if rec.ClockOffsetMS == nil || rec.ClockErrorMS == nil {
			return fmt.Errorf("%w: shard %d (%s): its clock was not measured (%s): start every shard a few seconds before --start-at", ErrRefused, s.i, s.dir, rec.ClockNote)
		}
		d := *rec.ClockOffsetMS - *zero.ClockOffsetMS
		if math.Abs(d) > msf(ClockTolerance)+*rec.ClockErrorMS+*zero.ClockErrorMS {
			return fmt.Errorf("%w: shard %d (%s): its clock is %+.0f ms from shard 0's (±%.0f ms), over %s: the shards were out of step",
				ErrRefused, s.i, s.dir, d, *rec.ClockErrorMS+*zero.ClockErrorMS, ClockTolerance)
		}
	}
	return nil
}

// combineProbe judges probe j's levels over every shard and reads the
// verdict again.
func combineProbe(v *Verdict, j int, shards []shardDir) error {
	n := shards[0].n
	v.Levels = slices.Clone(v.Levels)
	for k := range v.Levels {
		lv := &v.Levels[k]
		for _, s := range shards {
			if j >= len(s.a.Verdicts) || s.a.Verdicts[j].Probe != v.Probe {
				return fmt.Errorf("%w: shard %d (%s) has no probe %s in the place shard 0 ran it", ErrRefused, s.i, s.dir, v.Probe)
			}
			o := s.a.Verdicts[j]
			if k >= len(o.Levels) || o.Levels[k].Clients != lv.Clients {
				return fmt.Errorf("%w: shard %d (%s) did not run probe %s's level of %s (it stopped: %s)", ErrRefused, s.i, s.dir, v.Probe, report.Count(lv.Clients, "client"), o.Stopped)
			}
			judgeShardLevel(lv, o.Levels[k], s.i, n)
		}
		judgeServer(lv, shards[0].a.Route)
		if lv.Status == statusShort || lv.Status == statusInvalid {
			lv.Degraded = ""
		}
		if lv.Status == statusShort {
			v.Levels = v.Levels[:k+1]
			v.Stopped = fmt.Sprintf("short: at the level of %s %s", report.Count(lv.Clients, "client"), lv.Invalid)
			break
		}
	}
	finish(v)
	if strings.HasPrefix(v.Stopped, "degraded") && v.ClientsToDegrade == nil {
		v.Stopped = "invalid: the level that degraded was invalid over the shards: " + v.Levels[len(v.Levels)-1].Invalid
	}
	return nil
}

// judgeShardLevel marks lv short or invalid for what shard i of n saw of
// it (o): fewer of its share connected, the level started late, invalid.
func judgeShardLevel(lv *Level, o Level, i, n int) {
	share := shareOf(lv.Clients, i, n)
	switch {
	case lv.Status == statusShort || lv.Status == statusInvalid:
	case o.ShardClients == nil || *o.ShardClients != share:
		lv.Status, lv.Invalid = statusInvalid, fmt.Sprintf("shard %d ran %v of its %s", i, o.ShardClients, report.Count(share, "client"))
	case o.Connected < share:
		lv.Status, lv.Invalid = statusShort, fmt.Sprintf("shard %d had %d of its %s connected", i, o.Connected, report.Count(share, "client"))
	case o.Status == statusInvalid:
		lv.Status, lv.Invalid = statusInvalid, fmt.Sprintf("shard %d: %s", i, o.Invalid)
	case o.LateMS > msf(ClockTolerance):
		lv.Status, lv.Invalid = statusInvalid, fmt.Sprintf("shard %d started it %.0f ms late", i, o.LateMS)
	}
}

// judgeServer marks lv short when the app, seen and in front of the
// clients (a direct route), held fewer connections than the level's
// clients: some shard's clients did not reach it.
func judgeServer(lv *Level, route string) {
	if lv.Status == statusShort || lv.Status == statusInvalid || lv.AppConns == nil || stack.Route(route).Proxied() {
		return
	}
	if *lv.AppConns < float64(lv.Clients) {
		lv.Status, lv.Invalid = statusShort, fmt.Sprintf("the app held %s of the level's %s", report.Count(int(*lv.AppConns), "connection"), report.Count(lv.Clients, "client"))
	}
}

func short(h string) string { return h[:min(12, len(h))] }
