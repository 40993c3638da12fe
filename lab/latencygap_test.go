package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/target"
)

func TestDefaultLatencyGapIsThePublishedMatrix(t *testing.T) {
	e := DefaultLatencyGap()
	if !slices.Equal(e.Delays, []time.Duration{0, 25 * time.Millisecond}) || !slices.Equal(e.Sizes, []int{1024, 102400}) ||
		e.Runs != 40 || e.Method != netem.MethodAuto {
		t.Errorf("DefaultLatencyGap() = %+v", e)
	}
	if err := e.Validate(); err != nil {
		t.Error(err)
	}
}

func TestLatencyGapValidate(t *testing.T) {
	for _, tc := range []struct {
		change func(*LatencyGap)
		want   string
	}{
		{func(e *LatencyGap) { e.Delays = nil }, "delays: none given"},
		{func(e *LatencyGap) { e.Delays = []time.Duration{0, -time.Millisecond} }, "delays[1] -1ms: allowed 0 to 1s each way"},
		{func(e *LatencyGap) { e.Delays = []time.Duration{2 * time.Second} }, "delays[0] 2s: allowed 0 to 1s each way"},
		{func(e *LatencyGap) { e.Method = netem.MethodNone },
			"delays[1] 25ms with method none: none adds no delay; use auto, netem or tun"},
		{func(e *LatencyGap) { e.Sizes = nil }, "sizes: none given"},
		{func(e *LatencyGap) { e.Sizes = []int{1024, -1} }, "sizes[1] -1: allowed 0 to 67108864 bytes"},
		{func(e *LatencyGap) { e.Runs = 0 }, "runs 0: allowed 1 to 10000"},
		{func(e *LatencyGap) { e.Timeout = 0 }, "timeout 0s: allowed more than 0 up to 5m"},
		{func(e *LatencyGap) { e.Method = "tc" }, `method "tc": allowed auto, netem, tun, none`},
		{func(e *LatencyGap) { e.Rate = -5 }, "rate -5: must be 0 (no limit) or more bytes per second"},
		{func(e *LatencyGap) { e.CongestionControl = "Cubic!" }, `congestion control "Cubic!": want a kernel algorithm name such as cubic or bbr`},
	} {
		e := DefaultLatencyGap()
		tc.change(&e)
		if err := e.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

// TestLastByteTiming: the wrapped target answers /bytes in full, chunked,
// with the target's Server-Timing header and a Server-Timing trailer that
// covers at least as much as the header.
func TestLastByteTiming(t *testing.T) {
	tg, err := target.New(target.Options{Model: target.ModelAsync, Workers: 1, Threads: 1, BlockSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(lastByteTiming(tg.Handler()))
	defer srv.Close()
	for _, size := range []int{0, 1024, 102400} {
		resp, err := http.Get(srv.URL + "/bytes?n=" + strconv.Itoa(size))
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(size) || resp.StatusCode != 200 {
			t.Fatalf("%d bytes: got %d, status %d, %v", size, n, resp.StatusCode, err)
		}
		if resp.ContentLength != -1 || !slices.Equal(resp.TransferEncoding, []string{"chunked"}) {
			t.Errorf("%d bytes: Content-Length %d, Transfer-Encoding %v; want chunked", size, resp.ContentLength, resp.TransferEncoding)
		}
		hdr, okH := loadgen.ParseServerTiming(resp.Header.Get("Server-Timing"), "app")
		last, okT := loadgen.ParseServerTiming(resp.Trailer.Get("Server-Timing"), "app")
		if !okH || !okT || last < hdr {
			t.Errorf("%d bytes: header %s (%v), trailer %s (%v); want both, trailer >= header", size, hdr, okH, last, okT)
		}
	}
	// An error from the target still arrives whole.
	resp, err := http.Get(srv.URL + "/bytes?n=x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `n "x"`) {
		t.Errorf("bad request: %d %q", resp.StatusCode, b)
	}
}

func TestPrintLatencyGap(t *testing.T) {
	rows := []LatencyGapRow{
		{Gap: recorder.GapRow{SizeBytes: 1024, RTTMS: 50, ServerMS: recorder.Some(0.1234), ClientKeepaliveMS: recorder.Some(50.61),
			ClientNewMS: recorder.Some(101.4), ServerBlindPct: recorder.Some(99.88), Runs: 40, DelayMethod: "tun"},
			Path:             recorder.GapPath{Valid: false, LatenessP50MS: recorder.Some(0.05), LatenessP99MS: recorder.Some(1.5), LatenessMaxMS: recorder.Some(3)},
			ServerLastByteMS: recorder.Some(0.006), ServerLastByteBlindPct: recorder.Some(99.99)},
		{Gap: recorder.GapRow{SizeBytes: 102400, DelayMethod: "none"}, Path: recorder.GapPath{Valid: true}},
	}
	var b bytes.Buffer
	PrintLatencyGap(&b, rows)
	want := "" +
		"size_bytes  rtt_ms  method  server_ms  keepalive_ms  new_ms  blind_%  last_byte_ms  last_byte_blind_%  runs  late_p50_ms  late_p99_ms  late_max_ms  valid\n" +
		"      1024      50     tun      0.123         50.61  101.40     99.9         0.006              100.0    40        0.050        1.500        3.000     NO\n" +
		"    102400       0    none          -             -       -        -             -                  -     0            -            -            -    yes\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestLatencyGapInterrupted cancels a run mid-way: RunLatencyGap returns
// the context's error with what it measured on disk, and no namespace,
// link, TUN device or thread of the run is left.
func TestLatencyGapInterrupted(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (network namespaces) and CI=true")
		}
		t.Skip("needs root (network namespaces)")
	}
	e := DefaultLatencyGap()
	e.Delays, e.Runs = []time.Duration{25 * time.Millisecond}, 1000
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	res, err := RunLatencyGap(ctx, e, Options{Out: out})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's error", err)
	}
	if res == nil || len(res.Rows) != 1 || !res.Rows[0].Gap.ClientKeepaliveMS.Valid {
		t.Fatalf("result %+v: want the interrupted condition with its keep-alive measurements", res)
	}
	reqs, err := recorder.ReadFile[recorder.GapRequest](filepath.Join(out, "gap-requests.csv"))
	if err != nil || len(reqs) < 5 {
		t.Errorf("gap-requests.csv: %d rows, %v", len(reqs), err)
	}
	for _, f := range []string{"gap.csv", "gap-path.csv", "environment.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	checkNothingLeft(t)
}

// TestLatencyGapNeedsPrivileges runs RunLatencyGap in a copy of the test
// binary as an unprivileged user: it fails before writing anything, with
// an error that wraps netem.ErrPermission and says what is needed.
func TestLatencyGapNeedsPrivileges(t *testing.T) {
	if out := os.Getenv("SLOWLAB_GAP_UNPRIVILEGED_OUT"); out != "" {
		_, err := RunLatencyGap(context.Background(), DefaultLatencyGap(), Options{Out: out})
		fmt.Println("error:", err)
		if !errors.Is(err, netem.ErrPermission) {
			os.Exit(3)
		}
		os.Exit(0)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to start an unprivileged child")
	}
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir's parent is private too
	os.Chmod(dir, 0o777)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "lab.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	cmd := exec.Command(bin, "-test.run=^TestLatencyGapNeedsPrivileges$")
	cmd.Env = append(os.Environ(), "SLOWLAB_GAP_UNPRIVILEGED_OUT="+out)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	msg, err := cmd.CombinedOutput()
	t.Logf("unprivileged: %s", strings.TrimSpace(string(msg)))
	if err != nil || !strings.Contains(string(msg), "CAP_NET_ADMIN") {
		t.Errorf("want an error wrapping ErrPermission that names CAP_NET_ADMIN; exit %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("results directory written without privileges: %v", err)
	}
}

// checkNothingLeft fails t if this process still has a thread or file
// descriptor in a network namespace other than its own or on a TUN
// device, or if a slowlab-* link or named namespace exists.
func checkNothingLeft(t *testing.T) {
	t.Helper()
	if names, _ := filepath.Glob("/var/run/netns/slowlab-*"); len(names) > 0 {
		t.Errorf("namespaces left: %v", names)
	}
	if b, err := os.ReadFile("/proc/net/dev"); err != nil || strings.Contains(string(b), "slowlab-") {
		t.Errorf("a slowlab-* link in this namespace (%v):\n%s", err, b)
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		var held []string
		tasks, _ := filepath.Glob("/proc/self/task/*/ns/net")
		fds, _ := filepath.Glob("/proc/self/fd/*")
		for _, p := range append(tasks, fds...) {
			if l, err := os.Readlink(p); err == nil && (strings.HasPrefix(l, "net:[") && l != self || l == "/dev/net/tun") {
				held = append(held, p+" -> "+l)
			}
		}
		if len(held) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("still held: %v", held)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
