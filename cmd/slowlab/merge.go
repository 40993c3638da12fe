package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/lab/loadgendir"
	"github.com/slowlab/slowlab/recorder"
)

const mergeSynopsis = `--out DIR SHARD_DIR...

Merges the results directories of the N shards of one load (slowlab loadgen --shard I/N --out
SHARD_DIR, every shard's directory given once) into DIR: requests.csv with every scheduled
request once, in schedule order; large-responses.csv; runs.csv with the run's summary computed
from the merged rows; loadgen.json; manifest.json. Shards of different loads (any flag but
--shard differs, named in the error), a shard missing or given twice, and a request or a slow
reader missing, repeated or in the wrong shard are refused. Memory stays bounded however many
rows: they are sorted in chunks written under DIR and merged. slowlab report DIR draws it.`

func init() {
	register(command{name: "merge", summary: "merge the shards of one sharded load (slowlab loadgen --shard) into one results directory", run: runMerge})
}

func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", mergeSynopsis, stdout)
	out := fs.String("out", "", "directory to write the merged results to (required; created, and must hold no results yet)")
	// The directories follow the flags; parseFlags takes flags alone.
	k := 0
	for k < len(args) && strings.HasPrefix(args[k], "-") {
		if a := args[k]; (a == "--out" || a == "-out") && k+1 < len(args) {
			k++
		}
		k++
	}
	if err := parseFlags(fs, args[:k]); err != nil {
		return err
	}
	dirs := args[k:]
	for _, d := range dirs {
		if strings.HasPrefix(d, "-") {
			return usagef("%s: flags go before the shard directories", d)
		}
	}
	switch {
	case *out == "":
		return usagef("--out is required, e.g. --out results/merged")
	case len(dirs) == 0:
		return usagef("no shard directories: give each shard's --out directory, e.g. slowlab merge --out merged shard-0 shard-1")
	}
	if err := parsedOnly(ctx); err != nil {
		return err // the shards' directories are data, read only by a run
	}
	rec, err := checkShards(dirs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	written := []string{recorder.FileName[recorder.Request](), recorder.FileName[recorder.LargeResponse](), recorder.FileName[recorder.Run](), loadgendir.File,
		recorder.ManifestFile}
	for _, name := range written {
		if _, err := os.Stat(filepath.Join(*out, name)); err == nil {
			return usagef("--out %s: holds %s already: merge into a new directory", *out, name)
		}
	}
	m := &merger{out: *out, rec: rec, dirs: dirs}
	run, err := m.merge()
	if err == nil {
		err = recorder.WriteManifest(*out, "merge", loadgendir.Name)
	}
	if err != nil {
		// What a failed merge wrote is not the load's results: it goes.
		for _, name := range written {
			os.Remove(filepath.Join(*out, name))
		}
		return err
	}
	fmt.Fprintf(stdout, "merged %d shards of %s into %s: %d requests planned, %d sent, %d ok; p50 %s ms, p95 %s ms, max %s ms; max schedule lag %s ms; %d slow readers\n",
		len(dirs), rec.RunID, *out, run.FastPlanned, run.FastSent, run.FastOK, num(run.P50MS), num(run.P95MS), num(run.MaxMS), num(run.MaxScheduleLagMS), m.larges)
	return nil
}

func num(m recorder.Maybe) string {
	if !m.Valid {
		return "-"
	}
	return fmt.Sprintf("%.1f", m.Value)
}

// checkShards reads every directory's loadgen.json and checks that they
// are the shards of one load, each once: the merged record.
func checkShards(dirs []string) (loadgendir.Record, error) {
	recs := make([]loadgendir.Record, len(dirs))
	for i, d := range dirs {
		var err error
		if recs[i], err = loadgendir.Read(d); err != nil {
			return loadgendir.Record{}, err
		}
	}
	first := recs[0]
	seen := map[int]string{}
	for i, r := range recs {
		if field, a, b := loadgendir.SameLoad(first, r); field != "" {
			return loadgendir.Record{}, fmt.Errorf("%s: %s %q, but %s has %q: shards must be runs of one load (the same flags but --shard)", dirs[i], field, b, dirs[0], a)
		}
		if other, ok := seen[r.Shard]; ok {
			return loadgendir.Record{}, fmt.Errorf("%s and %s are both shard %d of %d: give each shard once", other, dirs[i], r.Shard, r.Shards)
		}
		seen[r.Shard] = dirs[i]
	}
	if len(dirs) != first.Shards {
		var missing []int
		for s := range first.Shards {
			if _, ok := seen[s]; !ok {
				missing = append(missing, s)
			}
		}
		return loadgendir.Record{}, fmt.Errorf("%d directories for %d shards: shard %v missing", len(dirs), first.Shards, missing)
	}
	if first.Shards > 1 && first.StartAt == "" {
		return loadgendir.Record{}, errors.New("the shards were not started together (run without --start-at): their schedules do not line up")
	}
	merged := first
	merged.Shard, merged.Shards, merged.MergedFrom = 0, 1, len(dirs)
	return merged, nil
}

