package recorder_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// readFixture reads testdata/name as rows of T and writes them back.
func readFixture[T recorder.Row[T]](t *testing.T, name string) ([]T, []byte) {
	t.Helper()
	rows, err := recorder.ReadFile[T](filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return rows, writeRows(t, rows)
}

// TestValidFixturesAreCanonical reads each valid fixture and writes it
// back byte for byte, so the fixtures document exactly what Writer emits.
func TestValidFixturesAreCanonical(t *testing.T) {
	check := func(name string, rowsLen, wantRows int, out []byte) {
		t.Helper()
		want, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if rowsLen != wantRows {
			t.Errorf("%s: read %d rows, want %d", name, rowsLen, wantRows)
		}
		if !bytes.Equal(out, want) {
			t.Errorf("%s: rewritten differs\n got:\n%s\nwant:\n%s", name, out, want)
		}
	}
	reqs, out := readFixture[recorder.Request](t, "requests.csv")
	check("requests.csv", len(reqs), 4, out)
	larges, out := readFixture[recorder.LargeResponse](t, "large-responses.csv")
	check("large-responses.csv", len(larges), 2, out)
	samples, out := readFixture[recorder.ResourceSample](t, "resource-samples.csv")
	check("resource-samples.csv", len(samples), 3, out)
	runs, out := readFixture[recorder.Run](t, "runs.csv")
	check("runs.csv", len(runs), 3, out)
	conds, out := readFixture[recorder.Condition](t, "conditions.csv")
	check("conditions.csv", len(conds), 2, out)

	// Spot-check that cells land in the right fields.
	if r := reqs[2]; r.Seq != 2 || !math.IsNaN(r.ConnectMS) || r.LatencyMS != 10000 || r.Status != 0 ||
		r.Error != `dial tcp 127.0.0.1:8000: connect: connection refused, after "retry"` {
		t.Errorf("requests.csv row 3 = %+v", r)
	}
	if r := reqs[0]; r.Protocol != "HTTP/1.1" || r.Conn != "127.0.0.1:43211" || r.Stream != 0 || r.Shard != 0 {
		t.Errorf("requests.csv row 1 = %+v", r)
	}
	if r := reqs[3]; r.Error != "timeout\nawaiting headers" || r.ConnectMS != 0.1 {
		t.Errorf("requests.csv row 4 = %+v", r)
	}
	if l := larges[1]; l.AppSendS.Valid || l.Complete || l.Bytes != 9437184 || l.ReceiveS != 4.5 {
		t.Errorf("large-responses.csv row 2 = %+v", l)
	}
	if s := samples[1]; s.CPUSeconds != recorder.Some(0.004) || s.ThrottledS != recorder.Some(0.001234) || s.SendQueueBytes != recorder.Some(16384) {
		t.Errorf("resource-samples.csv row 2 = %+v", s)
	}
	r := runs[0]
	if want := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC); !r.StartedAt.Equal(want) || r.StartedAt.Location() != time.UTC {
		t.Errorf("runs.csv started_at = %v, want %v", r.StartedAt, want)
	}
	if r.TempPeakMiB.Valid || r.Components[0].ThrottledMS != recorder.Some(1520.5) || r.Components[1].CPUCores.Valid ||
		r.Components[2].RSSPeakBytes != recorder.Some(18874368) {
		t.Errorf("runs.csv row 1 = %+v", r)
	}
	if c := conds[1]; c.Runs != 3 || c.P95MaxMS != recorder.Some(4) || c.TempPeakMiB != recorder.Some(33.008) {
		t.Errorf("conditions.csv row 2 = %+v", c)
	}
}

