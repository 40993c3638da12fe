package stalledreader

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/lab/stack"
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
	kills  []stack.WorkerTimeout
	cuts   []stack.ClientTimeout
}

// gatherEvidence reads a run's evidence once its downloads ended: each
// line is written before the client can see its effect (Gunicorn's master
// logs WORKER TIMEOUT before it kills, NGINX logs "client timed out"
// before it closes, the apps write a start record before the body).
func gatherEvidence(ctx context.Context, running *stack.Running, logDir, runID string) (evidence, error) {
	var e evidence
	var err error
	if e.kills, err = stack.WorkerTimeouts(logDir, runID); err != nil {
		return e, err
	}
	if e.cuts, err = stack.ClientTimeouts(running.ProxyErrorLogs()); err != nil {
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

// ender says which component ended a download that began at t0 plus
// d.StartS: none when it completed; otherwise the component evidence
// about that download names: app_timeout when a WORKER TIMEOUT line
// names the worker serving it, send_timeout when the proxy logged
// closing it, and when both did, the one logged first. A download the
// client gave up on (its bound) was ended by that component when it was
// logged before the client gave up, else by the client. The logs' clocks
// count whole seconds: two instants within the same second cannot be
// ordered, and give unknown; so does a download no evidence names.
func ender(d Download, id string, e evidence, t0 time.Time) string {
	if d.Outcome == OutcomeComplete {
		return EndedByNone
	}
	by, at := e.first(id, d.Client)
	if d.Outcome != OutcomeTimeout {
		return by
	}
	if by == EndedByUnknown && at.IsZero() {
		return EndedByClient // no evidence: the client's own bound
	}
	gaveUp := t0.Add(time.Duration((d.StartS + d.EndS) * float64(time.Second)))
	switch a, c := at.Truncate(time.Second), gaveUp.Truncate(time.Second); {
	case by != EndedByUnknown && !at.IsZero() && a.Before(c):
		return by
	case !at.IsZero() && c.Before(a):
		return EndedByClient
	}
	return EndedByUnknown
}

// first is the component evidence names as having ended download client
// (request id), and when it was logged: unknown with a zero time when
// none does; unknown with the time when both did within one second.
func (e evidence) first(id string, client int) (string, time.Time) {
	killAt, killed := e.killed(id)
	cutAt, cut := e.cut(client)
	switch {
	case killed && cut:
		if killAt.IsZero() || cutAt.IsZero() {
			return EndedByUnknown, time.Time{}
		}
		k, c := killAt.Truncate(time.Second), cutAt.Truncate(time.Second)
		switch {
		case k.Before(c):
			return EndedByAppTimeout, killAt
		case c.Before(k):
			return EndedBySendTimeout, cutAt
		}
		return EndedByUnknown, killAt
	case killed:
		return EndedByAppTimeout, killAt
	case cut:
		return EndedBySendTimeout, cutAt
	}
	return EndedByUnknown, time.Time{}
}