// merger merges one load's shards.
type merger struct {
	out    string
	rec    loadgendir.Record // the merged record
	dirs   []string
	larges int
}

// merge writes the merged files and returns the run's summary.
func (m *merger) merge() (recorder.Run, error) {
	byTime := &recorder.Sorter[recorder.Request]{Dir: m.out, Cmp: func(a, b recorder.Request) int {
		return cmp.Or(cmp.Compare(a.ScheduledS, b.ScheduledS), cmp.Compare(a.Seq, b.Seq))
	}}
	defer byTime.Close()
	shards := m.rec.MergedFrom
	for _, d := range m.dirs {
		rec, _ := loadgendir.Read(d)
		err := recorder.EachRow(filepath.Join(d, recorder.FileName[recorder.Request]()), func(r recorder.Request) error {
			if r.Shard != rec.Shard || r.Seq%shards != rec.Shard || r.RunID != rec.RunID {
				return fmt.Errorf("run %s seq %d shard %d: not a request of shard %d of %d of run %s", r.RunID, r.Seq, r.Shard, rec.Shard, shards, rec.RunID)
			}
			return byTime.Add(r)
		})
		if err != nil {
			return recorder.Run{}, err
		}
	}
	st := &requestStats{byLatency: &recorder.Sorter[recorder.Request]{Dir: m.out,
		Cmp: func(a, b recorder.Request) int { return cmp.Compare(a.LatencyMS, b.LatencyMS) }}}
	defer st.byLatency.Close()
	if err := m.writeRequests(byTime, st); err != nil {
		return recorder.Run{}, err
	}
	larges, err := m.mergeLarges()
	if err != nil {
		return recorder.Run{}, err
	}
	m.larges = len(larges)
	run := recorder.SummarizeRun(recorder.RunMeta{RunID: m.rec.RunID, SlowClients: m.rec.Slow, Rep: 1, Status: recorder.RunOK}, nil, larges)
	if run.StartedAt, err = time.Parse(time.RFC3339Nano, m.rec.StartAt); err != nil {
		run.StartedAt = time.Time{}
	}
	run.FastPlanned, run.FastTotal, run.FastSent, run.FastOK = m.rec.Planned, st.total, st.sent, st.ok
	run.MaxScheduleLagMS = st.maxLag
	if run.P50MS, run.P95MS, run.MaxMS, err = st.percentiles(); err != nil {
		return recorder.Run{}, err
	}
	if err := writeRows(m.out, []recorder.Run{run}); err != nil {
		return recorder.Run{}, err
	}
	return run, loadgendir.Write(m.out, m.rec)
}

// requestStats is what the merged requests sum to; the ok requests'
// latencies are sorted on the side for the exact percentiles.
type requestStats struct {
	total, sent, ok int
	maxLag          recorder.Maybe
	byLatency       *recorder.Sorter[recorder.Request]
}

// writeRequests writes requests.csv from the sorted rows, checking that
// every scheduled request is there once, and counts them into st.
func (m *merger) writeRequests(rows *recorder.Sorter[recorder.Request], st *requestStats) error {
	w, closeFile, err := createBuffered[recorder.Request](m.out)
	if err != nil {
		return err
	}
	next := 0
	err = rows.Each(func(r recorder.Request) error {
		switch {
		case r.Seq < next:
			return fmt.Errorf("requests.csv: seq %d (shard %d) is there twice", r.Seq, r.Shard)
		case r.Seq > next:
			return fmt.Errorf("requests.csv: seq %d (shard %d) is missing", next, next%m.rec.MergedFrom)
		}
		next++
		if err := st.add(r); err != nil {
			return err
		}
		return w.Write(r)
	})
	if err == nil && next != m.rec.Planned {
		err = fmt.Errorf("requests.csv: %d of the %d scheduled requests: seq %d (shard %d) and on are missing", next, m.rec.Planned, next, next%m.rec.MergedFrom)
	}
	return errors.Join(err, closeFile())
}