// TestReadRejects checks that each invalid fixture fails with a message
// that names what is wrong, where.
func TestReadRejects(t *testing.T) {
	tests := []struct {
		file string
		read func(io.Reader) error
		want string
		is   error
	}{
		{"requests-invalid-header.csv", readErr[recorder.Request],
			`requests.csv: header column 4: want "slow_clients", got "slowclients": header does not match the CSV contract`, recorder.ErrHeader},
		{"requests-invalid-missing-column.csv", readErr[recorder.Request],
			`requests.csv: header has 14 columns, want 19: column 15 "error" is missing: header does not match the CSV contract`, recorder.ErrHeader},
		{"requests-invalid-empty.csv", readErr[recorder.Request],
			`requests.csv: empty input: header does not match the CSV contract`, recorder.ErrHeader},
		{"requests-invalid-columns.csv", readErr[recorder.Request],
			`requests.csv: record on line 3: wrong number of fields: got 15 columns, want 19`, nil},
		{"requests-invalid-number.csv", readErr[recorder.Request],
			`requests.csv line 3, column 12 (latency_ms): "1.5ms": want a finite decimal number: invalid syntax`, recorder.ErrNotNumber},
		{"requests-invalid-status.csv", readErr[recorder.Request],
			`requests.csv line 2, column 13 (status): "": want an integer: invalid syntax`, recorder.ErrNotInteger},
		{"requests-invalid-quote.csv", readErr[recorder.Request],
			`requests.csv: parse error on line 2, column 68: bare " in non-quoted-field`, nil},
		{"large-responses-invalid-bool.csv", readErr[recorder.LargeResponse],
			`large-responses.csv line 2, column 11 (complete): "yes": want "true" or "false"`, recorder.ErrNotBool},
		{"resource-samples-invalid-nan.csv", readErr[recorder.ResourceSample],
			`resource-samples.csv line 2, column 4 (cpu_seconds): "NaN": want a finite decimal number`, recorder.ErrNotNumber},
		{"runs-invalid-time.csv", readErr[recorder.Run],
			`runs.csv line 2, column 6 (started_at): "yesterday": want an RFC 3339 time`, recorder.ErrNotTime},
		{"conditions-invalid-extra-column.csv", readErr[recorder.Condition],
			`conditions.csv: header has 15 columns, want 14: unexpected column 15 "host": header does not match the CSV contract`, recorder.ErrHeader},
		{"conditions-invalid-int.csv", readErr[recorder.Condition],
			`conditions.csv line 2, column 4 (runs): "3.0": want an integer: invalid syntax`, recorder.ErrNotInteger},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			err = tt.read(bytes.NewReader(data))
			if err == nil {
				t.Fatal("ReadAll accepted the file")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q does not wrap %q", err, tt.is)
			}
		})
	}
}

func readErr[T recorder.Row[T]](r io.Reader) error {
	_, err := recorder.ReadAll[T](r)
	return err
}

func TestCellErrorFields(t *testing.T) {
	_, err := recorder.ReadFile[recorder.Request](filepath.Join("testdata", "requests-invalid-number.csv"))
	var ce *recorder.CellError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *CellError", err)
	}
	want := recorder.CellError{File: "requests.csv", Line: 3, Column: 12, Name: "latency_ms", Value: "1.5ms"}
	if ce.File != want.File || ce.Line != want.Line || ce.Column != want.Column || ce.Name != want.Name || ce.Value != want.Value {
		t.Errorf("CellError = %+v, want %+v", *ce, want)
	}
	if !strings.HasPrefix(err.Error(), "read testdata/requests-invalid-number.csv: ") {
		t.Errorf("ReadFile error does not name the path: %v", err)
	}
}

// TestCellErrorLineCountsQuotedNewlines: the line is the input line, not
// the record number, when earlier cells span lines.
func TestCellErrorLineCountsQuotedNewlines(t *testing.T) {
	in := strings.Join(recorder.Header[recorder.LargeResponse](), ",") + "\n" +
		"r1,direct,sync-2,2,1,0,200,1,8,,false,client_error,\"two\nlines\"\n" +
		"r1,direct,sync-2,2,1,1,200,x,8,,false,client_error,\n"
	_, err := recorder.ReadAll[recorder.LargeResponse](strings.NewReader(in))
	var ce *recorder.CellError
	if !errors.As(err, &ce) || ce.Line != 4 || ce.Name != "bytes" {
		t.Fatalf("error = %v, want bytes on line 4", err)
	}
}

