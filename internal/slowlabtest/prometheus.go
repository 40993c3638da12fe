package slowlabtest

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/slowlab/slowlab/child"
)

// HangGuard bounds the waits of end-to-end tests: only a broken test gets
// there; a slow machine takes longer but not that long.
const HangGuard = 3 * time.Minute

// Prometheus is a real Prometheus a test started.
type Prometheus struct {
	URL string
	dir string
	t   testing.TB
	api v1.API
}

// Dir is the directory of its configuration and of the files given
// beside it: a test rewrites a file_sd file there.
func (p *Prometheus) Dir() string { return p.dir }

// StartPrometheus starts the prometheus binary (required: CI=true fails
// without it) with config as prometheus.yml and files beside it in a
// temporary directory, waits until it is ready, and stops it by PID when
// the test ends. config may refer to the files by name.
func StartPrometheus(t testing.TB, config string, files map[string]string) *Prometheus {
	t.Helper()
	bin := RequireTool(t, "prometheus")
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Dir = dir
	logPath := filepath.Join(dir, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := child.StartCmd(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(HangGuard):
			cmd.Process.Kill()
			<-done
		}
		logf.Close()
	})
	p := &Prometheus{URL: "http://" + addr, dir: dir, t: t}
	WaitFor(t, "prometheus ready", func() bool {
		resp, err := http.Get(p.URL + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { b, _ := os.ReadFile(logPath); return string(b) })
	client, err := api.NewClient(api.Config{Address: p.URL})
	if err != nil {
		t.Fatal(err)
	}
	p.api = v1.NewAPI(client)
	return p
}

// Query evaluates q now.
func (p *Prometheus) Query(q string) model.Vector {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, _, _, err := p.api.Query(ctx, q, time.Now())
	if err != nil {
		p.t.Fatalf("query %s: %v", q, err)
	}
	return v.(model.Vector)
}

// Eventually polls cond every 50 ms until it holds, and reports false if
// it still does not after HangGuard, for a test that says itself what it
// waited for.
func Eventually(cond func() bool) bool {
	for deadline := time.Now().Add(HangGuard); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// WaitFor polls cond until it holds; after HangGuard the test fails,
// naming what it waited for and what the details say then.
func WaitFor(t testing.TB, what string, cond func() bool, details ...func() string) {
	t.Helper()
	deadline := time.Now().Add(HangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			for _, detail := range details {
				if detail != nil {
					msg += detail()
				}
			}
			t.Fatalf("%s: not seen after %s. %s", what, HangGuard, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// FreeAddr returns a loopback address that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
