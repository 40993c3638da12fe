package exporter

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestIsRequestBodyTemp(t *testing.T) {
	for path, want := range map[string]bool{
		"/run/nginx/client_body_temp/0000000001":                   true,
		"/var/lib/nginx/body/0000000007":                           true,
		"/var/cache/nginx/client_temp/0000000002":                  true,
		"/tmp/slowlab-proxy/client_body_temp/client-body-temp-123": true,
		"/srv/bodies/client-body-temp-9":                           true, // the embedded proxy's, elsewhere
		"/var/lib/nginx/proxy/0000000003":                          false,
		"/tmp/slowlab-proxy/proxy-temp-1":                          false,
		"/tmp/body-of-work/proxy-temp-2":                           false,
	} {
		if got := isRequestBodyTemp(path); got != want {
			t.Errorf("isRequestBodyTemp(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestRequestBodyTempFiles: this process holds a response temp file and
// an unlinked request-body temp file open under a temp dir; both count in
// the totals, the body's alone in the request-body metrics.
func TestRequestBodyTempFiles(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	open := func(sub, name string, size int) {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, sub, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := f.Write([]byte(strings.Repeat("x", size))); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(f.Name()); err != nil { // as the proxies do
			t.Fatal(err)
		}
	}
	open("proxy_temp", "0000000001", 3000)
	open("client_body_temp", "0000000002", 5000)
	c := &tempFilesCollector{fds: newFDWalker("/proc")}
	target := Target{Group: "proxy", PIDs: []int{os.Getpid()}, TempDirs: []string{dir}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collectorFunc(func(ch chan<- prometheus.Metric) {
		if err := c.Update(context.Background(), []Target{target}, ch); err != nil {
			t.Errorf("Update: %v", err)
		}
	}))
	want := `
# HELP slowlab_proxy_request_body_temp_files Of slowlab_proxy_temp_files, the request-body temp files: in a client_body_temp, body or client_temp directory (NGINX's client_body_temp_path) or named client-body-temp-* (the embedded proxy's).
# TYPE slowlab_proxy_request_body_temp_files gauge
slowlab_proxy_request_body_temp_files{group="proxy"} 1
# HELP slowlab_proxy_request_body_temp_logical_bytes Summed size (st_size) of the group's open request-body temp files.
# TYPE slowlab_proxy_request_body_temp_logical_bytes gauge
slowlab_proxy_request_body_temp_logical_bytes{group="proxy"} 5000
# HELP slowlab_proxy_temp_files Regular files under the group's temp dirs held open by its processes, unlinked ones included, counted once per device and inode.
# TYPE slowlab_proxy_temp_files gauge
slowlab_proxy_temp_files{group="proxy"} 2
# HELP slowlab_proxy_temp_logical_bytes Summed size (st_size) of the group's open temp files.
# TYPE slowlab_proxy_temp_logical_bytes gauge
slowlab_proxy_temp_logical_bytes{group="proxy"} 8000
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "slowlab_proxy_request_body_temp_files",
		"slowlab_proxy_request_body_temp_logical_bytes", "slowlab_proxy_temp_files", "slowlab_proxy_temp_logical_bytes"); err != nil {
		t.Error(err)
	}
}

// collectorFunc is an unchecked prometheus.Collector calling its func.
type collectorFunc func(ch chan<- prometheus.Metric)

func (f collectorFunc) Describe(chan<- *prometheus.Desc)    {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

// TestTempFS: the temp dir's filesystem as the group's process sees it
// (through /proc/PID/root), the fullest of its temp dirs; a process gone
// leaves the metrics out without an error.
func TestTempFS(t *testing.T) {
	orig := statfsFunc
	t.Cleanup(func() { statfsFunc = orig })
	var asked []string
	statfsFunc = func(path string, st *syscall.Statfs_t) error {
		asked = append(asked, path)
		switch path {
		case "/proc/42/root/tmp/a":
			st.Bsize, st.Blocks, st.Bavail = 4096, 2048, 1024 // 8 MiB, 4 MiB free
		case "/proc/42/root/tmp/b":
			st.Bsize, st.Blocks, st.Bavail = 4096, 2048, 16 // 8 MiB, 64 KiB free
		default:
			return syscall.ENOENT
		}
		return nil
	}
	c := &tempFilesCollector{fds: newFDWalker("/proc")}
	reg := prometheus.NewPedanticRegistry()
	targets := []Target{{Group: "proxy", PIDs: []int{41, 42}, TempDirs: []string{"/tmp/a", "/tmp/b"}},
		{Group: "gone", PIDs: []int{7}, TempDirs: []string{"/tmp/a"}}}
	reg.MustRegister(collectorFunc(func(ch chan<- prometheus.Metric) {
		if err := c.Update(context.Background(), targets, ch); err != nil {
			t.Errorf("Update: %v", err)
		}
	}))
	want := `
# HELP slowlab_proxy_temp_fs_avail_bytes Space available to unprivileged writers on that filesystem (statfs f_bavail*f_bsize).
# TYPE slowlab_proxy_temp_fs_avail_bytes gauge
slowlab_proxy_temp_fs_avail_bytes{group="proxy"} 65536
# HELP slowlab_proxy_temp_fs_size_bytes Size of the filesystem holding the group's temp dir with the least space available, as its processes see it (statfs through /proc/PID/root; as the exporter sees it while none is alive).
# TYPE slowlab_proxy_temp_fs_size_bytes gauge
slowlab_proxy_temp_fs_size_bytes{group="proxy"} 8.388608e+06
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "slowlab_proxy_temp_fs_avail_bytes", "slowlab_proxy_temp_fs_size_bytes"); err != nil {
		t.Error(err)
	}
	if len(asked) == 0 || asked[0] != "/proc/41/root/tmp/a" {
		t.Errorf("statfs calls %v: want /proc/PID/root/DIR", asked)
	}
}