func TestReadFileMissing(t *testing.T) {
	_, err := recorder.ReadFile[recorder.Run](filepath.Join(t.TempDir(), "runs.csv"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("error = %v, want fs.ErrNotExist", err)
	}
}

func TestReadHeaderOnly(t *testing.T) {
	rows, err := recorder.ReadAll[recorder.Condition](strings.NewReader(strings.Join(recorder.Header[recorder.Condition](), ",") + "\n"))
	if err != nil || len(rows) != 0 {
		t.Fatalf("ReadAll = %v, %v; want no rows, no error", rows, err)
	}
}

// TestWriteFormats pins the written precision of each kind of column.
func TestWriteFormats(t *testing.T) {
	req := recorder.Request{
		RunID: "r1", Route: "direct", Server: "sync-2", SlowClients: 2, Rep: 3, Seq: 71,
		ScheduledS: 9.1250004, StartS: 9.1259, ScheduleLagMS: -0.0001, ConnectMS: math.NaN(),
		TTFBMS: math.Inf(1), LatencyMS: 1803.4995001, Status: 200, Bytes: 12, Error: "a,\r\nb", Protocol: "HTTP/2", Conn: "[::1]:443", Stream: 7,
	}
	sample := recorder.ResourceSample{
		RunID: "r1", TS: 0.2, Component: "proxy",
		CPUSeconds: recorder.Some(1.23456789), ThrottledPeriods: recorder.Some(2.4), ThrottledS: recorder.Some(0.0000004),
		MemoryBytes: recorder.Some(1e9 + 0.5), RSSBytes: recorder.None(), Processes: recorder.Some(3),
		TempFiles: recorder.Some(0), TempLogicalBytes: recorder.Some(16 << 20), TempAllocatedBytes: recorder.Maybe{Value: math.NaN(), Valid: true},
		SendQueueBytes: recorder.Some(-0.1),
	}
	run := recorder.Run{
		RunID: "r1", StartedAt: time.Date(2025, 3, 1, 13, 0, 0, 500, time.FixedZone("CET", 3600)),
		Status: recorder.RunOK, TempPeakMiB: recorder.Some(32.0004), Components: [3]recorder.ComponentSummary{{CPUCores: recorder.Some(0.24951)}},
	}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"request", string(writeRows(t, []recorder.Request{req})),
			"r1,direct,sync-2,2,3,71,9.125,9.126,0,,,1803.5,200,12,\"a,\nb\",0,HTTP/2,[::1]:443,7\n"},
		{"resource sample", string(writeRows(t, []recorder.ResourceSample{sample})),
			"r1,0.2,proxy,1.234568,2,0,1000000001,,3,0,16777216,,0,,,,\n"},
		{"run", string(writeRows(t, []recorder.Run{run})),
			"r1,,,0,0,2025-03-01T12:00:00.0000005Z,ok,,0,0,0,0,,,,,,,32,0.25,,,,,,,,,,,,,,\n"},
	}
	for _, tt := range tests {
		_, row, _ := strings.Cut(tt.got, "\n")
		if row != tt.want {
			t.Errorf("%s row\n got: %q\nwant: %q", tt.name, row, tt.want)
		}
	}
}

// TestRoundTripRounds: values off the grid come back rounded to it.
func TestRoundTripRounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	rows := make([]recorder.Request, 1000)
	for i := range rows {
		rows[i] = recorder.Request{
			ScheduledS: rng.Float64() * 10, StartS: rng.NormFloat64() * 1e6,
			ScheduleLagMS: rng.ExpFloat64(), ConnectMS: rng.Float64() * 1e-3,
			TTFBMS: rng.Float64() * 1e15, LatencyMS: rng.Float64() * 1e300,
		}
	}
	got, err := recorder.ReadAll[recorder.Request](bytes.NewReader(writeRows(t, rows)))
	if err != nil {
		t.Fatal(err)
	}
	if d := recordertest.DiffRows(rows, got, 1); d != "" {
		t.Fatal(d)
	}
}

