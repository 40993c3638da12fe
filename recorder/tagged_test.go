package recorder_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// shared are columns an embedded struct brings to the rows that embed
// it, as recorder.FastFields does.
type shared struct {
	Held recorder.Maybe `csv:"held_s,seconds"`
	Mode string         `csv:"mode,added=idle"`
}

// taggedRow declares its columns in its fields' tags, one of each
// supported type.
type taggedRow struct {
	RunID string    `csv:"run_id"`
	At    time.Time `csv:"started_at"`
	Seq   int       `csv:"seq"`
	shared
	Bytes   int64   `csv:"bytes,whole"`
	Pct     float64 `csv:"pct,1"`
	Latency float64 `csv:"latency_ms,millis"`
	OK      bool    `csv:"ok"`
}

var taggedSchema = recorder.Tagged[taggedRow]("tagged-rows.csv")

func (taggedRow) Schema() *recorder.Schema[taggedRow] { return taggedSchema }

// TestTaggedSchema: a schema derived from the tags has the tags' names,
// in field order with the embedded struct's at its place, their
// precisions and added defaults, and writes and reads rows as a Col
// schema does.
func TestTaggedSchema(t *testing.T) {
	if got, want := recordertest.Layout[taggedRow](), "run_id/0 started_at/0 seq/0 held_s/3 mode/0 bytes/0 pct/1 latency_ms/3 ok/0"; got != want {
		t.Errorf("layout\n got %s\nwant %s", got, want)
	}
	if got := recordertest.AddedColumns[taggedRow](); got != "mode=idle" {
		t.Errorf("added columns %q", got)
	}
	recordertest.Contract[taggedRow](t)

	dir := t.TempDir()
	w, err := recorder.CreateFile[taggedRow](dir)
	if err != nil {
		t.Fatal(err)
	}
	row := taggedRow{RunID: "a", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Seq: 3,
		shared: shared{Held: recorder.Some(1.23456), Mode: "slowloris"}, Bytes: 1 << 40, Pct: 12.34, Latency: 0.0004, OK: true}
	if err := w.Write(row); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "tagged-rows.csv"))
	if want := "run_id,started_at,seq,held_s,mode,bytes,pct,latency_ms,ok\na,2026-01-02T03:04:05Z,3,1.235,slowloris,1099511627776,12.3,0,true\n"; string(b) != want {
		t.Errorf("tagged-rows.csv:\n%s\nwant:\n%s", b, want)
	}
	rows, err := recorder.ReadAll[taggedRow](strings.NewReader("run_id,started_at,seq,held_s,bytes,pct,latency_ms,ok\nb,,1,,2,0.5,1.5,false\n"))
	if err != nil || len(rows) != 1 || rows[0].Mode != "idle" || rows[0].Held.Valid || rows[0].Latency != 1.5 {
		t.Errorf("older file without mode: %+v, %v", rows, err)
	}
}

