package lab

import (
	"errors"

	"github.com/slowlab/slowlab/recorder"
)

// RunFiles are the open results files of an experiment's session: its
// own per-item file (uploads, downloads, connections: I), its per-run
// summaries (R), and the shared requests.csv and resource-samples.csv.
type RunFiles[I recorder.Row[I], R recorder.Row[R]] struct {
	Items     *recorder.FileWriter[I]
	Runs      *recorder.FileWriter[R]
	Requests  *recorder.FileWriter[recorder.Request]
	Resources *recorder.FileWriter[recorder.ResourceSample]
	closed    bool
	closeErr  error
}

// OpenRunFiles creates the four files in dir; on an error it closes those
// it created.
func OpenRunFiles[I recorder.Row[I], R recorder.Row[R]](dir string) (*RunFiles[I, R], error) {
	f := &RunFiles[I, R]{}
	var err error
	if f.Items, err = recorder.CreateFile[I](dir); err == nil {
		if f.Runs, err = recorder.CreateFile[R](dir); err == nil {
			if f.Requests, err = recorder.CreateFile[recorder.Request](dir); err == nil {
				f.Resources, err = recorder.CreateFile[recorder.ResourceSample](dir)
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return f, nil
}

// Close closes every file once; a second call reports the first's errors.
func (f *RunFiles[I, R]) Close() error {
	if f.closed {
		return f.closeErr
	}
	f.closed = true
	var errs []error
	if f.Items != nil {
		errs = append(errs, f.Items.Close())
	}
	if f.Runs != nil {
		errs = append(errs, f.Runs.Close())
	}
	if f.Requests != nil {
		errs = append(errs, f.Requests.Close())
	}
	if f.Resources != nil {
		errs = append(errs, f.Resources.Close())
	}
	f.closeErr = errors.Join(errs...)
	return f.closeErr
}
