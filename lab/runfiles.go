package lab

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/slowlab/slowlab/recorder"
)

// RunFiles are the open results files of an experiment's session: its
// own per-item file (uploads, downloads, connections: I), its per-run
// summaries (R), and the shared requests.csv and resource-samples.csv.
type RunFiles[I recorder.Row[I], R recorder.RunRow[R]] struct {
	Items     *recorder.FileWriter[I]
	Runs      *recorder.FileWriter[R]
	Requests  *recorder.FileWriter[recorder.Request]
	Resources *recorder.FileWriter[recorder.ResourceSample]
	closed    bool
	closeErr  error
}

// openRunFiles creates the four files in dir, or opens them to append
// (resume); on an error it closes those it opened.
func openRunFiles[I recorder.Row[I], R recorder.RunRow[R]](dir string, resume bool) (*RunFiles[I, R], error) {
	f := &RunFiles[I, R]{}
	var err error
	if f.Items, err = OpenFile[I](dir, resume); err == nil {
		if f.Runs, err = OpenFile[R](dir, resume); err == nil {
			if f.Requests, err = OpenFile[recorder.Request](dir, resume); err == nil {
				f.Resources, err = OpenFile[recorder.ResourceSample](dir, resume)
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return f, nil
}

// OpenFile creates T's results file in dir, or, to resume, opens it to
// append (creating it when results written before the file existed lack
// it).
func OpenFile[T recorder.Row[T]](dir string, resume bool) (*recorder.FileWriter[T], error) {
	if resume {
		_, err := os.Stat(filepath.Join(dir, recorder.FileName[T]()))
		if err == nil {
			return recorder.AppendFile[T](dir)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("resume: %w", err)
		}
	}
	return recorder.CreateFile[T](dir)
}

// ReplaceRows replaces dir's file of row type T with one of rows,
// atomically (recorder.ReplaceFile): a reader or a crash sees the old
// file or the new one.
func ReplaceRows[T recorder.Row[T]](dir string, rows []T) error {
	return recorder.ReplaceFile(dir, recorder.FileName[T](), func(f io.Writer) error {
		w, err := recorder.NewWriter[T](f)
		if err != nil {
			return err
		}
		return WriteRows[T](w, rows)
	})
}

// WriteRows writes rows to w, stopping at the first error.
func WriteRows[T any](w RowWriter[T], rows []T) error {
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			return err
		}
	}
	return nil
}

// UseRunFiles sets m up to write the RunFiles[I, R] layout: its Files and
// Open, which stores the open files in *f for the experiment's Measure.
func UseRunFiles[S Planned, I recorder.Row[I], R recorder.RunRow[R]](m *Matrix[S, R], f **RunFiles[I, R]) {
	m.Files = []string{recorder.FileName[I](), recorder.FileName[recorder.Request](), recorder.FileName[recorder.ResourceSample]()}
	m.Open = func(dir string, resume bool) (RowWriter[R], func() error, error) {
		files, err := openRunFiles[I, R](dir, resume)
		if err != nil {
			return nil, nil, err
		}
		*f = files
		return files.Runs, files.Close, nil
	}
}

// UseRunFilesWith sets m up as UseRunFiles does, with one more file of
// the experiment's own, E's, beside them, which it stores in *extra.
func UseRunFilesWith[S Planned, I recorder.Row[I], R recorder.RunRow[R], E recorder.Row[E]](m *Matrix[S, R], f **RunFiles[I, R], extra **recorder.FileWriter[E]) {
	UseRunFiles(m, f)
	m.Files = append(m.Files, recorder.FileName[E]())
	open := m.Open
	m.Open = func(dir string, resume bool) (RowWriter[R], func() error, error) {
		var err error
		if *extra, err = OpenFile[E](dir, resume); err != nil {
			return nil, nil, err
		}
		runs, closeRuns, err := open(dir, resume)
		if err != nil {
			return nil, nil, errors.Join(err, (*extra).Close())
		}
		return runs, func() error { return errors.Join(closeRuns(), (*extra).Close()) }, nil
	}
}

// Close closes every file once; a second call reports the first's errors.
func (f *RunFiles[I, R]) Close() error {
	if f.closed {
		return f.closeErr
	}
	f.closed = true
	f.closeErr = errors.Join(CloseFile(f.Items), CloseFile(f.Runs), CloseFile(f.Requests), CloseFile(f.Resources))
	return f.closeErr
}

// CloseFile closes w, unless it was never opened (nil).
func CloseFile[T recorder.Row[T]](w *recorder.FileWriter[T]) error {
	if w == nil {
		return nil
	}
	return w.Close()
}