// add counts one merged request as recorder.SummarizeRun does.
func (st *requestStats) add(r recorder.Request) error {
	st.total++
	if r.NotSent() {
		return nil
	}
	st.sent++
	if !math.IsNaN(r.ScheduleLagMS) && (!st.maxLag.Valid || r.ScheduleLagMS > st.maxLag.Value) {
		st.maxLag = recorder.Some(r.ScheduleLagMS)
	}
	if r.Status >= 200 && r.Status <= 399 && r.Error == "" && !math.IsNaN(r.LatencyMS) {
		st.ok++
		return st.byLatency.Add(r)
	}
	return nil
}

// percentiles are the ok requests' p50, p95 and maximum latency by
// nearest rank, read from the sorted latencies.
func (st *requestStats) percentiles() (p50, p95, maxMS recorder.Maybe, err error) {
	if st.ok == 0 {
		return recorder.None(), recorder.None(), recorder.None(), nil
	}
	ranks := []int{recorder.Rank(st.ok, 50), recorder.Rank(st.ok, 95), st.ok}
	got := make([]recorder.Maybe, len(ranks))
	i := 0
	err = st.byLatency.Each(func(r recorder.Request) error {
		i++
		for k, rank := range ranks {
			if rank == i {
				got[k] = recorder.Some(r.LatencyMS)
			}
		}
		return nil
	})
	return got[0], got[1], got[2], err
}

// mergeLarges writes the shards' slow downloads, by client, to
// large-responses.csv: a few per shard, held in memory. Each slow reader
// of the load (clients 0 to Slow-1, shard I of N holding I, I+N, ...) must
// be there once, in its shard's file.
func (m *merger) mergeLarges() ([]recorder.LargeResponse, error) {
	var all []recorder.LargeResponse
	shards := m.rec.MergedFrom
	for _, d := range m.dirs {
		path := filepath.Join(d, recorder.FileName[recorder.LargeResponse]())
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && m.rec.Slow == 0 {
			continue
		}
		rec, _ := loadgendir.Read(d)
		err := recorder.EachRow(path, func(l recorder.LargeResponse) error {
			if l.Client < 0 || l.Client >= m.rec.Slow || l.Client%shards != rec.Shard || l.RunID != rec.RunID {
				return fmt.Errorf("run %s slow reader %d: not a slow reader of shard %d of %d of run %s, which has %d in all",
					l.RunID, l.Client, rec.Shard, shards, rec.RunID, m.rec.Slow)
			}
			all = append(all, l)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(all, func(a, b recorder.LargeResponse) int { return cmp.Compare(a.Client, b.Client) })
	next := 0
	for _, l := range all {
		if l.Client < next {
			return nil, fmt.Errorf("large-responses.csv: slow reader %d (shard %d) is there twice", l.Client, l.Client%shards)
		}
		if l.Client > next {
			break
		}
		next++
	}
	if next != m.rec.Slow {
		return nil, fmt.Errorf("large-responses.csv: slow reader %d (shard %d) is missing", next, next%shards)
	}
	if m.rec.Slow == 0 {
		return all, nil
	}
	return all, writeRows(m.out, all)
}

// writeRows writes rows as dir's new file of their kind.
func writeRows[T recorder.Row[T]](dir string, rows []T) error {
	w, closeFile, err := createBuffered[T](dir)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err = w.Write(r); err != nil {
			break
		}
	}
	return errors.Join(err, closeFile())
}

// createBuffered creates dir's new file of rows of T (an existing one is
// an error) behind a buffer: one write call per 64 KiB, not per row.
func createBuffered[T recorder.Row[T]](dir string) (*recorder.Writer[T], func() error, error) {
	path := filepath.Join(dir, recorder.FileName[T]())
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	w, err := recorder.NewWriter[T](bw)
	if err != nil {
		return nil, nil, errors.Join(err, f.Close())
	}
	return w, func() error {
		if err := errors.Join(bw.Flush(), f.Close()); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}, nil
}
