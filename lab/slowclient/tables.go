package slowclient

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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

func createTables(dir string) (*tables, error) {
	t := &tables{}
	var err error
	if t.requests, err = recorder.CreateFile[recorder.Request](dir); err == nil {
		if t.larges, err = recorder.CreateFile[recorder.LargeResponse](dir); err == nil {
			if t.resources, err = recorder.CreateFile[recorder.ResourceSample](dir); err == nil {
				if t.runs, err = recorder.CreateFile[recorder.Run](dir); err == nil {
					t.hops, err = recorder.CreateFile[recorder.Hop](dir)
				}
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, t.close())
	}
	return t, nil
}

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

// resumeTables keeps the completed runs of an earlier results directory:
// rows of runs that failed or were aborted are dropped (they run again), and
// the files are opened for appending.
func resumeTables(dir string) (*tables, []recorder.Run, error) {
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(dir, recorder.FileName[recorder.Run]()))
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	ok := map[string]bool{}
	var kept []recorder.Run
	for _, r := range runs {
		if r.Status == recorder.RunOK {
			ok[r.RunID] = true
			kept = append(kept, r)
		}
	}
	err = errors.Join(
		recorder.RewriteFile(dir, func(r recorder.Request) bool { return ok[r.RunID] }),
		recorder.RewriteFile(dir, func(r recorder.LargeResponse) bool { return ok[r.RunID] }),
		recorder.RewriteFile(dir, func(r recorder.ResourceSample) bool { return ok[r.RunID] }),
		recorder.RewriteFile(dir, func(r recorder.Run) bool { return ok[r.RunID] }),
		rewriteIfPresent(dir, func(r recorder.Hop) bool { return ok[r.RunID] }),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	t := &tables{}
	if t.requests, err = recorder.AppendFile[recorder.Request](dir); err == nil {
		if t.larges, err = recorder.AppendFile[recorder.LargeResponse](dir); err == nil {
			if t.resources, err = recorder.AppendFile[recorder.ResourceSample](dir); err == nil {
				if t.runs, err = recorder.AppendFile[recorder.Run](dir); err == nil {
					t.hops, err = recorder.AppendFile[recorder.Hop](dir)
				}
			}
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", errors.Join(err, t.close()))
	}
	return t, kept, nil
}

// rewriteIfPresent is RewriteFile for a file that results written before
// it existed lack (hops.csv): a missing file is created empty.
func rewriteIfPresent[T recorder.Row[T]](dir string, keep func(T) bool) error {
	if _, err := os.Stat(filepath.Join(dir, recorder.FileName[T]())); errors.Is(err, fs.ErrNotExist) {
		w, err := recorder.CreateFile[T](dir)
		if err != nil {
			return err
		}
		return w.Close()
	}
	return recorder.RewriteFile(dir, keep)
}
