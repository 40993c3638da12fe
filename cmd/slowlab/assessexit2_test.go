package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab/assess"
)

// oneShard writes the results directory of shard 0/1 of an assessment up
// to 4 clients whose probes each ran the levels given, "held" or
// "degraded" at 1, 2, 4 clients in turn, and stopped as stopped says.
func oneShard(t *testing.T, probes map[string][]string, stopped map[string]string) string {
	t.Helper()
	settings := map[string]string{"shards": "1", "max_clients": "4", "probes": strings.Join(slices.Sorted(maps.Keys(probes)), ",")}
	var b strings.Builder // the hash --combine checks: "name=value" lines in name order
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(&b, "%s=%s\n", k, settings[k])
	}
	sum := sha256.Sum256([]byte(b.String()))
	off, errMS := 0.0, 1.0
	a := assess.Assessment{Stack: "external", Server: "sync-2", Route: "direct", Shard: "0/1", StartAt: "2026-12-05T10:00:00Z",
		ShardRecord: &assess.ShardRecord{Settings: settings, SettingsHash: hex.EncodeToString(sum[:]), ClockOffsetMS: &off, ClockErrorMS: &errMS}}
	for _, p := range slices.Sorted(maps.Keys(probes)) {
		v := assess.Verdict{Probe: p, MaxClients: 4, Stopped: stopped[p]}
		for k, status := range probes[p] {
			clients := []int{1, 2, 4}[k]
			share, conns := clients, float64(clients+1)
			lv := assess.Level{Clients: clients, ShardClients: &share, Connected: share, Placed: true, StartS: float64(10 * (k + 1)),
				AppConns: &conns, Status: status, FastSent: 25, FastOK: 25}
			if status == "degraded" {
				lv.Degraded, lv.FastOK, lv.FastFail = "25 of 25 /fast requests failed", 0, 25
			}
			v.Levels, v.Tried = append(v.Levels, lv), clients
		}
		a.Verdicts = append(a.Verdicts, v)
	}
	dir := t.TempDir()
	if err := assess.WriteAssessment(dir, a); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAssessExitBounds: an assessment's --fail-on bounds decide its exit,
// whether the verdicts come from `slowlab assess --combine` or from
// assessExit on the combined result: 0 when every bound passes, 1 when one
// is broken (first, whatever else could not be judged), 3 when one could
// not be judged (the probe held only up to fewer clients than the bound
// asks, without degrading).
func TestAssessExitBounds(t *testing.T) {
	dir := oneShard(t, map[string][]string{
		"idle":         {"held", "degraded"}, // degrades at 2: held in place up to 1
		"slow-readers": {"held", "held"},     // held up to 2, stopped there
	}, map[string]string{"idle": "degraded: 25 of 25 /fast requests failed", "slow-readers": "budget: 10s spent"})
	for _, tc := range []struct {
		failOn string
		code   int
		says   string
	}{
		{"idle<2", 0, ""},
		{"slow-readers<3", 0, ""},
		{"idle<3", assessBroken, "--fail-on: 1 bound(s) broken: idle<3: degraded with 2"},
		{"slow-readers<4", assessUnmade, "--fail-on: 1 bound(s) not judged: slow-readers<4: held in place only up to 2"},
		{"idle<3,slow-readers<4", assessBroken, "--fail-on: 1 bound(s) broken: idle<3"},
	} {
		res, err := assess.Combine([]string{dir}, tc.failOn)
		if err != nil {
			t.Fatalf("%s: combine: %v", tc.failOn, err)
		}
		err = assessExit(res)
		var ee exitError
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%s: assessExit %v, want exit 0", tc.failOn, err)
		case tc.code != 0 && (!errors.As(err, &ee) || ee.code != tc.code || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("%s: assessExit %v, want exit %d with %q", tc.failOn, err, tc.code, tc.says)
		}
		code, _, stderr := runCmd(t, "assess", "--combine", "--fail-on", tc.failOn, "--out", filepath.Join(t.TempDir(), "combined"), dir)
		if code != tc.code || !strings.Contains(stderr, tc.says) {
			t.Errorf("assess --combine --fail-on %s: exit %d, stderr:\n%s\nwant exit %d with %q", tc.failOn, code, stderr, tc.code, tc.says)
		}
	}
}
