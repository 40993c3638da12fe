package recorder

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// ErrHeader is returned (wrapped) by ReadAll when the header row is missing
// or differs from Header.
var ErrHeader = errors.New("header does not match the CSV contract")

// Writer writes rows of type T as CSV. It is safe for concurrent use.
type Writer[T Row[T]] struct {
	mu      sync.Mutex
	out     *countingWriter
	cw      *csv.Writer
	schema  *Schema[T]
	enc     encoder
	scratch T // Write encodes from here so the row argument never escapes
	// truncate, when set, cuts the output back to a size: a row that
	// could be written only in part (a full disk) is removed, so the file
	// keeps every complete row and stays readable.
	truncate func(size int64) error
}

// countingWriter counts the bytes that reached w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// NewWriter writes the header of T to w, flushes it and returns a Writer
// for the rows.
func NewWriter[T Row[T]](w io.Writer) (*Writer[T], error) {
	rw := newRowWriter[T](w, 0)
	if err := rw.put(Header[T]()); err != nil {
		return nil, fmt.Errorf("write %s header: %w", rw.schema.file, err)
	}
	return rw, nil
}

// newRowWriter returns a Writer that writes rows only (the header is
// already there): size bytes are already in w.
func newRowWriter[T Row[T]](w io.Writer, size int64) *Writer[T] {
	out := &countingWriter{w: w, n: size}
	return &Writer[T]{out: out, cw: csv.NewWriter(out), schema: schemaOf[T]()}
}

// ReplaceFile replaces dir/name atomically: write fills a temporary file
// in dir, which is synced and renamed over dir/name, so a reader or a
// crash sees the old file or the new one, never a mix. The new file is
// readable by all, like the files CreateFile makes.
func ReplaceFile(dir, name string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	return err
}

// Write writes one row and flushes it to the underlying io.Writer, so rows
// reach the file as they are measured. It returns the csv.Writer's error,
// which stays set once a write has failed. A row written only in part is
// cut off again where the Writer can (a FileWriter's file), so what is on
// disk is every row before it, complete.
func (w *Writer[T]) Write(row T) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scratch = row
	good := w.out.n
	if err := w.put(encode(&w.enc, w.schema.cols, &w.scratch)); err != nil {
		err = fmt.Errorf("write %s row: %w", w.schema.file, err)
		if w.truncate != nil && w.out.n > good {
			if terr := w.truncate(good); terr != nil {
				err = errors.Join(err, fmt.Errorf("remove the partial %s row: %w", w.schema.file, terr))
			} else {
				w.out.n = good
			}
		}
		return err
	}
	return nil
}

// put writes one record and flushes it; the error stays set once a write
// has failed.
func (w *Writer[T]) put(rec []string) error {
	if err := w.cw.Write(rec); err != nil {
		return err
	}
	w.cw.Flush()
	return w.cw.Error()
}

// FileWriter is a Writer on a results file created by CreateFile.
type FileWriter[T Row[T]] struct {
	*Writer[T]
	f *os.File
}

// CreateFile creates dir (if needed) and the new file dir/FileName[T](),
// and writes the header. It refuses to overwrite an existing file (the
// error wraps fs.ErrExist), because that file holds earlier measurements.
func CreateFile[T Row[T]](dir string) (*FileWriter[T], error) {
	path := filepath.Join(dir, FileName[T]())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	w, err := NewWriter[T](f)
	if err != nil {
		// Nothing was measured yet; do not leave a headerless file behind.
		return nil, errors.Join(fmt.Errorf("create %s: %w", path, err), f.Close(), os.Remove(path))
	}
	w.truncate = cutTo(f)
	return &FileWriter[T]{Writer: w, f: f}, nil
}

// AppendFile opens the existing file dir/FileName[T]() for appending, after
// checking that its header is Header[T]() and that its rows parse, so a
// resumed experiment adds rows to the same results. A cut last row (a
// killed session's, see Reader) is cut off the file first, which is
// noted (NoteCutRows), so the next row does not run on from it; a last
// header that lacks its newline gets it.
func AppendFile[T Row[T]](dir string) (*FileWriter[T], error) {
	path := filepath.Join(dir, FileName[T]())
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("append %s: %w", path, err)
	}
	rr, err := NewReader[T](bytes.NewReader(b))
	if err == nil {
		rr.quiet = true
		err = eachOf(rr, func(T) error { return nil })
	}
	if err != nil {
		return nil, fmt.Errorf("append %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("append %s: %w", path, err)
	}
	size := int64(len(b))
	if cut := rr.Cut(); cut != nil {
		size = cut.Offset
		err = f.Truncate(size)
		if err == nil {
			c := *cut
			c.File, c.Removed = path, true
			noteCut(c)
		}
	}
	if err == nil && size > 0 && b[size-1] != '\n' {
		_, err = f.Write([]byte{'\n'})
		size++
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("append %s: %w", path, err), f.Close())
	}
	w := newRowWriter[T](f, size)
	w.truncate = cutTo(f)
	return &FileWriter[T]{Writer: w, f: f}, nil
}

// cutTo returns a function that cuts f to a size and writes on from there.
func cutTo(f *os.File) func(int64) error {
	return func(size int64) error {
		if err := f.Truncate(size); err != nil {
			return err
		}
		_, err := f.Seek(size, io.SeekStart)
		return err
	}
}

// Name returns the path of the file.
func (w *FileWriter[T]) Name() string { return w.f.Name() }

// Sync commits the rows written so far to stable storage. Write already
// hands every row to the kernel, which survives a crash of slowlab; Sync is
// for surviving a crash of the host.
func (w *FileWriter[T]) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.f.Name(), err)
	}
	return nil
}

// Close syncs and closes the file.
func (w *FileWriter[T]) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cw.Flush()
	err := w.cw.Error()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close %s: %w", w.f.Name(), err)
	}
	return nil
}
