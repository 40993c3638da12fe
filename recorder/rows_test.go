package recorder

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every row type has its tests here: a round-trip property, the coverage
// of its fields by its columns, and a fuzz target. TestEveryRowTypeIsTested
// fails until a new row type is added to each list.

// TestRoundTrip is the property test: rows whose values lie on each
// column's grid read back exactly as written, for every row type.
func TestRoundTrip(t *testing.T) {
	t.Run("requests", roundTrip[Request])
	t.Run("large-responses", roundTrip[LargeResponse])
	t.Run("resource-samples", roundTrip[ResourceSample])
	t.Run("runs", roundTrip[Run])
	t.Run("conditions", roundTrip[Condition])
	t.Run("probes", roundTrip[Probe])
	t.Run("groups", roundTrip[LongPollGroup])
	t.Run("longpoll-runs", roundTrip[LongPollRun])
	t.Run("gap", roundTrip[GapRow])
	t.Run("gap-requests", roundTrip[GapRequest])
	t.Run("gap-path", roundTrip[GapPath])
	t.Run("gap-runs", roundTrip[GapRun])
	t.Run("hops", roundTrip[Hop])
	t.Run("sweep", roundTrip[SweepCell])
	t.Run("uploads", roundTrip[Upload])
	t.Run("upload-runs", roundTrip[UploadRun])
	t.Run("idle-conns", roundTrip[IdleConn])
	t.Run("idle-runs", roundTrip[IdleRun])
	t.Run("stalled-downloads", roundTrip[StalledDownload])
	t.Run("stalled-runs", roundTrip[StalledRun])
	t.Run("sse-events", roundTrip[SSEEvent])
	t.Run("sse-streams", roundTrip[SSEStream])
	t.Run("sse-runs", roundTrip[SSERun])
	t.Run("temp-runs", roundTrip[TempRun])
	t.Run("ws-sessions", roundTrip[WSSession])
	t.Run("ws-runs", roundTrip[WSRun])
	t.Run("h2-streams", roundTrip[H2Stream])
	t.Run("h2-runs", roundTrip[H2Run])
}

// TestColumnsCoverEveryField: every field of every row struct has exactly
// one column.
func TestColumnsCoverEveryField(t *testing.T) {
	checkCoverage[Request](t)
	checkCoverage[LargeResponse](t)
	checkCoverage[ResourceSample](t)
	checkCoverage[Run](t)
	checkCoverage[Condition](t)
	checkCoverage[Probe](t)
	checkCoverage[LongPollGroup](t)
	checkCoverage[LongPollRun](t)
	checkCoverage[GapRow](t)
	checkCoverage[GapRequest](t)
	checkCoverage[GapPath](t)
	checkCoverage[GapRun](t)
	checkCoverage[Hop](t)
	checkCoverage[SweepCell](t)
	checkCoverage[Upload](t)
	checkCoverage[UploadRun](t)
	checkCoverage[IdleConn](t)
	checkCoverage[IdleRun](t)
	checkCoverage[StalledDownload](t)
	checkCoverage[StalledRun](t)
	checkCoverage[SSEEvent](t)
	checkCoverage[SSEStream](t)
	checkCoverage[SSERun](t)
	checkCoverage[WSSession](t)
	checkCoverage[WSRun](t)
	checkCoverage[H2Stream](t)
	checkCoverage[H2Run](t)
	checkCoverage[TempRun](t)
}

func FuzzReadRequests(f *testing.F)         { fuzzRead[Request](f) }
func FuzzReadLargeResponses(f *testing.F)   { fuzzRead[LargeResponse](f) }
func FuzzReadResourceSamples(f *testing.F)  { fuzzRead[ResourceSample](f) }
func FuzzReadRuns(f *testing.F)             { fuzzRead[Run](f) }
func FuzzReadConditions(f *testing.F)       { fuzzRead[Condition](f) }
func FuzzReadProbes(f *testing.F)           { fuzzRead[Probe](f) }
func FuzzReadGroups(f *testing.F)           { fuzzRead[LongPollGroup](f) }
func FuzzReadLongPollRuns(f *testing.F)     { fuzzRead[LongPollRun](f) }
func FuzzReadGap(f *testing.F)              { fuzzRead[GapRow](f) }
func FuzzReadGapRequests(f *testing.F)      { fuzzRead[GapRequest](f) }
func FuzzReadGapPath(f *testing.F)          { fuzzRead[GapPath](f) }
func FuzzReadGapRuns(f *testing.F)          { fuzzRead[GapRun](f) }
func FuzzReadHops(f *testing.F)             { fuzzRead[Hop](f) }
func FuzzReadSweep(f *testing.F)            { fuzzRead[SweepCell](f) }
func FuzzReadUploads(f *testing.F)          { fuzzRead[Upload](f) }
func FuzzReadUploadRuns(f *testing.F)       { fuzzRead[UploadRun](f) }
func FuzzReadIdleConns(f *testing.F)        { fuzzRead[IdleConn](f) }
func FuzzReadIdleRuns(f *testing.F)         { fuzzRead[IdleRun](f) }
func FuzzReadStalledDownloads(f *testing.F) { fuzzRead[StalledDownload](f) }
func FuzzReadStalledRuns(f *testing.F)      { fuzzRead[StalledRun](f) }
func FuzzReadSSEEvents(f *testing.F)        { fuzzRead[SSEEvent](f) }
func FuzzReadSSEStreams(f *testing.F)       { fuzzRead[SSEStream](f) }
func FuzzReadSSERuns(f *testing.F)          { fuzzRead[SSERun](f) }
func FuzzReadTempRuns(f *testing.F)         { fuzzRead[TempRun](f) }
func FuzzReadWSSessions(f *testing.F)       { fuzzRead[WSSession](f) }
func FuzzReadWSRuns(f *testing.F)           { fuzzRead[WSRun](f) }
func FuzzReadH2Streams(f *testing.F)        { fuzzRead[H2Stream](f) }
func FuzzReadH2Runs(f *testing.F)           { fuzzRead[H2Run](f) }