func TestNewWriterWritesHeaderNow(t *testing.T) {
	var buf bytes.Buffer
	w, err := recorder.NewWriter[recorder.Condition](&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(recorder.Header[recorder.Condition](), ",") + "\n"
	if buf.String() != want {
		t.Fatalf("after NewWriter: %q, want %q", buf.String(), want)
	}
	if err := w.Write(recorder.Condition{Route: "direct", Runs: 3}); err != nil {
		t.Fatal(err)
	}
	if want += "direct,,0,3,0,,,,,,,,,\n"; buf.String() != want {
		t.Fatalf("after Write: %q, want %q", buf.String(), want)
	}
}

// failAfter accepts n bytes, then fails every write.
type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, f.err
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriterErrors(t *testing.T) {
	diskFull := errors.New("no space left on device")
	if _, err := recorder.NewWriter[recorder.Request](&failAfter{n: 10, err: diskFull}); !errors.Is(err, diskFull) ||
		!strings.HasPrefix(err.Error(), "write requests.csv header: ") {
		t.Errorf("NewWriter error = %v, want the header write to fail with %v", err, diskFull)
	}

	headerLen := len(strings.Join(recorder.Header[recorder.Request](), ",")) + 1
	w, err := recorder.NewWriter[recorder.Request](&failAfter{n: headerLen + 5, err: diskFull})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Write(recorder.Request{RunID: "r1"})
	if !errors.Is(err, diskFull) || !strings.HasPrefix(err.Error(), "write requests.csv row: ") {
		t.Errorf("Write error = %v, want %v", err, diskFull)
	}
	if err := w.Write(recorder.Request{}); !errors.Is(err, diskFull) {
		t.Errorf("second Write error = %v, want the error to stick", err)
	}
}

// TestWriterConcurrent: rows written from several goroutines come out whole.
func TestWriterConcurrent(t *testing.T) {
	var buf bytes.Buffer
	w, err := recorder.NewWriter[recorder.Request](&buf)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if err := w.Write(recorder.Request{RunID: "r", Seq: g*1000 + i, Error: "x,y\nz"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rows, err := recorder.ReadAll[recorder.Request](&buf)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, r := range rows {
		if r.Error != "x,y\nz" || seen[r.Seq] {
			t.Fatalf("mangled or duplicate row %+v", r)
		}
		seen[r.Seq] = true
	}
	if len(seen) != 1600 {
		t.Fatalf("read %d rows, want 1600", len(seen))
	}
}

// TestReadKeepsRowsBeforeError: a file with a short row (here a
// complete line, so not a killed writer's cut row: TestReadCutLastRow)
// still yields every row before it.
func TestReadKeepsRowsBeforeError(t *testing.T) {
	rows := []recorder.Request{{RunID: "r1", Seq: 0, Status: 200}, {RunID: "r1", Seq: 1, Status: 200}}
	out := writeRows(t, rows)
	cut := append(out[:len(out)-9:len(out)-9], '\n') // the second row loses its last columns
	got, err := recorder.ReadAll[recorder.Request](bytes.NewReader(cut))
	if !errors.Is(err, csv.ErrFieldCount) {
		t.Fatalf("error = %v, want csv.ErrFieldCount", err)
	}
	if d := recordertest.DiffRows(rows[:1], got, 0); d != "" {
		t.Errorf("rows before the cut: %s", d)
	}

	bad := bytes.Replace(out, []byte(",1,"), []byte(",x,"), 1) // seq of the second row
	got, err = recorder.ReadAll[recorder.Request](bytes.NewReader(bad))
	var ce *recorder.CellError
	if !errors.As(err, &ce) || ce.Name != "seq" || ce.Line != 3 {
		t.Fatalf("error = %v, want seq on line 3", err)
	}
	if d := recordertest.DiffRows(rows[:1], got, 0); d != "" {
		t.Errorf("rows before the bad cell: %s", d)
	}
}

// On a disk that fills up, CreateFile's and AppendFile's files keep every
// row whose Write succeeded, complete, and no part of the row that failed:
// the file stays readable, and appendable once there is room again.
func TestFileWriterDiskFull(t *testing.T) {
	slowlabtest.Timing(t)
	dir := slowlabtest.TinyDisk(t, 16<<10)
	row := func(i int) recorder.Request {
		return recorder.Request{RunID: "disk-full", Seq: i, Status: 200, LatencyMS: 1.5, Error: strings.Repeat("x", 40)}
	}
	filler := filepath.Join(dir, "other-data")
	if err := os.WriteFile(filler, make([]byte, 4<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := recorder.CreateFile[recorder.Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	written := 0
	for ; written < 10000; written++ {
		if err := w.Write(row(written)); err != nil {
			if !strings.Contains(err.Error(), "no space left on device") {
				t.Fatalf("Write %d: %v", written, err)
			}
			break
		}
	}
	if written == 0 || written == 10000 {
		t.Fatalf("%d rows written: the disk should fill up after some", written)
	}
	if err := w.Close(); err == nil {
		t.Error("Close after a failed write: nil, want the write error again")
	}
	rows, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, recorder.FileName[recorder.Request]()))
	if err != nil || len(rows) != written || rows[len(rows)-1] != row(written-1) {
		t.Fatalf("read back %d rows (%v), want the %d written", len(rows), err, written)
	}

	// With room made again, the file takes rows where it ended.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	a, err := recorder.AppendFile[recorder.Request](dir)
	if err != nil {
		t.Fatalf("AppendFile after a full disk: %v", err)
	}
	appended := 0
	for ; appended < 10000; appended++ {
		if err := a.Write(row(written + appended)); err != nil {
			break
		}
	}
	a.Close()
	if appended == 0 {
		t.Fatal("no row appended after room was made")
	}
	rows, err = recorder.ReadFile[recorder.Request](filepath.Join(dir, recorder.FileName[recorder.Request]()))
	if err != nil || len(rows) != written+appended {
		t.Fatalf("after append: %d rows (%v), want %d", len(rows), err, written+appended)
	}
}
