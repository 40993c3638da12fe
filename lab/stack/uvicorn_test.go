package stack

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// uvicorn is the started app as Uvicorn.
func (s *realStack) uvicorn() *uvicornRun { return s.run.app.(*uvicornRun) }

// requireUvicorn requires a Python that imports uvicorn (CI=true fails
// without it), for tests that start the app without the whole stack.
func requireUvicorn(t *testing.T) {
	t.Helper()
	err := uvicornApp{}.ModelInstalled("uvicorn")
	why := ""
	if err != nil {
		why = err.Error()
	}
	slowlabtest.Require(t, err == nil, why)
}

func TestUvicornModel(t *testing.T) {
	s, err := ParseServer("uvicorn-2")
	if err != nil || s != (Server{Model: "uvicorn", Workers: 2, Threads: 1}) || s.Name() != "uvicorn-2" || s.Slots() != 0 {
		t.Errorf("ParseServer(uvicorn-2) = %+v (%s, %d slots), %v", s, s.Name(), s.Slots(), err)
	}
	if m, ok := s.ModelInfo(); !ok || !m.Async || !m.BackpressureOff {
		t.Errorf("uvicorn model %+v, %t", m, ok)
	}
	for _, bad := range []string{"uvicorn", "uvicorn-0", "uvicorn-2x4"} {
		if _, err := ParseServer(bad); err == nil {
			t.Errorf("ParseServer(%q) accepted", bad)
		}
	}
	if !strings.Contains(ModelSyntax(), "uvicorn-W") {
		t.Errorf("ModelSyntax() = %q, want uvicorn-W in it", ModelSyntax())
	}
}

// findUvicornPython takes the first interpreter that imports uvicorn and
// names the package when none does.
func TestUvicornPython(t *testing.T) {
	if _, err := findUvicornPython([]string{"/nonexistent/python3"}); err == nil ||
		err.Error() != "uvicorn needs python3 (apt-get install python3-uvicorn): no /nonexistent/python3 found" {
		t.Errorf("no interpreter: %v", err)
	}
	const want = "uvicorn needs a python3 that can import uvicorn (apt-get install python3-uvicorn): tried /bin/false"
	if _, err := findUvicornPython([]string{"/nonexistent/python3", "/bin/false", "/bin/false"}); err == nil || err.Error() != want {
		t.Errorf("no uvicorn: %v, want %q", err, want)
	}
	requireUvicorn(t)
	py, err := findUvicornPython(append([]string{"/bin/false"}, uvicornPythons...))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-c", "import uvicorn").CombinedOutput(); err != nil {
		t.Errorf("%s cannot import uvicorn: %v: %s", py, err, out)
	}
}

var _ testedApp = (*uvicornRun)(nil)

// checkWorkers asserts that Start returned with every worker up: W live
// worker processes in Uvicorn's process group, besides its parent.
func (r *uvicornRun) checkWorkers(t *testing.T, d Deployment) {
	t.Helper()
	pid := r.p.PID()
	members := groupMembers(pid)
	if len(r.workers) != d.Server.Workers || slices.Contains(r.workers, pid) != (d.Server.Workers == 1) {
		t.Errorf("workers %v of parent %d, want %d", r.workers, pid, d.Server.Workers)
	}
	for _, w := range r.workers {
		if !slices.Contains(members, w) {
			t.Errorf("worker %d is not in uvicorn's process group %v", w, members)
		}
	}
}

// servingPIDs are the workers Uvicorn logged (its parent with one).
func (r *uvicornRun) servingPIDs() []int { return r.workers }

// TestUvicornRoutes serves every endpoint through every route, and with
// one worker, which Uvicorn runs in its parent process.
func TestUvicornRoutes(t *testing.T) {
	type tc struct {
		route  Route
		server string
	}
	var cases []tc
	for _, route := range Routes {
		cases = append(cases, tc{route, "uvicorn-2"})
	}
	cases = append(cases, tc{RouteDirect, "uvicorn-1"})
	for _, c := range cases {
		t.Run(string(c.route)+"/"+c.server, func(t *testing.T) {
			testServes(t, c.route, c.server, nil, func(t *testing.T, s *realStack) {
				// app.py refuses a backpressure it does not know (app.js
				// takes any but off as on).
				checkCodes(t, s.run.URL(), map[string]int{"/large?backpressure=maybe": 400})
			})
		})
	}
}

// A worker that cannot load the app fails Start at once with the cause,
// though Uvicorn's parent lives on, and nothing is left behind.
func TestUvicornStartFails(t *testing.T) {
	requireUvicorn(t)
	d := Deployment{RunID: "test-uvicorn-fail", Route: RouteDirect, Server: Server{Model: "uvicorn", Workers: 2, Threads: 1},
		LargeSize: 1 << 31, LogDir: t.TempDir(), WorkDir: t.TempDir()}
	r, err := uvicornApp{}.Start(context.Background(), d, Settings{}, nil)
	if err == nil {
		r.Stop()
		t.Fatal("uvicorn started with an app that cannot load")
	}
	const want = `uvicorn: a worker failed to start: ValueError: SLOWLAB_LARGE_SIZE '2147483648': want 0..1073741824 bytes`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want it to start with %q", err, want)
	}
	if left := processesMentioning(d.WorkDir); len(left) > 0 {
		t.Errorf("processes %v still running with the run's work dir", left)
	}
}

// A worker that dies fails the run: Uvicorn's parent lives on without
// it, so only the worker check can tell.
func TestUvicornWorkerDiesFailsRun(t *testing.T) {
	s := startReal(t, lookup(t, NameReal, "uvicorn-2"), RouteDirect, "uvicorn-2", 1<<20)
	run := s.uvicorn()
	if err := s.run.Failed(); err != nil || len(run.workers) != 2 {
		t.Fatalf("fresh run: Failed %v, workers %v", err, run.workers)
	}
	victim := run.workers[1]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	slowlabtest.WaitFor(t, "the killed worker to be gone", func() bool { return !child.Alive(victim) }, func() string { return run.p.LogTail() })
	want := fmt.Sprintf("app: uvicorn: worker %d exited during the run", victim)
	if err := s.run.Failed(); err == nil || err.Error() != want {
		t.Errorf("Failed() = %v, want %q", err, want)
	}
	if done, _ := run.p.Exited(); done {
		t.Error("uvicorn's parent exited too: the worker check was not what told")
	}
}
