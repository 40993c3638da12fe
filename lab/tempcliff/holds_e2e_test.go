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
	"github.com/slowlab/slowlab/recorder"
)

// session runs `slowlab reproduce temp-cliff --quick` on the embedded
// stack and returns the lines it wrote to stderr and its results
// directory: in a network namespace it creates, with loopback up,
// tcp_wmem's maximum 4 MiB and tcp_rmem rmem ("min default max"), or in
// the host's when rmem is ""; to its end when whole, else until its first
// run began ("[1/3] ..."), which it then interrupts.
func session(t *testing.T, rmem string, whole bool) (lines []string, dir string) {
	t.Helper()
	slowlabtest.RequireRoot(t, "a network namespace whose tcp_rmem the test sets")
	slowlabtest.RequireTool(t, "ip")
	dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	script := `exec "$2" reproduce temp-cliff --quick --stack embedded --max-host-cpu 0 --out "$3"`
	if rmem != "" {
		script = `ip link set lo up && echo "4096 16384 4194304" > /proc/sys/net/ipv4/tcp_wmem &&
echo "$1" > /proc/sys/net/ipv4/tcp_rmem && ` + script
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", script, "sh", rmem, os.Getenv(child.ExecutableEnv), dir)
	cmd.Env = append(os.Environ(), kernelnet.NetnsEnv+"=holds-test")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if rmem != "" {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	}
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
	for (whole || !begun) && sc.Scan() {
		lines = append(lines, sc.Text())
		begun = begun || strings.HasPrefix(sc.Text(), "[1/")
	}
	if !whole {
		cmd.Process.Signal(os.Interrupt)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	err = cmd.Wait()
	if !begun {
		t.Fatalf("the session ended (or took five minutes) before its first run began: %q", lines)
	}
	if whole && err != nil {
		t.Fatalf("the session: %v: %q", err, lines)
	}
	return lines, dir
}

// TestMayHoldAtSessionStart: a real --quick session, in a namespace whose
// tcp_rmem maximum is 64 MiB, warns before its first run that the path
// may hold the 32 MiB and the 16 MiB responses it expects to hold the
// app, as its report would from what it recorded; under tcp_rmem max
// 6 MiB it does not.
func TestMayHoldAtSessionStart(t *testing.T) {
	lines, dir := session(t, "4096 131072 67108864", false)
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

	lines, _ = session(t, "4096 131072 6291456", false)
	for _, l := range lines {
		if strings.HasPrefix(l, "warning: ") {
			t.Errorf("tcp_rmem max 6 MiB: %q", l)
		}
	}
}

// TestHeldMeasured: a whole --quick session in a namespace whose
// tcp_rmem default and maximum are 32 MiB (the proxy's receive buffer
// from the app then holds the 32 MiB response above the 8m temp limit
// whole) warns at its end that the path held that condition's downloads,
// with the figures, as its report says; on the host's settings, a
// condition whose app its rows show held (/fast p95 over 500 ms: both
// sync workers held, against tens of ms when free) gets no such warning.
func TestHeldMeasured(t *testing.T) {
	lines, dir := session(t, "4096 33554432 33554432", true)
	t.Logf("session: %s", strings.Join(lines, "\n"))
	held := heldLines(lines)
	want := "temp-cliff sync-2, 2 slow, 32m, max temp 8m: the path held the 32 MiB downloads, not the app: median app_send_s "
	if !slices.ContainsFunc(held, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("tcp_rmem 32 MiB: measured warnings %q, want one starting %q", held, want)
	}
	cfg, err := lab.LoadScenario(filepath.Join(dir, lab.ScenarioFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := holds.HeldWarnings(cfg.(*Config).Measured(dir)); !slices.Equal(got, held) {
		t.Errorf("from the results directory: %q, want the session's %q", got, held)
	}

	lines, dir = session(t, "", true)
	t.Logf("session on the host's settings: %s", strings.Join(lines, "\n"))
	runs, err := recorder.ReadFile[RunRow](filepath.Join(dir, runFile))
	if err != nil {
		t.Fatal(err)
	}
	appHeld := 0
	for _, s := range Summarize(runs) {
		name := conditionText(s.Server, s.SlowClients, s.SizeBytes, s.MaxTempFileBytes, s.TempTmpfsBytes) + ":"
		if !s.P95MS.Valid || s.P95MS.Value < 500 || !judged(s.SlowClients, s.SizeBytes, s.MaxTempFileBytes, s.TempTmpfsBytes) {
			continue
		}
		appHeld++
		if slices.ContainsFunc(heldLines(lines), func(w string) bool { return strings.HasPrefix(w, name) }) {
			t.Errorf("host: %s its app held (/fast p95 %.0f ms, app_send_s %v, receive_s %v), warned of: %q", name, s.P95MS.Value,
				s.AppSendS, s.ReceiveS, heldLines(lines))
		}
	}
	if appHeld == 0 {
		t.Errorf("host: no condition held its app (/fast p95 over 500 ms): %q", lines)
	}
}

// heldLines are the measured warnings among a session's lines.
func heldLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if w, ok := strings.CutPrefix(l, "warning: "); ok && strings.Contains(w, "the path held the") {
			out = append(out, w)
		}
	}
	return out
}
