package exporter

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The tests re-execute their own binary as small helper processes (a CPU
// burner, an fd holder, a blocked sender) so they need nothing installed.
const helperEnv = "SLOWLAB_EXPORTER_TEST_HELPER"

func init() {
	if os.Getenv(helperEnv) != "" {
		// Keep main on the thread whose TID is the PID, so the blocking
		// write of the "send" helper shows in /proc/PID/wchan.
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

func runHelper(mode string) int {
	switch mode {
	case "burn":
		// Wait for "go" (the test first moves us into the cgroup), touch
		// SLOWLAB_ALLOC_MIB of memory, then spin until killed.
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return 3
		}
		mib, _ := strconv.Atoi(os.Getenv("SLOWLAB_ALLOC_MIB"))
		mem := make([]byte, mib<<20)
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
		x := 0
		for {
			x++
			if x%(1<<30) == 0 {
				runtime.KeepAlive(mem)
			}
		}
	case "hold":
		// Keep inherited fds open until stdin closes.
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "send":
		// A blocking writer like a sync worker: plain syscalls on the main
		// thread, writing until the peer's buffers and ours are full.
		return blockingSend(os.Getenv("SLOWLAB_ADDR"))
	case "recv":
		// A sync worker waiting for a request: accept one connection on the
		// inherited listener (fd 3) and block reading it, plain syscalls
		// on the main thread, until the peer closes.
		return blockingRecv()
	}
	return 2
}

func blockingRecv() int {
	fd, _, err := syscall.Accept(3)
	if err != nil {
		return 8
	}
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return 9
		case n == 0:
			return 0
		}
	}
}

func blockingSend(addr string) int {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return 4
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return 5
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 16384)
	if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		return 6
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := syscall.Write(fd, buf); err != nil && err != syscall.EINTR {
			return 7
		}
	}
}

// helper starts a helper process; t.Cleanup kills it by PID and waits.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startHelper(t *testing.T, mode string, env []string, files ...*os.File) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	cmd.ExtraFiles = files
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	return &helper{cmd: cmd, stdin: stdin}
}

func (h *helper) pid() int { return h.cmd.Process.Pid }

// values gathers the exporter and returns every sample keyed by
// name{label values...}, e.g. `slowlab_processes{app,sleeping}`.
func values(t *testing.T, e *Exporter) map[string]float64 {
	t.Helper()
	return valuesB(t, e)
}

func valuesB(t testing.TB, e *Exporter) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var lv []string
			for _, l := range m.GetLabel() {
				lv = append(lv, l.GetValue())
			}
			out[mf.GetName()+"{"+strings.Join(lv, ",")+"}"] = metricValue(m)
		}
	}
	return out
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	}
	return 0
}

// slowReaderListener listens on loopback with a small receive buffer and
// accepts one connection it never reads from; the returned function reports
// whether it has been accepted.
func slowReaderListener(t *testing.T) (net.Listener, func() bool) {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8192)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conn net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, _ = ln.Accept()
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		if conn != nil {
			conn.Close()
		}
	})
	return ln, func() bool {
		select {
		case <-done:
			return conn != nil
		default:
			return false
		}
	}
}
