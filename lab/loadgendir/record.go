// Package loadgendir is the results directory of `slowlab loadgen --out`
// and of `slowlab merge`: loadgen.json, the record of what shaped the
// load (its format, written and read here), and the report's
// load-generator section, which draws such a directory (its requests'
// latency over time and the run's summary).
//
// What it leaves to others: sending the load and the CSV rows are
// loadgen's and recorder's; the commands are cmd/slowlab's; the page is
// report's.
package loadgendir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/slowlab/slowlab/internal/schema"
	"github.com/slowlab/slowlab/loadgen"
)

// File is what `slowlab loadgen --out` writes beside its rows.
const File = "loadgen.json"

// SchemaVersion is the version of loadgen.json's format this slowlab
// writes (its schema_version; internal/schema says how it is read).
const SchemaVersion = "1.0"

// Name is the load generator's name in manifest.json and in the report.
const Name = "loadgen"

// Record is loadgen.json: everything that shaped one `slowlab loadgen`
// run's load, so that `slowlab merge` can tell the shards of one load from
// others. Shards of one load differ in Shard alone.
type Record struct {
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

// recordFile is loadgen.json: its schema_version, then the record.
type recordFile struct {
	SchemaVersion string `json:"schema_version"`
	Record
}

// Write writes rec as dir's loadgen.json.
func Write(dir string, rec Record) error {
	b, err := json.MarshalIndent(recordFile{SchemaVersion, rec}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, File), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", File, err)
	}
	return nil
}

// Read reads dir's loadgen.json, strictly: a field it does not know is
// an error, but in a file of a newer minor version (ignored, with a
// note); a newer major version is refused.
func Read(dir string) (Record, error) {
	path := filepath.Join(dir, File)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, fmt.Errorf("%s: no %s: not a `slowlab loadgen --out` directory", dir, File)
	}
	if err != nil {
		return Record{}, err
	}
	return parse(path, b)
}

// parse parses b, the file name's loadgen.json; its errors start with
// name.
func parse(name string, b []byte) (Record, error) {
	var f recordFile
	if err := schema.DecodeJSON(name, b, SchemaVersion, &f); err != nil {
		return Record{}, err
	}
	rec := f.Record
	switch {
	case rec.Shards < 1 || rec.Shards > loadgen.MaxShards || rec.Shard < 0 || rec.Shard >= rec.Shards:
		return rec, fmt.Errorf("%s: shard %d of %d: want a shard from 0 to shards-1, shards from 1 to %d", name, rec.Shard, rec.Shards, loadgen.MaxShards)
	case rec.Planned < 0 || rec.Planned > loadgen.MaxPlanned:
		return rec, fmt.Errorf("%s: planned %d: allowed 0 to %d", name, rec.Planned, loadgen.MaxPlanned)
	}
	return rec, nil
}

// SameLoad names the first field (by its JSON name) in which a and b
// differ, but the shard: "" when they are shards of one load.
func SameLoad(a, b Record) (field, av, bv string) {
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
