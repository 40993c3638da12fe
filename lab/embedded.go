package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/target"
)

// Embedded is the stack that needs nothing installed: `slowlab target` as the
// app and `slowlab proxy` as the buffering proxy, each its own process.
type Embedded struct {
	// Executable is the slowlab binary; the running one when empty.
	Executable string
	// Cgroups puts the app and the proxy each in a cgroup of its own
	// (slowlab/<run>/<component>), without limits, so their CPU and memory
	// are accounted as on the real stack. Needs root.
	Cgroups bool
	// CgroupRoot is where cgroup hierarchies are mounted; DefaultCgroupRoot when empty.
	CgroupRoot string
	// AcceptWhenFree has gthread workers accept only while a thread is free
	// (target.Options.AcceptWhenFree); Gunicorn's policy when false.
	AcceptWhenFree bool
}

// CgroupProcsEnv names the cgroup.procs files (separated by ":") that a
// slowlab child writes its own PID to before doing anything else, so it
// runs inside its cgroups from the start (see JoinCgroupsFromEnv).
const CgroupProcsEnv = "SLOWLAB_CGROUP_PROCS"

// JoinCgroupsFromEnv moves this process into the cgroups named by
// CgroupProcsEnv, if set. slowlab's main calls it first thing.
func JoinCgroupsFromEnv() error {
	v := os.Getenv(CgroupProcsEnv)
	if v == "" {
		return nil
	}
	os.Unsetenv(CgroupProcsEnv) // not for the process's own children
	for _, f := range strings.Split(v, ":") {
		if err := writeCgroupFile(f, strconv.Itoa(os.Getpid())); err != nil {
			return fmt.Errorf("join cgroup %s: %w", f, err)
		}
	}
	return nil
}

// childEnv returns the environment of a child that joins cg (nil: none).
func childEnv(cg *Cgroup) []string {
	env := withoutEnv(os.Environ(), CgroupProcsEnv)
	if cg != nil {
		env = append(env, CgroupProcsEnv+"="+strings.Join(cg.procsFiles(), ":"))
	}
	return env
}

// cgroup creates the accounting cgroup of one component, if enabled.
func (e Embedded) cgroup(d Deployment, comp string) (*Cgroup, error) {
	if !e.Cgroups {
		return nil, nil
	}
	root := e.CgroupRoot
	if root == "" {
		root = DefaultCgroupRoot
	}
	cg, err := NewCgroup(root, "slowlab/"+d.RunID+"/"+comp, Limits{})
	if err != nil {
		return nil, fmt.Errorf("%s cgroup: %w", comp, err)
	}
	return cg, nil
}

var _ Stack = Embedded{}

// Name implements Stack.
func (Embedded) Name() string { return "embedded" }

// Start implements Stack.
func (e Embedded) Start(ctx context.Context, d Deployment) (Running, error) {
	exe := e.Executable
	if exe == "" {
		var err error
		if exe, err = executable(); err != nil {
			return nil, fmt.Errorf("find slowlab binary: %w", err)
		}
	}
	r := &embeddedRun{}
	threads := d.Server.Threads
	if threads < 1 {
		threads = 1
	}
	var err error
	if r.appCg, err = e.cgroup(d, "app"); err != nil {
		return nil, err
	}
	argv := []string{exe, "target",
		"--model", d.Server.Model, "--workers", strconv.Itoa(d.Server.Workers), "--threads", strconv.Itoa(threads),
		"--large-size", strconv.FormatInt(d.LargeSize, 10), "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"}
	if e.AcceptWhenFree && d.Server.Model == "gthread" {
		argv = append(argv, "--accept-when-free")
	}
	app, err := startChild(ctx, "target", filepath.Join(d.LogDir, d.RunID+"-target.log"), argv, childEnv(r.appCg))
	if err != nil {
		r.Stop()
		return nil, err
	}
	r.app = app
	r.url = "http://" + app.ready["listen"]
	r.admin = "http://" + app.ready["admin"]
	if d.Route == RouteDirect {
		return r, nil
	}
	buffering := "off"
	if d.Route == RouteBufferingOn {
		buffering = "on"
	}
	tempDir := filepath.Join(d.WorkDir, "proxy-temp")
	if err := os.MkdirAll(tempDir, 0o700); err != nil {
		r.Stop()
		return nil, fmt.Errorf("proxy temp dir: %w", err)
	}
	if r.proxyCg, err = e.cgroup(d, "proxy"); err != nil {
		r.Stop()
		return nil, err
	}
	proxy, err := startChild(ctx, "proxy", filepath.Join(d.LogDir, d.RunID+"-proxy.log"), []string{exe, "proxy",
		"--buffering", buffering, "--upstream", app.ready["listen"], "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
		"--temp-dir", tempDir}, childEnv(r.proxyCg))
	if err != nil {
		r.Stop()
		return nil, err
	}
	r.proxy = proxy
	r.tempDir = tempDir
	r.url = "http://" + proxy.ready["listen"]
	return r, nil
}

