// Command genshards writes the results directories of a sharded load
// without sending it: N shards of one schedule of --requests requests at
// --rate, each a loadgen.json and a requests.csv whose rows come in the
// order they would complete (their latencies drawn at random), so that
// `slowlab merge` can be timed and its memory measured on any number of
// rows (scripts/bench-merge.sh).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

func main() {
	out := flag.String("out", "", "directory to write shard-0 ... shard-N-1 into (required)")
	shards := flag.Int("shards", 4, "shards")
	requests := flag.Int("requests", 1_000_000, "requests in the whole schedule")
	rate := flag.Float64("rate", 2000, "requests a second")
	flag.Parse()
	if *out == "" || *shards < 1 || *requests < 1 || *rate <= 0 {
		fmt.Fprintln(os.Stderr, "genshards: --out DIR [--shards N] [--requests N] [--rate R]")
		os.Exit(2)
	}
	if err := run(*out, *shards, *requests, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "genshards:", err)
		os.Exit(1)
	}
}

func run(out string, shards, requests int, rate float64) error {
	start := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	duration := time.Duration(float64(requests) / rate * float64(time.Second))
	for i := range shards {
		dir := filepath.Join(out, fmt.Sprintf("shard-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		// The fields `slowlab loadgen --out` writes to loadgen.json.
		rec := map[string]any{"run_id": "bench", "target": "http://127.0.0.1:8000/fast", "rate": rate, "duration": duration.String(),
			"start_offset": "0s", "timeout": "30s", "max_lag": "0s", "keepalive": false, "http2": false, "slow": 0, "slow_target": "",
			"read_rate": "256k", "rcvbuf": "8k", "read_size": "16k", "start_at": start, "planned": requests, "shard": i, "shards": shards}
		b, _ := json.MarshalIndent(rec, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "loadgen.json"), b, 0o644); err != nil {
			return err
		}
		if err := writeRequests(dir, i, shards, requests, rate); err != nil {
			return err
		}
	}
	return nil
}

// writeRequests writes shard i's rows in completion order, a window of
// them at a time.
func writeRequests(dir string, shard, shards, requests int, rate float64) error {
	w, err := recorder.CreateFile[recorder.Request](dir)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(shard), 1))
	var window []recorder.Request
	flush := func() error {
		slices.SortFunc(window, func(a, b recorder.Request) int {
			return int((a.ScheduledS + a.LatencyMS/1e3 - b.ScheduledS - b.LatencyMS/1e3) * 1e6)
		})
		for _, r := range window {
			if err := w.Write(r); err != nil {
				return err
			}
		}
		window = window[:0]
		return nil
	}
	for seq := shard; seq < requests; seq += shards {
		sched := float64(seq) / rate
		lat := 1 + rng.ExpFloat64()*20
		window = append(window, recorder.Request{RunID: "bench", Seq: seq, Shard: shard, ScheduledS: sched, StartS: sched + 0.0001,
			ScheduleLagMS: 0.1, ConnectMS: 0.1, TTFBMS: lat - 0.1, LatencyMS: lat, Status: 200, Bytes: 1024})
		if len(window) == 4096 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return w.Close()
}
