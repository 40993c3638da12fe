package stack

import (
	"context"

	"github.com/slowlab/slowlab/appserver"
)

// Served is what an app's send log says of one /large request: the
// worker that served it and whether it finished.
type Served struct {
	// PID is the process that began the body (appserver.SendRecord.PID);
	// PeerPort the remote port of the connection it came on (0: none).
	PID, PeerPort int
	// Ended: the app wrote its end record; Complete: it says the whole
	// body was handed over.
	Ended, Complete bool
	// Followed: the same process began another body after this one's end
	// record, so it outlived this request. Meaningful for a process that
	// serves one request at a time (a Gunicorn sync worker).
	Followed bool
}

// ServedFrom reads an app's send records, in the order the app wrote
// them, by request id. A request with an end record but no start record
// (an app that wrote none) has PID and PeerPort from its end record.
func ServedFrom(recs []appserver.SendRecord) map[string]Served {
	out := map[string]Served{}
	ended := map[int][]string{} // by PID: requests ended and not yet followed
	for _, rec := range recs {
		s := out[rec.ID]
		if s.PID == 0 {
			s.PID, s.PeerPort = rec.PID, rec.PeerPort
		}
		if rec.Event == appserver.SendStart {
			for _, id := range ended[rec.PID] {
				if id != rec.ID {
					f := out[id]
					f.Followed = true
					out[id] = f
				}
			}
			ended[rec.PID] = nil
		} else {
			s.Ended, s.Complete = true, rec.Complete
			if rec.PID != 0 {
				ended[rec.PID] = append(ended[rec.PID], rec.ID)
			}
		}
		out[rec.ID] = s
	}
	return out
}

// ServedReporter is a running app that keeps a send log with the worker
// of each /large request.
type ServedReporter interface {
	AppServed(ctx context.Context) (map[string]Served, error)
}

// AppServed returns what the app's send log says of each /large request,
// by request id; ok is false on an external stack or an app that keeps no
// such log.
func (r *Running) AppServed(ctx context.Context) (served map[string]Served, ok bool, err error) {
	if r.ext != nil {
		return nil, false, nil
	}
	sr, ok := r.app.(ServedReporter)
	if !ok {
		return nil, false, nil
	}
	served, err = sr.AppServed(ctx)
	return served, true, err
}