type embeddedRun struct {
	app, proxy     *child
	appCg, proxyCg *Cgroup // nil without Embedded.Cgroups
	url, admin     string
	tempDir        string
}

// MetricsEndpoints lists the target's and the proxy's admin listeners.
func (r *embeddedRun) MetricsEndpoints() map[string]string {
	m := map[string]string{"slowlab-target": r.app.ready["admin"]}
	if r.proxy != nil {
		m["slowlab-proxy"] = r.proxy.ready["admin"]
	}
	return m
}

func (r *embeddedRun) Groups() map[string][]string {
	sel := func(c *child, cg *Cgroup) []string {
		if cg != nil {
			return []string{"cgroup:" + cg.Path()}
		}
		return []string{"tree:" + strconv.Itoa(c.pid())}
	}
	g := map[string][]string{"app": sel(r.app, r.appCg)}
	if r.proxy != nil {
		g["proxy"] = sel(r.proxy, r.proxyCg)
	}
	return g
}

func (r *embeddedRun) TempDirs() []string {
	if r.tempDir == "" {
		return nil
	}
	return []string{r.tempDir}
}

func (r *embeddedRun) URL() string { return r.url }

func (r *embeddedRun) PIDs() map[string]int {
	m := map[string]int{"app": r.app.pid()}
	if r.proxy != nil {
		m["proxy"] = r.proxy.pid()
	}
	return m
}

// adminGet fetches path from the target's admin listener and hands the
// response to read; errors name what was fetched.
func (r *embeddedRun) adminGet(ctx context.Context, path, accept string, timeout time.Duration, read func(*http.Response) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.admin+path, nil)
	if err != nil {
		return err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("target admin %s: %w", path, err)
	}
	defer resp.Body.Close()
	if err := read(resp); err != nil {
		return fmt.Errorf("target admin %s: %w", path, err)
	}
	return nil
}

// LongPollsHeld implements HeldCounter from the target's
// slowlab_target_longpolls_in_progress gauge, by worker index.
func (r *embeddedRun) LongPollsHeld(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	err := r.adminGet(ctx, "/metrics", recorder.AcceptHeader, 2*time.Second, func(resp *http.Response) error {
		fams, err := recorder.ParseExposition(resp.Body, resp.Header.Get("Content-Type"))
		if err != nil {
			return err
		}
		if f := fams["slowlab_target_longpolls_in_progress"]; f != nil {
			for _, m := range f.Metric {
				for _, l := range m.GetLabel() {
					if l.GetName() == "worker" {
						out[l.GetValue()] = int(m.GetGauge().GetValue())
					}
				}
			}
		}
		return nil
	})
	return out, err
}

func (r *embeddedRun) AppSend(ctx context.Context) (map[string]float64, error) {
	var recs []target.SendRecord
	err := r.adminGet(ctx, "/app-send", "", 5*time.Second, func(resp *http.Response) error {
		return json.NewDecoder(resp.Body).Decode(&recs)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(recs))
	for _, rec := range recs {
		out[rec.ID] = rec.AppSendS
	}
	return out, nil
}

func (r *embeddedRun) Failed() error {
	for _, c := range []*child{r.app, r.proxy} {
		if c == nil {
			continue
		}
		if done, err := c.exited(); done {
			return fmt.Errorf("%s (pid %d) exited during the run: %v", c.name, c.pid(), err)
		}
	}
	return nil
}

func (r *embeddedRun) Stop() error {
	var errs []error
	for _, c := range []*child{r.proxy, r.app} {
		if c != nil {
			errs = append(errs, c.stop(3*time.Second))
		}
	}
	for _, cg := range []*Cgroup{r.proxyCg, r.appCg} {
		if cg != nil {
			errs = append(errs, cg.Remove())
		}
	}
	return errors.Join(errs...)
}
