package tempcliff

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/lab/pathmodel/holds"
)

// sessionStart starts `slowlab reproduce temp-cliff --quick` on the
// embedded stack in a network namespace it creates, with loopback up and
// tcp_rmem's maximum rmem (tcp_wmem's 4 MiB), and returns the lines the
// session wrote before its first run began ("[1/3] ..."), which it then
// interrupts, and its results directory.
func sessionStart(t *testing.T, rmem string) (lines []string, dir string) {
	t.Helper()
	slowlabtest.RequireRoot(t, "a network namespace whose tcp_rmem the test sets")
	slowlabtest.RequireTool(t, "ip")
	dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `ip link set lo up && echo "4096 16384 4194304" > /proc/sys/net/ipv4/tcp_wmem &&
echo "4096 131072 $1" > /proc/sys/net/ipv4/tcp_rmem && exec "$2" reproduce temp-cliff --quick --stack embedded --max-host-cpu 0 --out "$3"`,
		"sh", rmem, os.Getenv(child.ExecutableEnv), dir)
	cmd.Env = append(os.Environ(), kernelnet.NetnsEnv+"=holds-test")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	begun := false
	for !begun && sc.Scan() {
		lines = append(lines, sc.Text())
		begun = strings.HasPrefix(sc.Text(), "[1/")
	}
	cmd.Process.Signal(os.Interrupt)
	go func() {
		for sc.Scan() {
		}
	}()
	cmd.Wait()
	if !begun {
		t.Fatalf("the session ended (or took a minute) before its first run began: %q", lines)
	}
	return lines, dir
}

// TestMayHoldAtSessionStart: a real --quick session, in a namespace whose
// tcp_rmem maximum is 64 MiB, warns before its first run that the path
// may hold the 32 MiB and the 16 MiB responses it expects to hold the
// app, as its report would from what it recorded; under tcp_rmem max
// 6 MiB it does not.
func TestMayHoldAtSessionStart(t *testing.T) {
	lines, dir := sessionStart(t, "67108864")
	t.Logf("session start: %s", strings.Join(lines, "\n"))
	var warnings []string
	for _, l := range lines {
		if w, ok := strings.CutPrefix(l, "warning: "); ok {
			warnings = append(warnings, w)
		}
	}
	want := []string{"temp-cliff sync-2, 2 slow, 32m, max temp 8m: the path may hold the whole 32.00 MiB response",
		"temp-cliff sync-2, 2 slow, 16m, max temp 0: the path may hold the whole 16.00 MiB response"}
	if len(warnings) != len(want) {
		t.Fatalf("session start: warnings %q, want 2: %q", warnings, lines)
	}
	for i, w := range warnings {
		if !strings.HasPrefix(w, want[i]) || !strings.Contains(w, "grown to tcp_rmem's max 64m") {
			t.Errorf("warning %q, want %q... with tcp_rmem max 64m", w, want[i])
		}
	}
	// What the report reads: the session's scenario.yaml and its
	// namespace's settings in environment.json.
	net := holds.RecordedNet(dir)
	cfg, err := lab.LoadScenario(filepath.Join(dir, lab.ScenarioFile), nil)
	if err != nil || net == nil || net.Namespace != "holds-test" || net.TCPRmem != "4096 131072 67108864" {
		t.Fatalf("recorded: scenario %v, settings %+v", err, net)
	}
	if got := cfg.(*Config).MayHold(net); !slices.Equal(got, warnings) {
		t.Errorf("from the results directory: %q, want the session's %q", got, warnings)
	}

	lines, _ = sessionStart(t, "6291456")
	for _, l := range lines {
		if strings.HasPrefix(l, "warning: ") {
			t.Errorf("tcp_rmem max 6 MiB: %q", l)
		}
	}
}
