package exporter

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestParseSyscall(t *testing.T) {
	for _, tc := range []struct {
		file   string
		nr, fd int
		ok     bool
	}{
		{"sendto.syscall", 44, 4, true},
		{"read.syscall", 0, 5, true},
		{"running.syscall", 0, 0, false},
		{"outside.syscall", 0, 0, false},
	} {
		b, err := os.ReadFile(filepath.Join("testdata/syscall", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if nr, fd, ok := parseSyscall(strings.NewReader(string(b))); nr != tc.nr || fd != tc.fd || ok != tc.ok {
			t.Errorf("%s: got %d, %d, %t; want %d, %d, %t", tc.file, nr, fd, ok, tc.nr, tc.fd, tc.ok)
		}
	}
	for _, s := range []string{"", "44", "44 4", "x 0x4", "44 0xffffffffffffffff", "44 0x"} {
		if _, _, ok := parseSyscall(strings.NewReader(s)); ok {
			t.Errorf("parseSyscall(%q) ok", s)
		}
	}
}

// TestSocketWaitRealProcesses: without the kernel stack, what a process
// blocked in a system call waits for is read from /proc/PID/syscall and
// the descriptor it names: a real blocking writer whose peer does not read
// (write on a TCP socket) is sk_stream_wait_memory, a real blocking reader
// of an idle client (read on a TCP socket) sk_wait_data, and a process
// blocked reading a pipe (its stdin) neither.
func TestSocketWaitRealProcesses(t *testing.T) {
	ln, accepted := slowReaderListener(t)
	sender := startHelper(t, "send", []string{"SLOWLAB_ADDR=" + ln.Addr().String()})
	if !slowlabtest.Eventually(accepted) {
		t.Fatal("sender never connected")
	}
	rl, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Close()
	lf, err := rl.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	reader := startHelper(t, "recv", nil, lf)
	client, err := net.Dial("tcp4", rl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	holder := startHelper(t, "hold", nil)

	fs, err := procfs.NewFS(DefaultProcFS)
	if err != nil {
		t.Fatal(err)
	}
	c := &processCollector{fs: fs, procFS: DefaultProcFS}
	for _, tc := range []struct {
		name    string
		pid     int
		syscall int // the call it blocks in
		want    string
	}{
		{"sender", sender.pid(), unix.SYS_WRITE, "sk_stream_wait_memory"},
		{"reader", reader.pid(), unix.SYS_READ, "sk_wait_data"},
		{"pipe reader", holder.pid(), unix.SYS_READ, ""},
	} {
		// Blocked for good once its syscall file names the call (the
		// sender fills the buffers first, the reader accepts first).
		var got string
		if !slowlabtest.Eventually(func() bool {
			b, err := os.ReadFile(filepath.Join(DefaultProcFS, strconv.Itoa(tc.pid), "syscall"))
			nr, _, ok := parseSyscall(strings.NewReader(string(b)))
			got = c.socketWait(tc.pid)
			return err == nil && ok && nr == tc.syscall && got == tc.want
		}) {
			b, _ := os.ReadFile(filepath.Join(DefaultProcFS, strconv.Itoa(tc.pid), "syscall"))
			t.Errorf("%s: socketWait %q, want %q (syscall %q)", tc.name, got, tc.want, b)
		}
	}
}