func roundTrip[T Row[T]](t *testing.T) {
	rng := rand.New(rand.NewPCG(20250301, uint64(len(FileName[T]()))))
	for batch := range 50 {
		rows := make([]T, 1+rng.IntN(100))
		for i := range rows {
			rows[i] = randomRow[T](rng, false)
		}
		out := writeRows(t, rows)
		got, err := ReadAll[T](bytes.NewReader(out))
		if err != nil {
			t.Fatalf("batch %d: read back: %v\n%s", batch, err, out)
		}
		if d := diffRows(rows, got, 0); d != "" {
			t.Fatalf("batch %d: %s\n%s", batch, d, out)
		}
	}
}

// fuzzRead seeds from testdata/<name>.csv and testdata/<name>-invalid-*.csv
// where they exist, and from files of generated rows with some broken
// variants. ReadAll must never panic, and whatever it accepts must survive
// a write/read round trip: the rows come back equal up to the columns'
// precision, and writing them again is a fixed point.
func fuzzRead[T Row[T]](f *testing.F) {
	base := strings.TrimSuffix(FileName[T](), ".csv")
	valid, err := filepath.Glob(filepath.Join("testdata", base+".csv"))
	if err != nil {
		f.Fatal(err)
	}
	invalid, err := filepath.Glob(filepath.Join("testdata", base+"-invalid-*.csv"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range slices.Concat(valid, invalid) {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range generatedSeeds[T]() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ReadAll[T](bytes.NewReader(data)); err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		checkRoundTrip[T](t, data)
	})
}

// generatedSeeds returns CSV inputs for T's fuzzer: valid files of random
// rows, the same cut in half and with a separator changed, a header alone
// and a row of empty cells.
func generatedSeeds[T Row[T]]() [][]byte {
	rng := rand.New(rand.NewPCG(uint64(len(FileName[T]())), 1))
	var seeds [][]byte
	for range 3 {
		var buf bytes.Buffer
		w, _ := NewWriter[T](&buf)
		for range 1 + rng.IntN(4) {
			w.Write(randomRow[T](rng, false))
		}
		b := buf.Bytes()
		seeds = append(seeds, b, b[:len(b)/2], bytes.Replace(b, []byte(","), []byte(";"), 1))
	}
	header := strings.Join(Header[T](), ",") + "\n"
	return append(seeds, []byte(header), []byte(header+strings.Repeat(",", len(Header[T]())-1)+"\n"))
}

// checkRoundTrip reads data, which must be valid, writes the rows, reads
// them back, and writes them again.
func checkRoundTrip[T Row[T]](t *testing.T, data []byte) []T {
	t.Helper()
	rows, err := ReadAll[T](bytes.NewReader(data))
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	out := writeRows(t, rows)
	again, err := ReadAll[T](bytes.NewReader(out))
	if err != nil {
		t.Fatalf("cannot read back what was written: %v\ninput:\n%q\nwritten:\n%q", err, data, out)
	}
	if d := diffRows(rows, again, 1); d != "" {
		t.Fatalf("round trip changed a row: %s\ninput:\n%q\nwritten:\n%q", d, data, out)
	}
	if out2 := writeRows(t, again); !bytes.Equal(out, out2) {
		t.Fatalf("writing is not a fixed point\nfirst:\n%q\nsecond:\n%q", out, out2)
	}
	return rows
}

// TestEveryRowTypeIsTested reads the package's source: every type with a
// schema method (a row type) must appear in TestRoundTrip,
// TestColumnsCoverEveryField and a Fuzz target.
func TestEveryRowTypeIsTested(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var rowTypes []string
	tested := map[string]map[string]bool{} // test function -> row types it instantiates
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if fd.Recv != nil && fd.Name.Name == "Schema" && !strings.HasSuffix(name, "_test.go") {
				rowTypes = append(rowTypes, receiverName(fd.Recv.List[0].Type))
				continue
			}
			if fn := fd.Name.Name; fn == "TestRoundTrip" || fn == "TestColumnsCoverEveryField" || strings.HasPrefix(fn, "Fuzz") {
				key := fn
				if strings.HasPrefix(fn, "Fuzz") {
					key = "a Fuzz target"
				}
				if tested[key] == nil {
					tested[key] = map[string]bool{}
				}
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					if ix, ok := n.(*ast.IndexExpr); ok {
						if id, ok := ix.Index.(*ast.Ident); ok {
							tested[key][id.Name] = true
						}
					}
					return true
				})
			}
		}
	}
	if !slices.Contains(rowTypes, "Request") {
		t.Fatalf("found row types %v: the search for schema methods is broken", rowTypes)
	}
	for _, typ := range rowTypes {
		for _, where := range []string{"TestRoundTrip", "TestColumnsCoverEveryField", "a Fuzz target"} {
			if !tested[where][typ] {
				t.Errorf("row type %s is not in %s", typ, where)
			}
		}
	}
}

func receiverName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
