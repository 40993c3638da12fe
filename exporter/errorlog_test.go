package exporter

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The temp dirs of the fixture logs' runs (testdata/errorlog, recorded by
// `slowlab reproduce temp-disk-full --quick`: NGINX 1.22.1 and the
// embedded proxy, each into its 8 MiB tmpfs, then on disk).
const (
	nginxTempDir     = "/tmp/slowlab-run-606059896/proxy_temp"
	nginxBodyDir     = "/tmp/slowlab-run-606059896/nginx/client_body_temp"
	nginxDiskTemp    = "/tmp/slowlab-run-3168404714/proxy_temp"
	fixtureLogsGlob  = "testdata/errorlog/*.log"
	embeddedTempDir  = "/tmp/slowlab-run-1538945527/proxy-temp"
	embeddedDiskTemp = "/tmp/slowlab-run-1333237397/proxy-temp"
)

func TestIsTempWriteFailure(t *testing.T) {
	dirs := []string{nginxTempDir, nginxBodyDir, "/var/lib/nginx/proxy"}
	const rest = ` while reading upstream, client: 127.0.0.1, server: , request: "GET /large HTTP/1.1"`
	for _, tt := range []struct {
		line string
		want bool
	}{
		// NGINX's, as recorded (testdata/errorlog/nginx-tmpfs.log).
		{`2026/12/01 18:51:16 [crit] 7640#7640: *3 pwritev() "` + nginxTempDir + `/0000000001" failed (28: No space left on device)` + rest, true},
		// The other forms of ngx_files.c: pwrite/write/writev, a short write.
		{`[crit] 1#1: *9 pwrite() "/var/lib/nginx/proxy/3/00/0000000003" failed (28: No space left on device)` + rest, true},
		{`[crit] 1#1: *9 write() "/var/lib/nginx/proxy/0000000004" failed (28: No space left on device)` + rest, true},
		{`[crit] 1#1: *9 writev() "` + nginxBodyDir + `/0000000005" failed (28: No space left on device) while reading client request body`, true},
		{`[crit] 1#1: *3 pwritev() "` + nginxTempDir + `/0000000001" has written only 32768 of 49152` + rest, true},
		// The embedded proxy's (proxy/spool.go), lower case, Go-quoted.
		{`2026/12/01 18:52:03 [crit] pwrite() "/var/lib/nginx/proxy/proxy-temp-1" failed (28: no space left on device) while reading upstream, wrote 32768 of 65536 bytes`, true},
		{`[crit] pwrite() "/var/lib/nginx/proxy/x" FAILED (28: NO SPACE LEFT ON DEVICE)`, true},
		// Not counted: the buffering warning, other errors, other files,
		// paths that only look like a temp dir, other syscalls.
		{`[warn] 1#1: *3 an upstream response is buffered to a temporary file ` + nginxTempDir + `/0000000001` + rest, false},
		{`[crit] 1#1: *3 pwritev() "` + nginxTempDir + `/0000000001" failed (5: Input/output error)` + rest, false},
		{`[crit] 1#1: *3 open() "` + nginxTempDir + `/0000000001" failed (28: No space left on device)` + rest, false},
		{`[crit] open() temp file in "/var/lib/nginx/proxy" failed while reading upstream: no space left on device`, false},
		{`[alert] 1#1: write() "/var/log/nginx/access.log" failed (28: No space left on device)`, false},
		{`[crit] 1#1: pwritev() "` + nginxTempDir + `" failed (28: No space left on device)`, false}, // the dir itself
		{`[crit] 1#1: pwritev() "` + nginxTempDir + `-old/1" failed (28: No space left on device)`, false},
		{`[crit] 1#1: pwritev() "relative/proxy_temp/1" failed (28: No space left on device)`, false},
		{`[crit] 1#1: overwrite() "/var/lib/nginx/proxy/1" failed (28: No space left on device)`, false},
		{`[crit] 1#1: pwritev() "/var/lib/nginx/proxy/1"`, false},
		{`pwritev() "`, false},
		{``, false},
	} {
		if got := isTempWriteFailure([]byte(tt.line), dirs); got != tt.want {
			t.Errorf("isTempWriteFailure(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

// TestFixtureLogs counts the recorded logs: each failed write once, the
// runs on disk none.
func TestFixtureLogs(t *testing.T) {
	dirs := []string{nginxTempDir, nginxBodyDir, nginxDiskTemp, embeddedTempDir, embeddedDiskTemp}
	want := map[string]int{"nginx-tmpfs.log": 2, "nginx-disk.log": 0, "proxy-tmpfs.log": 2, "proxy-disk.log": 0}
	files, _ := filepath.Glob(fixtureLogsGlob)
	if len(files) != len(want) {
		t.Fatalf("fixture logs %v, want %d", files, len(want))
	}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if isTempWriteFailure(sc.Bytes(), dirs) {
				n++
			}
		}
		f.Close()
		if w := want[filepath.Base(file)]; n != w {
			t.Errorf("%s: %d failed temp writes, want %d", file, n, w)
		}
	}
}

// FuzzIsTempWriteFailure seeds from the fixture logs' lines. A line that
// counts names a path below a temp dir; the errno text's case never
// changes the verdict; nothing panics.
func FuzzIsTempWriteFailure(f *testing.F) {
	files, _ := filepath.Glob(fixtureLogsGlob)
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			f.Add(strings.TrimSuffix(line, "\n"))
		}
	}
	dirs := []string{nginxTempDir, nginxBodyDir, embeddedTempDir}
	f.Fuzz(func(t *testing.T, line string) {
		got := isTempWriteFailure([]byte(line), dirs)
		if got && !strings.Contains(line, `() "/`) {
			t.Fatalf("isTempWriteFailure(%q) = true without a quoted absolute path", line)
		}
		// The errno text after the last quote: not in the path.
		const errno = "(28: No space left on device)"
		if i := strings.Index(line, errno); i >= 0 && i > strings.LastIndex(line, `"`) {
			if other := isTempWriteFailure([]byte(line[:i]+strings.ToUpper(errno)+line[i+len(errno):]), dirs); other != got {
				t.Fatalf("isTempWriteFailure(%q) = %v, but %v with the errno text upper-cased", line, got, other)
			}
		}
		if got && isTempWriteFailure([]byte(line), nil) {
			t.Fatalf("isTempWriteFailure(%q) = true with no temp dirs", line)
		}
	})
}

