package slowclient

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// fixture describes a synthetic slow-client results directory shaped like
// docs/experiments.md's expectations, written with recorder's writers.
type fixture struct {
	reps int
	// failed marks runs (by id) as failed: they stay in runs.csv and
	// their rows in the other files, but no figure may use them.
	failed map[string]bool
	// noResources leaves every resource cell empty, as a run without an
	// exporter would.
	noResources bool
	// skip names files not to write.
	skip map[string]bool
	// oom marks runs (by id) as failed by an OOM kill of the app.
	oom map[string]bool
}

type fixtureCond struct {
	route, server string
	slow          int
}

// fixtureConditions is the preset matrix: 3 routes x {0,1,2} slow clients,
// plus gthread 1x4 direct with 2.
func fixtureConditions() []fixtureCond {
	var cs []fixtureCond
	for _, route := range []string{"direct", "proxy-buffering-off", "proxy-buffering-on"} {
		for slow := 0; slow <= 2; slow++ {
			cs = append(cs, fixtureCond{route, "sync-2", slow})
		}
	}
	return append(cs, fixtureCond{"direct", "gthread-1x4", 2})
}

func runID(c fixtureCond, rep int) string {
	return fmt.Sprintf("%s-%s-s%d-r%d", c.route, c.server, c.slow, rep)
}

// fastLatency is a /fast latency in ms for the condition: milliseconds
// unless both sync workers are held by slow clients.
func fastLatency(c fixtureCond, rnd *rand.Rand) float64 {
	base := 1 + rnd.Float64()*2
	switch {
	case c.server != "sync-2" || c.slow < 2:
		return base
	case c.route == "direct":
		return 1500 + rnd.Float64()*4000
	case c.route == "proxy-buffering-off":
		return 200 + rnd.Float64()*1500
	}
	return base
}

