package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/internal/bounded"
	"github.com/slowlab/slowlab/recorder"
)

func init() { RegisterApp(embeddedApp{}) }

// embeddedApp is `slowlab target`: the embedded app server with
// Gunicorn-like worker models, nothing to install.
type embeddedApp struct{}

func (embeddedApp) Name() string            { return "embedded" }
func (embeddedApp) Needs() []string         { return nil }
func (embeddedApp) Packages() []string      { return nil }
func (embeddedApp) Real() bool              { return false }
func (embeddedApp) Validate(Settings) error { return nil }

// Models implements App: appserver's models, as appserver.ModelSpecs
// defines them.
func (embeddedApp) Models() []Model {
	var models []Model
	for _, m := range appserver.ModelSpecs {
		models = append(models, Model{Name: string(m.Model), Sized: m.Sized, Threads: m.Threads})
	}
	return models
}

func (embeddedApp) Start(ctx context.Context, d Deployment, s Settings, cg *cgroup.Cgroup) (RunningApp, error) {
	exe, err := child.Executable()
	if err != nil {
		return nil, fmt.Errorf("find slowlab binary: %w", err)
	}
	argv := []string{exe, child.CmdTarget}
	argv = append(argv, child.TargetModel.Arg(d.Server.Model)...)
	argv = append(argv, child.TargetWorkers.Arg(strconv.Itoa(d.Server.Workers))...)
	argv = append(argv, child.TargetThreads.Arg(strconv.Itoa(max(d.Server.Threads, 1)))...)
	argv = append(argv, child.TargetLargeSize.Arg(strconv.FormatInt(d.LargeSize, 10))...)
	argv = append(argv, child.TargetListen.Arg("127.0.0.1:0")...)
	argv = append(argv, child.TargetAdmin.Arg("127.0.0.1:0")...)
	if d.AppTimeout != 0 {
		argv = append(argv, child.TargetWorkerTimeout.Arg(d.AppTimeout.String())...)
	}
	if s.AcceptWhenFree && appserver.Model(d.Server.Model) == appserver.ModelGthread {
		argv = append(argv, child.TargetAcceptWhenFree.Set())
	}
	p, err := child.Start(ctx, "target", filepath.Join(d.LogDir, d.RunID+"-target.log"), argv, cgroup.ChildEnv(os.Environ(), cg))
	if err != nil {
		return nil, err
	}
	return &embeddedRun{p: p, addr: p.Ready()[child.KeyListen], admin: p.Ready()[child.KeyAdmin]}, nil
}

// embeddedRun is a started embedded app.
type embeddedRun struct {
	p           *child.Process
	addr, admin string
}

func (r *embeddedRun) Process() *child.Process { return r.p }
func (r *embeddedRun) Addr() string            { return r.addr }
func (r *embeddedRun) Stop() error             { return r.p.Stop(3 * time.Second) }

// MetricsEndpoint implements MetricsEndpoint: the target's admin listener.
func (r *embeddedRun) MetricsEndpoint() (string, string) { return "slowlab-target", r.admin }

// The bounds of what adminGet reads of a response body: the target's
// /metrics is a few KiB (recorder's scrape bounds one at 16 MiB), its
// /app-send a few hundred bytes per /large response of the run.
var (
	maxAdminMetricsBytes int64 = 16 << 20
	maxAppSendBytes      int64 = 256 << 20
)

// adminGet fetches path from the target's admin listener and hands the
// response to read, whose body fails past max bytes; errors name what was
// fetched.
func (r *embeddedRun) adminGet(ctx context.Context, path, accept string, timeout time.Duration, max int64, read func(*http.Response) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.admin+path, nil)
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
	resp.Body = struct {
		io.Reader
		io.Closer
	}{&bounded.Body{R: resp.Body, Left: max, Err: fmt.Errorf("response body over %d bytes", max)}, resp.Body}
	if err := read(resp); err != nil {
		return fmt.Errorf("target admin %s: %w", path, err)
	}
	return nil
}

// LongPollsHeld implements HeldCounter from the target's
// slowlab_target_longpolls_in_progress gauge, by worker index.
func (r *embeddedRun) LongPollsHeld(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	err := r.adminGet(ctx, "/metrics", recorder.AcceptHeader, 2*time.Second, maxAdminMetricsBytes, func(resp *http.Response) error {
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

// AppSend implements RunningApp from the target's /app-send.
func (r *embeddedRun) AppSend(ctx context.Context) (map[string]float64, error) {
	recs, err := r.sendRecords(ctx)
	if err != nil {
		return nil, err
	}
	return appSendTimes(recs), nil
}

// AppServed implements ServedReporter from the target's /app-send.
func (r *embeddedRun) AppServed(ctx context.Context) (map[string]Served, error) {
	recs, err := r.sendRecords(ctx)
	if err != nil {
		return nil, err
	}
	return ServedFrom(recs), nil
}

func (r *embeddedRun) sendRecords(ctx context.Context) ([]appserver.SendRecord, error) {
	var recs []appserver.SendRecord
	err := r.adminGet(ctx, "/app-send", "", 5*time.Second, maxAppSendBytes, func(resp *http.Response) error {
		return json.NewDecoder(resp.Body).Decode(&recs)
	})
	return recs, err
}
