package slowclient

import (
	"errors"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// tables holds the open CSV writers of one results directory.
type tables struct {
	requests  *recorder.FileWriter[recorder.Request]
	larges    *recorder.FileWriter[recorder.LargeResponse]
	resources *recorder.FileWriter[recorder.ResourceSample]
	runs      *recorder.FileWriter[recorder.Run]
	hops      *recorder.FileWriter[recorder.Hop]
	jitter    recorder.Jitter // resource sampling lateness over all runs
	closed    bool
	closeErr  error
}

// openTables creates the session's files in dir, or opens them to append
// when resuming (lab.Matrix has already dropped the rows of runs that did
// not complete).
func openTables(dir string, resume bool) (*tables, error) {
	t := &tables{}
	var err error
	if t.requests, err = lab.OpenFile[recorder.Request](dir, resume); err == nil {
		if t.larges, err = lab.OpenFile[recorder.LargeResponse](dir, resume); err == nil {
			if t.resources, err = lab.OpenFile[recorder.ResourceSample](dir, resume); err == nil {
				if t.runs, err = lab.OpenFile[recorder.Run](dir, resume); err == nil {
					t.hops, err = lab.OpenFile[recorder.Hop](dir, resume)
				}
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, t.close())
	}
	return t, nil
}

// files are the results files besides runs.csv, whose rows of incomplete
// runs a resume drops.
var files = []string{recorder.FileName[recorder.Request](), recorder.FileName[recorder.LargeResponse](),
	recorder.FileName[recorder.ResourceSample](), recorder.FileName[recorder.Hop]()}

// close flushes, syncs and closes every file once; every error reaches the
// caller, also on the second call.
func (t *tables) close() error {
	if t.closed {
		return t.closeErr
	}
	t.closed = true
	var errs []error
	if t.requests != nil {
		errs = append(errs, t.requests.Close())
	}
	if t.larges != nil {
		errs = append(errs, t.larges.Close())
	}
	if t.resources != nil {
		errs = append(errs, t.resources.Close())
	}
	if t.runs != nil {
		errs = append(errs, t.runs.Close())
	}
	if t.hops != nil {
		errs = append(errs, t.hops.Close())
	}
	t.closeErr = errors.Join(errs...)
	return t.closeErr
}
