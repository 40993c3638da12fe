package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/slowlab/slowlab/loadgen"
)

// loadRecordFile is what `slowlab loadgen --out` writes beside its rows.
const loadRecordFile = "loadgen.json"

// loadRecord is loadgen.json: everything that shaped one `slowlab
// loadgen` run's load, so that `slowlab merge` can tell the shards of one
// load from others. Shards of one load differ in Shard alone.
type loadRecord struct {
	RunID       string  `json:"run_id"`
	Target      string  `json:"target"`
	Rate        float64 `json:"rate"`
	Duration    string  `json:"duration"`
	StartOffset string  `json:"start_offset"`
	Timeout     string  `json:"timeout"`
	MaxLag      string  `json:"max_lag"`
	KeepAlive   bool    `json:"keepalive"`
	HTTP2       bool    `json:"http2"`
	Slow        int     `json:"slow"`
	SlowTarget  string  `json:"slow_target"`
	ReadRate    string  `json:"read_rate"`
	RcvBuf      string  `json:"rcvbuf"`
	ReadSize    string  `json:"read_size"`
	// StartAt is --start-at (RFC 3339), "" without it: the instant every
	// shard's schedule started at.
	StartAt string `json:"start_at"`
	// Planned is how many requests the whole schedule has (every shard's
	// together).
	Planned int `json:"planned"`
	Shard   int `json:"shard"`
	Shards  int `json:"shards"`
	// MergedFrom is, in a directory `slowlab merge` wrote, how many
	// shards it merged (its Shard is 0 of 1: the whole schedule).
	MergedFrom int `json:"merged_from,omitempty"`
}

// record is r's loadgen.json.
func (r *loadgenRun) record() loadRecord {
	f := r.f
	rec := loadRecord{RunID: f.runID, Target: r.u.String(), Rate: f.rate, Duration: f.duration.String(), StartOffset: f.offset.String(),
		Timeout: f.timeout.String(), MaxLag: f.maxLag.String(), KeepAlive: f.keepAlive, HTTP2: f.http2, Slow: f.slow,
		ReadRate: f.readRate, RcvBuf: f.rcvBuf, ReadSize: f.readSize, Shard: r.shard, Shards: r.count}
	if f.slow > 0 && r.sr.URL != nil {
		rec.SlowTarget = r.sr.URL.String()
	}
	if !r.startAt.IsZero() {
		rec.StartAt = r.startAt.UTC().Format(time.RFC3339Nano)
	}
	if whole, err := f.schedule(); err == nil {
		rec.Planned = whole.Hits()
	}
	return rec
}

// writeLoadRecord writes rec as dir's loadgen.json.
func writeLoadRecord(dir string, rec loadRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, loadRecordFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", loadRecordFile, err)
	}
	return nil
}

// readLoadRecord reads dir's loadgen.json, strictly: a field it does not
// know is an error.
func readLoadRecord(dir string) (loadRecord, error) {
	var rec loadRecord
	path := filepath.Join(dir, loadRecordFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return rec, fmt.Errorf("%s: no %s: not a `slowlab loadgen --out` directory", dir, loadRecordFile)
	}
	if err != nil {
		return rec, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&rec); err != nil {
		return rec, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case rec.Shards < 1 || rec.Shards > loadgen.MaxShards || rec.Shard < 0 || rec.Shard >= rec.Shards:
		return rec, fmt.Errorf("%s: shard %d of %d: want a shard from 0 to shards-1, shards from 1 to %d", path, rec.Shard, rec.Shards, loadgen.MaxShards)
	case rec.Planned < 0 || rec.Planned > loadgen.MaxPlanned:
		return rec, fmt.Errorf("%s: planned %d: allowed 0 to %d", path, rec.Planned, loadgen.MaxPlanned)
	}
	return rec, nil
}

// sameLoad names the first field (by its JSON name) in which a and b
// differ, but the shard: "" when they are shards of one load.
func sameLoad(a, b loadRecord) (field, av, bv string) {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		name, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("json"), ",")
		if name == "shard" {
			continue
		}
		if x, y := va.Field(i).Interface(), vb.Field(i).Interface(); x != y {
			return name, fmt.Sprint(x), fmt.Sprint(y)
		}
	}
	return "", "", ""
}
