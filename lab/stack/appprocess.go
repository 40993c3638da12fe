package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/internal/bounded"
)

// appProcess is what the runs of the installed app servers (Gunicorn,
// Uvicorn, Node.js) share: the child process, whose process group holds
// the workers; the address it serves on; and the two files their apps
// (app.py, app.js) keep for the lab: the send log, a JSON line per /large
// response, and the held long-polls directory, a held-<pid> file per
// worker.
type appProcess struct {
	p       *child.Process
	addr    string
	sendLog string // the app's SLOWLAB_APP_SEND_LOG
	heldDir string // the app's SLOWLAB_HELD_DIR

	stopOnce sync.Once
	stopErr  error
}

// newAppProcess makes the run's send log path and held directory under
// workDir.
func newAppProcess(workDir string) (*appProcess, error) {
	r := &appProcess{sendLog: filepath.Join(workDir, "app-send.jsonl"), heldDir: filepath.Join(workDir, "held")}
	if err := os.MkdirAll(r.heldDir, 0o755); err != nil {
		return nil, fmt.Errorf("held long-polls directory: %w", err)
	}
	return r, nil
}

// appEnv is env without the variables the apps read, then those set for
// this run and d, then extra (NAME=VALUE).
func (r *appProcess) appEnv(env []string, d Deployment, extra ...string) []string {
	env = withoutEnv(env, "SLOWLAB_APP_SEND_LOG", "SLOWLAB_LARGE_SIZE", "SLOWLAB_HELD_DIR")
	env = append(env, "SLOWLAB_APP_SEND_LOG="+r.sendLog, "SLOWLAB_LARGE_SIZE="+strconv.FormatInt(d.LargeSize, 10), "SLOWLAB_HELD_DIR="+r.heldDir)
	return append(env, extra...)
}

func (r *appProcess) Process() *child.Process { return r.p }
func (r *appProcess) Addr() string            { return r.addr }

// Stop sends SIGTERM to the process group, SIGKILL after the grace, and
// waits for the workers to be gone (they are not the lab's children).
func (r *appProcess) Stop() error {
	r.stopOnce.Do(func() {
		r.stopErr = r.p.Stop(3 * time.Second)
		child.WaitGroupGone(r.p.PID(), 2*time.Second)
	})
	return r.stopErr
}

// AppSend implements RunningApp from the send log.
func (r *appProcess) AppSend(ctx context.Context) (map[string]float64, error) {
	recs, err := r.sendRecords(ctx)
	if err != nil {
		return nil, err
	}
	return appSendTimes(recs), nil
}

// LongPollsHeld implements HeldCounter from the held directory.
func (r *appProcess) LongPollsHeld(context.Context) (map[string]int, error) {
	return readHeldFiles(r.heldDir)
}

// AppServed implements ServedReporter from the send log.
func (r *appProcess) AppServed(ctx context.Context) (map[string]Served, error) {
	recs, err := r.sendRecords(ctx)
	if err != nil {
		return nil, err
	}
	return ServedFrom(recs), nil
}

func (r *appProcess) sendRecords(ctx context.Context) ([]appserver.SendRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return readSendLog(r.sendLog)
}

// readSendLog reads the app's JSON lines in the order written, a line at
// a time (LogLines). A torn last line (a worker killed while writing it:
// no newline) is skipped; any other bad line is an error.
func readSendLog(path string) ([]appserver.SendRecord, error) {
	var out []appserver.SendRecord
	var bad error
	n := 0
	err := LogLines(path, func(line []byte) {
		n++
		text, ended := bytes.CutSuffix(line, []byte("\n"))
		if bad != nil || len(text) == 0 {
			return
		}
		var rec appserver.SendRecord
		if err := json.Unmarshal(text, &rec); err != nil {
			if ended {
				bad = fmt.Errorf("app-send: %s line %d: %w", path, n, err)
			}
			return
		}
		out = append(out, rec)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no /large response begun yet
	}
	if err != nil {
		return nil, fmt.Errorf("app-send: %w", err)
	}
	if bad != nil {
		return nil, bad
	}
	return out, nil
}

// appSendTimes is app_send_s by request id, from the end records.
func appSendTimes(recs []appserver.SendRecord) map[string]float64 {
	out := map[string]float64{}
	for _, rec := range recs {
		if rec.Event == "" {
			out[rec.ID] = rec.AppSendS
		}
	}
	return out
}

// readHeldFiles reads the held-<pid> files the workers keep in dir, by
// worker PID, skipping workers that have exited; a file not yet written
// counts 0.
func readHeldFiles(dir string) (map[string]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("held long-polls: %w", err)
	}
	out := map[string]int{}
	for _, e := range ents {
		pid, ok := strings.CutPrefix(e.Name(), "held-")
		if !ok {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err != nil {
			continue
		}
		b, err := readHeldFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("held long-polls: %w", err)
		}
		// A worker opens its file at its first long-poll and then writes
		// the count: read in between, the file is empty, and the count
		// that sample would have seen a moment earlier is 0.
		text := strings.TrimSpace(string(b))
		if text == "" {
			out[pid] = 0
			continue
		}
		n, err := strconv.Atoi(text)
		if err != nil {
			return nil, fmt.Errorf("held long-polls: %s: %q is not a count", e.Name(), b)
		}
		out[pid] = n
	}
	return out, nil
}

// maxHeldFile bounds a held-<pid> file, which holds one count.
const maxHeldFile = 64

// readHeldFile reads the held-<pid> file at p, failing past maxHeldFile
// bytes rather than reading whatever the file has grown to.
func readHeldFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(&bounded.Body{R: f, Left: maxHeldFile, Err: fmt.Errorf("%s: over %d bytes, not a count", p, maxHeldFile)})
}

// withoutEnv returns env without the named variables.
func withoutEnv(env []string, names ...string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}
