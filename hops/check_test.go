package hops

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// A synthetic NGINX sample (testdata/nginx-899m.csv, as hops.csv has it)
// whose sockets say NGINX holds 899 MiB, split by derivation into its
// memory and 899 MiB "in the temp file", while its temp files hold 1 MiB:
// Check fails it (the derived split is no measurement), naming the
// download and the proxy; without the temp files' rows (as hops.csv was
// written before they were measured) it fails naming them missing; with
// temp files that do hold the 899 MiB it passes.
func TestCheckNginxTempFileClaim(t *testing.T) {
	rows, err := recorder.ReadFile[recorder.Hop]("testdata/nginx-899m.csv")
	if err != nil {
		t.Fatal(err)
	}
	bad := Check(rows).Violations
	if len(bad) != 2 || bad[0].Download != 0 || bad[1].Download != -1 {
		t.Fatalf("Check returned %v, want violations of download 0 and of the proxy", bad)
	}
	for _, v := range bad {
		if v.Unaccounted < 800<<20 {
			t.Errorf("%s: want about 898 MiB beyond what the proxy can hold", v)
		}
	}
	t.Logf("%s\n%s", bad[0], bad[1])

	var old []recorder.Hop
	for _, r := range rows {
		if r.Download != -1 {
			old = append(old, r)
		}
	}
	bad = Check(old).Violations
	if len(bad) != 1 || !slices.Contains(bad[0].Missing, "proxy_temp_file_size") {
		t.Fatalf("without the temp files' rows: %v, want one violation naming proxy_temp_file_size missing", bad)
	}

	held := slices.Clone(rows)
	for i := range held {
		if held[i].Hop == "proxy_temp_file_size" {
			held[i].Bytes = 899 << 20
		}
	}
	if bad := Check(held).Violations; len(bad) != 0 {
		t.Fatalf("temp files holding the 899 MiB: %v", bad)
	}
}

// A sample out of its time order (its counts less than the sample's
// before) is a violation naming the count that fell.
func TestCheckMonotonic(t *testing.T) {
	rows, err := recorder.ReadFile[recorder.Hop]("testdata/nginx-899m.csv")
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if rows[i].Hop == "proxy_temp_file_size" {
			rows[i].Bytes = 899 << 20
		}
	}
	later := slices.Clone(rows)
	for i := range later {
		later[i].TS = 2
		if later[i].Hop == recorder.HopClientRead || later[i].Hop == recorder.HopClientRecvQueue {
			later[i].Bytes /= 2
		}
	}
	bad := Check(append(rows, later...)).Violations
	if len(bad) == 0 || !strings.Contains(bad[len(bad)-1].String(), "client_read fell from 1040384 (at 1.000 s) to 520192") {
		t.Fatalf("violations %v, want client_read falling at 2 s", bad)
	}
}

// TempFiles finds the temp files this process holds open under its dirs,
// unlinked ones included, each once however many fds it has, and leaves
// out request-body temp files and files elsewhere.
func TestTempFilesSize(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	open := func(dir, name string, size int) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := f.Write(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
		return f
	}
	a := open(dir, "0000000001", 3<<20)
	if err := os.Remove(a.Name()); err != nil { // unlinked, as NGINX does
		t.Fatal(err)
	}
	again, err := os.Open(filepath.Join("/proc/self/fd", strconv.Itoa(int(a.Fd()))))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	open(dir, "proxy-temp-1", 5000)
	open(dir, "client-body-temp-1", 7000)
	if err := os.Mkdir(filepath.Join(dir, "client_body_temp"), 0o700); err != nil {
		t.Fatal(err)
	}
	open(filepath.Join(dir, "client_body_temp"), "0000000002", 9000)
	open(other, "0000000003", 11000)
	got, err := TempFiles{PIDs: []int{os.Getpid()}, Dirs: []string{dir}}.Size()
	if err != nil || got != 3<<20+5000 {
		t.Fatalf("Size = %d, %v; want %d (the unlinked file once and proxy-temp-1)", got, err, 3<<20+5000)
	}
	if _, err := (TempFiles{PIDs: []int{1 << 30}, Dirs: []string{dir}}).Size(); err == nil || !strings.Contains(err.Error(), "pid 1073741824") {
		t.Errorf("a process that does not exist: %v, want an error naming it", err)
	}
}

// Check reads hops.csv rows from a file: whatever rows it is given, it
// returns only violations it can say why of, and never panics.
func FuzzCheck(f *testing.F) {
	for _, name := range []string{"testdata/nginx-899m.csv", "testdata/nginx-buffered-hops.csv", "testdata/gunicorn-direct-hops.csv"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, err := recorder.ReadAll[recorder.Hop](bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, v := range Check(rows).Violations {
			if v.Reason == "" && abs(v.Unaccounted) <= v.Allowed {
				t.Fatalf("violation within its allowance: %+v", v)
			}
		}
	})
}

// app_written read from the app's socket may fall by what one ACK
// acknowledges while the kernel fills the sample (8 KiB was seen), not by
// more: a fall of 1 MiB is a sample out of its time order.
func TestCheckWrittenJitter(t *testing.T) {
	fell := func(by int64) []Violation {
		return fallBy(t, "testdata/gunicorn-direct-hops.csv", 0, func(h recorder.Hop) bool {
			return h.Hop == recorder.HopAppWritten && h.Source == recorder.HopSourceKernel
		}, by, "app_written fell")
	}
	if v := fell(8 << 10); len(v) != 0 {
		t.Errorf("an 8 KiB fall: %v, want none", v)
	}
	if v := fell(1 << 20); len(v) == 0 {
		t.Error("a 1 MiB fall passed the check")
	}
}

// fallBy checks the first sample at or after row at of the run in file
// followed, 50 ms later, by the same sample with the hops which selects
// by bytes less, and returns the violations whose reason has reason.
func fallBy(t *testing.T, file string, at int, which func(recorder.Hop) bool, by int64, reason string) []Violation {
	t.Helper()
	rows, err := recorder.ReadFile[recorder.Hop](file)
	if err != nil {
		t.Fatal(err)
	}
	var first []recorder.Hop
	ts := rows[at].TS
	for _, r := range rows {
		if r.TS == ts {
			first = append(first, r)
		}
	}
	later := slices.Clone(first)
	for i := range later {
		later[i].TS = ts + 0.05
		if which(later[i]) {
			later[i].Bytes -= by
		}
	}
	var out []Violation
	for _, v := range Check(append(slices.Clone(first), later...)).Violations {
		if strings.Contains(v.Reason, reason) {
			out = append(out, v)
		}
	}
	return out
}

// TestCheckReadJitter: client_read may fall by what arrives while the
// kernel fills the sample (8,023 bytes was seen), not by more: a fall of
// 1 MiB is a sample out of its time order.
func TestCheckReadJitter(t *testing.T) {
	fell := func(by int64) []Violation {
		rows, err := recorder.ReadFile[recorder.Hop]("testdata/nginx-buffered-hops.csv")
		if err != nil {
			t.Fatal(err)
		}
		return fallBy(t, "testdata/nginx-buffered-hops.csv", len(rows)/2, func(h recorder.Hop) bool { return h.Hop == recorder.HopClientRead }, by, "client_read fell")
	}
	if v := fell(8023); len(v) != 0 {
		t.Errorf("an 8,023-byte fall: %v, want none", v)
	}
	if v := fell(1 << 20); len(v) == 0 {
		t.Error("a 1 MiB fall passed the check")
	}
}
