// Package slowlabtest holds what slowlab's end-to-end tests share: a
// slowlab binary built from this module for the lab to start as its
// children (under `go test` the running executable is the test binary,
// which cannot serve `slowlab target`), the rule that a test whose real
// component is missing fails under CI=true instead of skipping, and the
// check that a test left none of its own processes or cgroups behind
// (NothingLeft), whatever else runs on the machine.
package slowlabtest

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/child"
)

// Main builds ./cmd/slowlab of this module (once for all the packages of
// a go test run: build), points child.ExecutableEnv at it, runs the
// tests, and fails the package when the tests left anything of theirs behind
// (LeftBehind): what a test's own check cannot see, as parallel subtests'
// runs, each of which shares the process with the others. Call it from a
// TestMain: os.Exit(slowlabtest.Main(m)).
func Main(m *testing.M) int {
	markOwner()
	flag.Parse()
	if os.Getenv(child.ExecutableEnv) != "" || testing.Short() {
		// Under -short no test starts a child (EndToEnd skips them), so
		// the fast tier does not pay for a build.
		return m.Run()
	}
	bin, err := build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowlabtest: build slowlab:", err)
		return 1
	}
	os.Setenv(child.ExecutableEnv, bin)
	code := m.Run()
	if left := leftAfterAll(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "slowlabtest: the package's tests left behind:\n  %s\n", strings.Join(left, "\n  "))
		return 1
	}
	return code
}

// leftAfterAll is LeftBehind once the tests ended, given a process that
// was just killed the moment it takes to go: what is still there after
// 50 looks 100 ms apart.
func leftAfterAll() []string {
	left := LeftBehind()
	for i := 0; i < 50 && len(left) > 0; i++ {
		time.Sleep(100 * time.Millisecond)
		left = LeftBehind()
	}
	return left
}

// BinDirPrefix starts the name of the directory, under the system's
// temporary directory, that holds the slowlab binary the tests of one
// module checkout share (its path's hash follows).
const BinDirPrefix = "slowlab-test-bin-"

// build compiles the module's cmd/slowlab into a directory that every
// package of this checkout shares, under a lock, and returns its path:
// the go command links again only when the binary is out of date, so of
// a go test run's packages the first builds it (about 3 s) and the others
// find it current (0.5 s), where each built its own before. It stays
// for the next run, as the go build cache does.
func build() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), BinDirPrefix+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	bin := filepath.Join(dir, "slowlab")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/slowlab")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return bin, nil
}

// EndToEnd marks t as a test of the slow tier: one that starts a real
// component (a child process, Gunicorn, NGINX, Prometheus), enters a
// cgroup or a namespace, or runs a load for seconds. Under go test -short
// (make check) it skips t, saying so; make test runs it. Require,
// NothingLeft and the lab's test environments call it, so a test that
// uses them need not.
func EndToEnd(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("end-to-end (%s): not run under -short; make test runs it", what)
	}
}

// Timing marks t as timing-sensitive, a test whose checks a loaded or
// slow machine could upset: make stress runs every test whose body calls
// it ten times over (scripts/stresstests finds them by this call, so no
// list is kept). It changes nothing at run time.
func Timing(t testing.TB) { t.Helper() }

// Require skips t when ok is false, except with CI=true, where it fails
// it: CI must run every test. What t requires is a real component, so
// under -short it skips t whatever ok is (EndToEnd).
func Require(t testing.TB, ok bool, why string) {
	t.Helper()
	EndToEnd(t, "it needs what it requires")
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", why)
	}
	t.Skip(why)
}

// RequireTool requires name on PATH and returns its path.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	Require(t, err == nil, name+" is not installed (make test installs it)")
	return p
}

// RequireRoot requires root, for why.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	Require(t, os.Geteuid() == 0, "not root: "+why+" needs root")
}