// logFile is an error log the test appends to, as the proxy does.
type logFile struct {
	t    *testing.T
	path string
}

func (l logFile) append(lines ...string) {
	l.t.Helper()
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		l.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
		l.t.Fatal(err)
	}
}

// TestErrorLogCollector: the counter counts what is appended after the
// exporter started, line by line as lines end, from the start of a file
// that appears, is rotated or truncated, and never goes down; a missing
// file is 0 and no failure.
func TestErrorLogCollector(t *testing.T) {
	dir := t.TempDir()
	temp := filepath.Join(dir, "proxy_temp")
	fail := `2026/12/01 18:51:16 [crit] 7640#7640: *3 pwritev() "` + temp + `/0000000001" failed (28: No space left on device) while reading upstream` + "\n"
	other := "2026/12/01 18:51:16 [warn] 7640#7640: *3 an upstream response is buffered to a temporary file " + temp + "/0000000001\n"
	old := logFile{t, filepath.Join(dir, "old.log")}
	old.append(fail, fail, other) // before the exporter: not counted
	cur := logFile{t, filepath.Join(dir, "error.log")}
	cfg := Config{Groups: []Group{
		{Name: "proxy", Selectors: []string{"pid:1"}, TempDirs: []string{temp}, ErrorLogs: []string{old.path, cur.path}},
		{Name: "app", Selectors: []string{"pid:1"}},
	}}
	e, err := New(cfg, Options{Collectors: onlyCollector("errorlog")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const metric = `slowlab_proxy_temp_write_errors_total{proxy}`
	check := func(step string, want float64) {
		t.Helper()
		v := values(t, e)
		if got, ok := v[metric]; !ok || got != want {
			t.Errorf("%s: %s = %v (present %v), want %v", step, metric, got, ok, want)
		}
		if _, ok := v[`slowlab_proxy_temp_write_errors_total{app}`]; ok {
			t.Errorf("%s: a counter for group app, which names no error log", step)
		}
		if s := v[`slowlab_exporter_collector_success{errorlog}`]; s != 1 {
			t.Errorf("%s: collector success %v, want 1", step, s)
		}
	}
	check("history and a missing file", 0)
	cur.append(other, fail)
	check("the file appears", 1)
	old.append(fail, fail[:40]) // a line not yet ended
	check("appended, half a line", 2)
	old.append(fail[40:])
	check("the line ends", 3)
	check("nothing new", 3)

	// Rotation: renamed away, a new file (another inode) in its place.
	if err := os.Rename(cur.path, cur.path+".1"); err != nil {
		t.Fatal(err)
	}
	check("rotated away, no new file yet", 3)
	cur.append(fail)
	check("a new file", 4)
	// Truncation: shorter than the offset, read from its start.
	if err := os.Truncate(old.path, 0); err != nil {
		t.Fatal(err)
	}
	old.append(fail)
	check("truncated", 5)
	// Removed: the counter keeps its count.
	if err := os.Remove(old.path); err != nil {
		t.Fatal(err)
	}
	check("removed", 5)
}

// TestErrorLogBoundedRead: a scrape reads at most maxRead bytes of a
// file, the next ones the rest; a line longer than the read buffer is
// skipped whole.
func TestErrorLogBoundedRead(t *testing.T) {
	dir := t.TempDir()
	temp := filepath.Join(dir, "proxy_temp")
	fail := `[crit] 1#1: *3 pwritev() "` + temp + `/0000000001" failed (28: No space left on device) while reading upstream` + "\n"
	l := logFile{t, filepath.Join(dir, "error.log")}
	long := strings.Repeat("x", 3*errorLogChunk) + fail // one line: not counted
	l.append(strings.Repeat(fail, 1000), long, fail)
	f := &errorLogFile{}
	maxRead := int64(64 * len(fail))
	reads := 0
	for f.offset < int64(1000*len(fail)+len(long)+len(fail)) {
		before := f.offset
		if err := f.read(l.path, []string{temp}, maxRead); err != nil {
			t.Fatal(err)
		}
		if f.offset-before > maxRead {
			t.Fatalf("read %d bytes, bound %d", f.offset-before, maxRead)
		}
		if f.offset == before {
			t.Fatalf("no progress at offset %d", before)
		}
		reads++
	}
	if f.count != 1001 {
		t.Errorf("counted %d, want 1001 (the long line skipped)", f.count)
	}
	if reads < 1000/64 {
		t.Errorf("%d reads, want at least %d", reads, 1000/64)
	}
}