// write writes the results files into dir and returns the runs.
func (fx fixture) write(t testing.TB, dir string) []recorder.Run {
	t.Helper()
	rnd := rand.New(rand.NewPCG(7, 11))
	reqW := recordertest.Create[recorder.Request](t, dir)
	largeW := recordertest.Create[recorder.LargeResponse](t, dir)
	resW := recordertest.Create[recorder.ResourceSample](t, dir)
	started := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	var runs []recorder.Run
	for _, c := range fixtureConditions() {
		for rep := 1; rep <= fx.reps; rep++ {
			id := runID(c, rep)
			var reqs []recorder.Request
			for seq := range 72 {
				sched := 0.25 + float64(seq)*0.125
				r := recorder.Request{RunID: id, Route: c.route, Server: c.server, SlowClients: c.slow, Rep: rep,
					Seq: seq, ScheduledS: sched, StartS: sched + 0.0004, ScheduleLagMS: 0.4, ConnectMS: 0.1,
					LatencyMS: fastLatency(c, rnd), Status: 200, Bytes: 12}
				r.TTFBMS = r.LatencyMS - 0.05
				if seq == 40 && c.slow == 2 && c.route == "direct" && c.server == "sync-2" {
					r.Status, r.Error, r.LatencyMS, r.TTFBMS, r.Bytes = 0, "timeout", math.NaN(), math.NaN(), 0
				}
				reqs = append(reqs, r)
				if err := reqW.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			var larges []recorder.LargeResponse
			for client := range c.slow {
				app := 7.6 + rnd.Float64()*0.3
				switch {
				case c.route == "proxy-buffering-on":
					app = 0.03 + rnd.Float64()*0.02
				case c.route == "proxy-buffering-off":
					app = 6 + rnd.Float64()
				case c.server == "gthread-1x4":
					app = 7.7
				}
				l := recorder.LargeResponse{RunID: id, Route: c.route, Server: c.server, SlowClients: c.slow, Rep: rep,
					Client: client, Status: 200, Bytes: 16 << 20, ReceiveS: 8 + rnd.Float64()*0.4,
					AppSendS: recorder.Some(app), Complete: true}
				if client == 1 && rep == 1 {
					l.AppSendS = recorder.None() // the app did not report it
				}
				larges = append(larges, l)
				if err := largeW.Write(l); err != nil {
					t.Fatal(err)
				}
			}
			status := recorder.RunOK
			if fx.failed[id] || fx.oom[id] {
				status = recorder.RunFailed
			}
			run := recorder.SummarizeRun(recorder.RunMeta{RunID: id, Route: c.route, Server: c.server,
				SlowClients: c.slow, Rep: rep, StartedAt: started, Status: status}, reqs, larges)
			started = started.Add(12 * time.Second)

			// Samples every 200 ms for 9.6 s.
			cpu := map[string]float64{}
			tempPeak, appPeak := 0.0, 0.0
			for i := range 49 {
				ts := float64(i) * 0.2
				for _, comp := range recorder.Components {
					s := recorder.ResourceSample{RunID: id, TS: ts, Component: comp}
					if !fx.noResources && !(comp == "proxy" && c.route == "direct") {
						cpu[comp] += 0.2 * (0.05 + rnd.Float64()*0.15)
						s.CPUSeconds = recorder.Some(cpu[comp])
						s.MemoryBytes = recorder.Some(float64(40<<20) + rnd.Float64()*float64(8<<20))
						if comp == "app" {
							// The app holds 16 MiB per slow reader on the direct route.
							if c.route == "direct" && ts > 1 {
								s.MemoryBytes.Value += float64(c.slow) * (16 << 20)
							}
							appPeak = math.Max(appPeak, s.MemoryBytes.Value)
						}
						s.RSSBytes = recorder.Some(float64(30<<20) + rnd.Float64()*float64(4<<20))
						s.Processes = recorder.Some(3)
						if comp == "proxy" {
							temp := 0.0
							if c.route == "proxy-buffering-on" && ts < 8.5 {
								temp = math.Min(ts*8, 32) * float64(c.slow) * (1 << 20)
							}
							s.TempFiles = recorder.Some(float64(c.slow))
							s.TempLogicalBytes = recorder.Some(temp)
							tempPeak = math.Max(tempPeak, temp/(1<<20))
						}
					}
					if err := resW.Write(s); err != nil {
						t.Fatal(err)
					}
				}
			}
			if c.route != "direct" && !fx.noResources {
				run.TempPeakMiB = recorder.Some(tempPeak)
			}
			if !fx.noResources {
				run.Components[0].MemoryPeakBytes = recorder.Some(appPeak)
				run.Components[0].OOMKills = recorder.Some(0)
				if fx.oom[id] {
					run.Components[0].OOMKills = recorder.Some(1)
					run.Reason = "app: 1 process killed for memory (OOM, cgroup memory limit reached)"
				}
			}
			runs = append(runs, run)
		}
	}
	for _, w := range []interface{ Close() error }{reqW, largeW, resW} {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	runW := recordertest.Create[recorder.Run](t, dir)
	for _, r := range runs {
		if err := runW.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := runW.Close(); err != nil {
		t.Fatal(err)
	}
	condW := recordertest.Create[recorder.Condition](t, dir)
	for _, c := range recorder.SummarizeConditions(runs) {
		if err := condW.Write(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := condW.Close(); err != nil {
		t.Fatal(err)
	}
	env := recorder.Environment{Experiment: "slow-client", Stack: "embedded", StartedAt: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
		Kernel: "6.1.0-test", Arch: "amd64", CPUs: 4, Go: "go1.26.0", SlowlabSHA256: "ab12",
		CgroupVersion: "v2", Limits: "none: the embedded stack runs without cgroup limits",
		Versions: map[string]string{"python3": "Python 3.11.2"}}
	if err := recorder.AppendEnvironment(dir, env); err != nil {
		t.Fatal(err)
	}
	for name := range fx.skip {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return runs
}
