package loadgendir

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/buildinfo"
	"github.com/slowlab/slowlab/internal/schema"
)

// sample is a merged load's record.
var sample = Record{RunID: "r", Target: "http://127.0.0.1:8000/fast", Rate: 40, Duration: "1s", StartOffset: "0s", Timeout: "30s",
	MaxLag: "0s", Slow: 8, SlowTarget: "http://127.0.0.1:8000/large", ReadRate: "2m", RcvBuf: "8k", ReadSize: "16k",
	StartAt: "2026-01-02T15:04:05Z", Planned: 40, Shard: 0, Shards: 1, MergedFrom: 4}

// loadgen.json is written with schema_version 1.0 first and its fields'
// names as before; one without schema_version (an older slowlab's) reads
// as 1.0. An unknown field is refused at 1.0, ignored with a note at 1.1;
// 2.0 is refused by name; impossible shards and plans are refused.
func TestRecordVersions(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, sample); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, File)
	written, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(written), "{\n  \"schema_version\": \"1.0\",\n  \"run_id\": \"r\",\n  \"target\":") {
		t.Fatalf("written:\n%s", written)
	}
	if back, err := Read(dir); err != nil || back != sample {
		t.Fatalf("read back %+v, %v", back, err)
	}
	var notes strings.Builder
	defer schema.SetNotes(&notes)()
	for _, c := range []struct{ from, to, err string }{
		{`"schema_version": "1.0",` + "\n  ", "", ""},
		{`"schema_version": "1.0",`, `"schema_version": "1.0", "region": "eu",`, `json: unknown field "region"`},
		{`"schema_version": "1.0",`, `"schema_version": "1.1", "region": "eu",`, ""},
		{`"schema_version": "1.0",`, `"schema_version": "2.0",`, path + ": schema 2.0: this slowlab (" + buildinfo.Version() + ") reads 1.x; use a newer slowlab"},
		{`"shards": 1,`, `"shards": 0,`, "shard 0 of 0: want a shard from 0 to shards-1"},
		{`"planned": 40,`, `"planned": -1,`, "planned -1: allowed 0 to"},
	} {
		b := strings.Replace(string(written), c.from, c.to, 1)
		if b == string(written) {
			t.Fatalf("no %q in\n%s", c.from, written)
		}
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		rec, err := Read(dir)
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) || err == nil && rec != sample {
			t.Errorf("%s -> %s: %+v, %v; want %q", c.from, c.to, rec, err, c.err)
		}
	}
	if want := path + ": schema 1.1 is newer than this slowlab's 1.0; fields it does not know were ignored\n"; notes.String() != want {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
	if _, err := Read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no loadgen.json: not a `slowlab loadgen --out` directory") {
		t.Errorf("no file: %v", err)
	}
}

// SameLoad names the first field two shards' records differ in, the
// shard aside.
func TestSameLoad(t *testing.T) {
	a, b := sample, sample
	b.Shard = 3
	if f, _, _ := SameLoad(a, b); f != "" {
		t.Errorf("shards of one load differ in %s", f)
	}
	b.Rate = 50
	if f, av, bv := SameLoad(a, b); f != "rate" || av != "40" || bv != "50" {
		t.Errorf("SameLoad = %s %s %s, want rate 40 50", f, av, bv)
	}
}

// FuzzParse: any loadgen.json is read or refused, never a panic, and
// what is read writes and reads back the same.
func FuzzParse(f *testing.F) {
	dir := f.TempDir()
	if err := Write(dir, sample); err != nil {
		f.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, File))
	f.Add(b)
	f.Add([]byte(`{"shards": 1}`))
	f.Add([]byte(`{"schema_version": "1.4", "shards": 2, "shard": 1, "new": [1]}`))
	defer schema.SetNotes(io.Discard)()
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := parse(File, b)
		if err != nil {
			return
		}
		dir := t.TempDir()
		if err := Write(dir, rec); err != nil {
			t.Fatal(err)
		}
		back, err := Read(dir)
		if err != nil || !reflect.DeepEqual(back, rec) {
			t.Fatalf("read back %+v, %v; want %+v", back, err, rec)
		}
	})
}
