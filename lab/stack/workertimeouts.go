package stack

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/appserver"
)

// workerTimeout is what Gunicorn's master logs when it kills a worker
// that outlived --timeout, "[CRITICAL] WORKER TIMEOUT (pid:1234)", and
// the embedded sync model alike (appserver.WorkerTimeoutLog).
var workerTimeout = []byte(appserver.WorkerTimeoutLog)

// CountWorkerTimeouts counts the WORKER TIMEOUT lines in a run's logs
// (LOGDIR/RUNID-*.log, the exporter's left out). It fails when no log of
// the run is there.
func CountWorkerTimeouts(logDir, runID string) (int, error) {
	wts, err := WorkerTimeouts(logDir, runID)
	return len(wts), err
}

// WorkerTimeout is one WORKER TIMEOUT line: the worker it names.
type WorkerTimeout struct {
	// PID is Gunicorn's "(pid:N)": the worker process it killed; 0 when
	// the line names none.
	PID int
	// PeerPort is the embedded app's "peer HOST:PORT": the remote port of
	// the connection it aborted; 0 when the line names none.
	PeerPort int
	// At is when it was logged, to the second or finer; zero when the
	// line has no time this parser knows.
	At time.Time
}

// WorkerTimeouts returns the WORKER TIMEOUT lines of a run's logs
// (LOGDIR/RUNID-*.log, the exporter's left out), in file and line order.
// It fails when no log of the run is there.
func WorkerTimeouts(logDir, runID string) ([]WorkerTimeout, error) {
	var out []WorkerTimeout
	err := runLogLines(logDir, runID, func(name string, line []byte) {
		if strings.Contains(name, "exporter") {
			return
		}
		if wt, ok := ParseWorkerTimeout(line); ok {
			out = append(out, wt)
		}
	})
	return out, err
}

// runLogLines calls f with each line of each of the run's logs
// (LOGDIR/RUNID-*.log) and the log's file name.
func runLogLines(logDir, runID string, f func(name string, line []byte)) error {
	paths, err := filepath.Glob(filepath.Join(logDir, runID+"-*.log"))
	if err != nil || len(paths) == 0 {
		return fmt.Errorf("no logs of run %s in %s", runID, logDir)
	}
	for _, p := range paths {
		if err := LogLines(p, func(line []byte) { f(filepath.Base(p), line) }); err != nil {
			return err
		}
	}
	return nil
}

// ParseWorkerTimeout reads a WORKER TIMEOUT line: Gunicorn's
//
//	[2026-12-03 12:56:31 +0000] [101] [CRITICAL] WORKER TIMEOUT (pid:102)
//
// or the embedded app's
//
//	2026-12-03 12:56:31.250 [CRITICAL] WORKER TIMEOUT (worker:0, peer 127.0.0.1:40000, after 2s)
//
// ok is false for any other line.
func ParseWorkerTimeout(line []byte) (wt WorkerTimeout, ok bool) {
	i := bytes.Index(line, workerTimeout)
	if i < 0 {
		return wt, false
	}
	rest := string(line[i+len(workerTimeout):])
	if v, ok := fieldAfter(rest, "(pid:"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			wt.PID = n
		}
	}
	if v, ok := fieldAfter(rest, "peer "); ok {
		if j := strings.LastIndexByte(v, ':'); j >= 0 {
			if n, err := strconv.ParseUint(v[j+1:], 10, 16); err == nil {
				wt.PeerPort = int(n)
			}
		}
	}
	wt.At = logTime(string(line[:i]))
	return wt, true
}

// fieldAfter is the text after key in s up to the next ',', ')' or space.
func fieldAfter(s, key string) (string, bool) {
	i := strings.Index(s, key)
	if i < 0 {
		return "", false
	}
	s = s[i+len(key):]
	if j := strings.IndexAny(s, ",) \n"); j >= 0 {
		s = s[:j]
	}
	return s, true
}

// logTimeLayouts are the times the logs the lab reads start with:
// Gunicorn's (with its zone), the embedded app's (UTC), and NGINX's and
// Go's log package's (local time).
var logTimeLayouts = []struct {
	layout string
	n      int
	loc    *time.Location
}{
	{"[2006-01-02 15:04:05 -0700]", len("[2006-01-02 15:04:05 -0700]"), nil},
	{"2006-01-02 15:04:05.000", len("2006-01-02 15:04:05.000"), time.UTC},
	{"2006/01/02 15:04:05", len("2006/01/02 15:04:05"), time.Local},
}

// logTime is the time a log line's prefix starts with; zero if none of
// logTimeLayouts.
func logTime(prefix string) time.Time {
	for _, l := range logTimeLayouts {
		if len(prefix) < l.n {
			continue
		}
		var t time.Time
		var err error
		if l.loc == nil {
			t, err = time.Parse(l.layout, prefix[:l.n])
		} else {
			t, err = time.ParseInLocation(l.layout, prefix[:l.n], l.loc)
		}
		if err == nil {
			return t
		}
	}
	return time.Time{}
}
