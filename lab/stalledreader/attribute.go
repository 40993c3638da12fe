package stalledreader

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// DownloadParam is the query parameter every download's URL carries, its
// client number, so that the proxy's log line for it, which quotes the
// request line, names it. The apps ignore it.
const DownloadParam = "download"

// downloadURL is u with ?download=client added.
func downloadURL(u *url.URL, client int) *url.URL {
	out := *u
	q := out.Query()
	q.Set(DownloadParam, strconv.Itoa(client))
	out.RawQuery = q.Encode()
	return &out
}

// evidence is what a run left about who ended its downloads: the app's
// send log (which worker began each body, and whether it finished), the
// app's WORKER TIMEOUT lines and the proxy's "client timed out" lines.
type evidence struct {
	served map[string]stack.Served // by request id; nil when the app keeps no send log
	kills  []lab.WorkerTimeout
	cuts   []lab.ClientTimeout
}

// gatherEvidence reads a run's evidence once its downloads ended: each
// line is written before the client can see its effect (Gunicorn's master
// logs WORKER TIMEOUT before it kills, NGINX logs "client timed out"
// before it closes, the apps write a start record before the body).
func gatherEvidence(ctx context.Context, running *stack.Running, logDir, runID string) (evidence, error) {
	var e evidence
	var err error
	if e.kills, err = lab.WorkerTimeouts(logDir, runID); err != nil {
		return e, err
	}
	if e.cuts, err = lab.ClientTimeouts(logDir, runID); err != nil {
		return e, err
	}
	served, ok, err := running.AppServed(ctx)
	if ok && err == nil {
		e.served = served
	}
	return e, err
}

// killed reports whether a WORKER TIMEOUT line names the worker that was
// serving request id when it was killed, and when it was logged. A line
// naming a connection (the embedded app: peer HOST:PORT) matches the
// request that came on it; one naming a process (Gunicorn: pid:N) the
// requests whose bodies that process began last (it began nothing after
// their end). Either way the app must not have recorded the body complete.
func (e evidence) killed(id string) (time.Time, bool) {
	s, ok := e.served[id]
	if !ok || s.Complete {
		return time.Time{}, false
	}
	for _, k := range e.kills {
		switch {
		case k.PeerPort != 0:
			if k.PeerPort == s.PeerPort {
				return k.At, true
			}
		case k.PID != 0:
			if k.PID == s.PID && !s.Followed {
				return k.At, true
			}
		}
	}
	return time.Time{}, false
}

// cut reports whether the proxy logged send_timeout closing the client
// of download client (its request line has ?download=client), and when.
func (e evidence) cut(client int) (time.Time, bool) {
	want := strconv.Itoa(client)
	for _, c := range e.cuts {
		u, err := url.Parse(c.Target)
		if err == nil && u.Query().Get(DownloadParam) == want {
			return c.At, true
		}
	}
	return time.Time{}, false
}

// ender says which component ended a download, from the client's own
// view (complete; its bound: client) and otherwise from evidence about
// that download only: app_timeout when a WORKER TIMEOUT line names the
// worker serving it, send_timeout when the proxy logged closing it;
// when both did, the one logged first (the logs' clocks count whole
// seconds: within the same second, unknown); unknown with no evidence.
func ender(d recorder.StalledDownload, id string, e evidence) string {
	switch d.Outcome {
	case recorder.StalledComplete:
		return recorder.EndedByNone
	case recorder.StalledTimeout:
		return recorder.EndedByClient
	}
	killAt, killed := e.killed(id)
	cutAt, cut := e.cut(d.Client)
	switch {
	case killed && cut:
		if killAt.IsZero() || cutAt.IsZero() {
			return recorder.EndedByUnknown
		}
		k, c := killAt.Truncate(time.Second), cutAt.Truncate(time.Second)
		switch {
		case k.Before(c):
			return recorder.EndedByAppTimeout
		case c.Before(k):
			return recorder.EndedBySendTimeout
		}
	case killed:
		return recorder.EndedByAppTimeout
	case cut:
		return recorder.EndedBySendTimeout
	}
	return recorder.EndedByUnknown
}
