package recorder

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

const benchRows = 100_000

// benchRequests returns n rows like those of a slow-client run.
func benchRequests(n int) []Request {
	rows := make([]Request, n)
	for i := range rows {
		sched := 0.25 + float64(i%72)*0.125
		rows[i] = Request{
			RunID: "proxy-buffering-off-sync-2-s2-r3", Route: "proxy-buffering-off", Server: "sync-2",
			SlowClients: 2, Rep: 3, Seq: i % 72, ScheduledS: sched, StartS: sched + 0.000734,
			ScheduleLagMS: 0.734, ConnectMS: 0.112, TTFBMS: 1803.412 + float64(i%7), LatencyMS: 1803.5 + float64(i%7),
			Status: 200, Bytes: 12,
		}
	}
	return rows
}

// benchmarkWrite writes benchRows requests per iteration, flushing each
// row as Writer always does, and reports the cost per row.
func benchmarkWrite(b *testing.B, open func() (io.Writer, func())) {
	rows := benchRequests(benchRows)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		dst, done := open()
		w, err := NewWriter[Request](dst)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rows {
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		done()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	total := float64(b.N) * benchRows
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/row")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/total, "allocs/row")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/total, "B/row")
}

// BenchmarkWriteRequests measures encoding and CSV formatting alone.
func BenchmarkWriteRequests(b *testing.B) {
	var buf bytes.Buffer
	benchmarkWrite(b, func() (io.Writer, func()) {
		buf.Reset()
		return &buf, func() {}
	})
}

// BenchmarkWriteRequestsFile adds the write(2) per row that flushing costs.
func BenchmarkWriteRequestsFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "requests.csv")
	benchmarkWrite(b, func() (io.Writer, func()) {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		return f, func() {
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkReadRequests(b *testing.B) {
	var buf bytes.Buffer
	w, err := NewWriter[Request](&buf)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range benchRequests(benchRows) {
		if err := w.Write(r); err != nil {
			b.Fatal(err)
		}
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		rows, err := ReadAll[Request](bytes.NewReader(data))
		if err != nil || len(rows) != benchRows {
			b.Fatal(len(rows), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*benchRows), "ns/row")
}