// BenchmarkWriteTagged writes rows of a schema built from tags, to set
// beside BenchmarkWriteRequests: the accessors are resolved once, so a
// row costs the same single allocation.
func BenchmarkWriteTagged(b *testing.B) {
	w, err := recorder.NewWriter[taggedRow](discard{})
	if err != nil {
		b.Fatal(err)
	}
	row := taggedRow{RunID: "proxy-buffering-off-sync-2-s2-r3", At: time.Now(), Seq: 7,
		shared: shared{Held: recorder.Some(12.5), Mode: "idle"}, Bytes: 12, Pct: 3.5, Latency: 1803.412}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(row); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestTaggedRefuses: a row type the tags cannot describe panics when its
// schema is built, naming the type, the field and what is wrong.
func TestTaggedRefuses(t *testing.T) {
	type untagged struct {
		RunID string `csv:"run_id"`
		Extra int
	}
	type unsupported struct {
		RunID string        `csv:"run_id"`
		Wait  time.Duration `csv:"wait"`
	}
	type duplicate struct {
		RunID string `csv:"run_id"`
		ID    string `csv:"run_id"`
	}
	type badOption struct {
		S float64 `csv:"s,hours"`
	}
	type precisionOnInt struct {
		N int `csv:"n,seconds"`
	}
	type badDefault struct {
		N int `csv:"n,added=many"`
	}
	type noName struct {
		N int `csv:",whole"`
	}
	for _, tc := range []struct {
		build func()
		want  string
	}{
		{func() { recorder.Tagged[untagged]("u.csv") }, "recorder_test.untagged: field untagged.Extra has no csv tag"},
		{func() { recorder.Tagged[unsupported]("u.csv") }, "field unsupported.Wait: type time.Duration is not a column type"},
		{func() { recorder.Tagged[duplicate]("u.csv") }, `fields duplicate.RunID and duplicate.ID are both column "run_id"`},
		{func() { recorder.Tagged[badOption]("u.csv") }, `field badOption.S: csv tag "s,hours": unknown option "hours"`},
		{func() { recorder.Tagged[precisionOnInt]("u.csv") }, `field precisionOnInt.N: csv tag "n,seconds": precision "seconds" on a int field`},
		{func() { recorder.Tagged[badDefault]("u.csv") }, `field badDefault.N: csv tag "n,added=many": default "many"`},
		{func() { recorder.Tagged[noName]("u.csv") }, `field noName.N: csv tag ",whole" has no column name`},
		{func() { recorder.Tagged[int]("u.csv") }, "Tagged[int]: not a struct"},
	} {
		got := panicOf(tc.build)
		if !strings.Contains(got, tc.want) {
			t.Errorf("panic %q, want it to contain %q", got, tc.want)
		}
	}
}

func panicOf(f func()) (msg string) {
	defer func() { msg = fmt.Sprint(recover()) }()
	f()
	return "no panic"
}

// grown is a row whose embedded struct's columns are split around its
// own: the DNS column came after the others.
type grown struct {
	RunID string `csv:"run_id"`
	settings
	Handshake recorder.Maybe `csv:"handshake_ms,millis"`
}

type settings struct {
	TLS string `csv:"tls"`
	DNS string `csv:"dns"`
}

var grownSpans = recorder.TaggedSpans[grown]("grown.csv", "RunID-TLS", "Handshake", "DNS")

func (grown) Schema() *recorder.Schema[grown] { return grownSpans }

// TestTaggedSpans: spans of fields order the columns, and every tagged
// field must be in exactly one span.
func TestTaggedSpans(t *testing.T) {
	if got, want := recordertest.Layout[grown](), "run_id/0 tls/0 handshake_ms/3 dns/0"; got != want {
		t.Errorf("layout\n got %s\nwant %s", got, want)
	}
	recordertest.Contract[grown](t)
	for _, tc := range []struct {
		spans []string
		want  string
	}{
		{[]string{"RunID-TLS", "Handshake"}, "field DNS is in no span"},
		{[]string{"RunID-DNS", "TLS-Handshake"}, `span "TLS-Handshake" takes field TLS again`},
		{[]string{"Handshake-RunID", "DNS"}, `span "Handshake-RunID": Handshake comes after RunID`},
		{[]string{"RunID-TLS", "Handshake", "Resolver"}, `span "Resolver": no single tagged field Resolver`},
	} {
		got := panicOf(func() { recorder.TaggedSpans[grown]("grown.csv", tc.spans...) })
		if !strings.Contains(got, "recorder_test.grown: "+tc.want) {
			t.Errorf("spans %q: panic %q, want %q", tc.spans, got, tc.want)
		}
	}
}

// key are the leading columns of the rows that embed it, as lab.RunKey
// is; its clients column is named for what the clients are where a row
// embeds it with a renaming tag.
type key struct {
	RunID   string `csv:"run_id"`
	Clients int    `csv:"clients"`
}

// clientKey is key and the client, embedded in its turn.
type clientKey struct {
	key
	Client int `csv:"client"`
}

// upload is a row that embeds the keys renamed: its clients are
// uploaders, and its client an uploader.
type upload struct {
	clientKey `csv:"clients=uploaders,client=uploader"`
	SentS     float64 `csv:"sent_s,seconds"`
}

var uploadSchema = recorder.Tagged[upload]("uploads.csv")

func (upload) Schema() *recorder.Schema[upload] { return uploadSchema }

// TestTaggedRenames: a csv tag on an embedded struct renames its columns
// (those of the structs it embeds too) for the row that embeds it, and
// leaves the others as they are; a tag that is not a renaming, or that
// renames a column the struct has not, panics naming the field.
func TestTaggedRenames(t *testing.T) {
	if got, want := recordertest.Layout[upload](), "run_id/0 uploaders/0 uploader/0 sent_s/3"; got != want {
		t.Errorf("layout\n got %s\nwant %s", got, want)
	}
	if got, want := recordertest.Layout[clientKeyRow](), "run_id/0 clients/0 client/0"; got != want {
		t.Errorf("layout of the key unrenamed\n got %s\nwant %s", got, want)
	}
	recordertest.Contract[upload](t)
	recordertest.Contract[clientKeyRow](t)
	type notRenaming struct {
		key `csv:"uploaders"`
	}
	type missing struct {
		key `csv:"clients=uploaders,streams=sockets"`
	}
	type twice struct {
		key `csv:"clients=uploaders,clients=sockets"`
	}
	type clash struct {
		key `csv:"clients=run_id"`
	}
	for _, tc := range []struct {
		build func()
		want  string
	}{
		{func() { recorder.Tagged[notRenaming]("u.csv") }, `field notRenaming.key: csv tag "uploaders" on an embedded struct: "uploaders" is not a renaming FROM=TO`},
		{func() { recorder.Tagged[missing]("u.csv") }, `field missing.key: csv tag "clients=uploaders,streams=sockets" renames column "streams", which recorder_test.key has not`},
		{func() { recorder.Tagged[twice]("u.csv") }, `renames column "clients" twice`},
		{func() { recorder.Tagged[clash]("u.csv") }, `fields clash.key.RunID and clash.key.Clients are both column "run_id"`},
	} {
		got := panicOf(tc.build)
		if !strings.Contains(got, tc.want) {
			t.Errorf("panic %q, want it to contain %q", got, tc.want)
		}
	}
}

// clientKeyRow embeds clientKey without a tag: its columns keep their
// names.
type clientKeyRow struct{ clientKey }

var clientKeySchema = recorder.Tagged[clientKeyRow]("keys.csv")

func (clientKeyRow) Schema() *recorder.Schema[clientKeyRow] { return clientKeySchema }
