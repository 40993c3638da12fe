package recorder

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
// row that parses but lacks its newline gets it.
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

// ReadAll reads CSV rows of type T from r. The header must be exactly
// Header[T](); every record must have as many fields as the header; every
// cell must parse as its column's type (a *CellError names the line,
// column and value otherwise). A killed writer's cut last row is left out
// and noted (see Reader). On error ReadAll also returns the rows before
// the bad record.
func ReadAll[T Row[T]](r io.Reader) ([]T, error) {
	var rows []T
	err := eachRow(r, func(row T) error {
		rows = append(rows, row)
		return nil
	})
	return rows, err
}

// eachRow calls fn with every row of type T read from r, in order; the
// first error, fn's included, ends it.
func eachRow[T Row[T]](r io.Reader, fn func(T) error) error {
	rr, err := NewReader[T](r)
	if err != nil {
		return err
	}
	return eachOf(rr, fn)
}

// eachOf calls fn with every row rr reads, as eachRow does.
func eachOf[T Row[T]](rr *Reader[T], fn func(T) error) error {
	for {
		row, err := rr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err == nil {
			err = fn(row)
		}
		if err != nil {
			return err
		}
	}
}

// Reader reads CSV rows of type T one at a time, as ReadAll does, so a
// file of any length is read in constant memory.
//
// A Writer ends every row with a newline, and a killed writer (kill -9, a
// power loss) can leave only its last row cut short: a final line without
// its newline. So a final line that lacks its newline and does not parse
// is that cut row: Read leaves it out, ends with io.EOF, and says so once
// (CutRow, NoteCutRows) rather than refusing the rows before it. Any other
// record that does not parse stays an error.
type Reader[T Row[T]] struct {
	s   *Schema[T]
	cr  *csv.Reader
	src *tailReader
	// at is, by schema column, its field in the file's records; -1 for
	// an added column the file lacks (Column.Added).
	at []int
	// name is the input's path when it is a file, else the schema's
	// file name; cut is the cut last row left out, if any.
	name  string
	cut   *CutRow
	quiet bool // do not note the cut row (AppendFile notes its own)
}

// tailReader counts the bytes read from r and follows CSV's quoting, so
// a Reader can tell whether the input ends with a complete record: with a
// newline outside quotes.
type tailReader struct {
	r     io.Reader
	n     int64
	state byte // where the last byte left the record: one of the lex constants
	eof   bool
}

// cutAtEnd reports whether the record cr just failed to parse is the cut
// row of a killed writer: it ends the input, and the input does not end
// with a newline outside quotes.
func (t *tailReader) cutAtEnd(cr *csv.Reader) bool {
	return t.eof && t.state != lexEnd && cr.InputOffset() == t.n
}

// The states of tailReader's lexer: where the last byte read left the
// record.
const (
	lexEnd      = iota // after a newline outside quotes: a record is complete
	lexStart           // at a field's start, after a comma
	lexField           // in an unquoted field
	lexQuoted          // in a quoted field
	lexQuoteEnd        // after a quote in a quoted field: it ends or escapes one
)

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.n += int64(n)
	st := t.state
	for _, c := range p[:n] {
		switch {
		case st == lexQuoted:
			if c == '"' {
				st = lexQuoteEnd
			}
		case c == '\n':
			st = lexEnd
		case c == ',':
			st = lexStart
		case c == '"' && st != lexField:
			st = lexQuoted // opens a field, or escapes a quote in one
		default:
			st = lexField
		}
	}
	t.state = st
	if errors.Is(err, io.EOF) {
		t.eof = true
	}
	return n, err
}

// NewReader reads and checks the header of r: it must be Header[T](),
// less any columns marked Added, which then read as their default.
func NewReader[T Row[T]](r io.Reader) (*Reader[T], error) {
	s := schemaOf[T]()
	src := &tailReader{r: r}
	cr := csv.NewReader(src)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1 // the header's length is checked below, by name
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty input: %w", s.file, ErrHeader)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read header: %w", s.file, err)
	}
	at, err := s.checkHeader(header)
	if err != nil {
		return nil, err
	}
	cr.FieldsPerRecord = len(header)
	name := s.file
	if f, ok := r.(interface{ Name() string }); ok {
		name = f.Name()
	}
	return &Reader[T]{s: s, cr: cr, src: src, at: at, name: name}, nil
}

// Read returns the next row, or io.EOF after the last. A record with the
// wrong number of fields or a cell that does not parse is an error (a
// *CellError for a cell) naming the file's contract, unless it is the cut
// last row of a killed writer (see Reader), which Read leaves out.
func (r *Reader[T]) Read() (T, error) {
	start := r.cr.InputOffset()
	row, err := r.read()
	if err == nil || errors.Is(err, io.EOF) {
		return row, err
	}
	var zero T
	if r.src.cutAtEnd(r.cr) {
		r.cut = &CutRow{File: r.name, Line: startLine(err), Offset: start, Err: err}
		if errors.As(err, new(*CellError)) {
			r.cut.Line, _ = r.cr.FieldPos(0) // the record's, not the cell's
		}
		if !r.quiet {
			noteCut(*r.cut)
		}
		return zero, io.EOF
	}
	return zero, err
}

// Cut returns the cut last row Read left out, or nil.
func (r *Reader[T]) Cut() *CutRow { return r.cut }

func (r *Reader[T]) read() (T, error) {
	var row T
	rec, err := r.cr.Read()
	if errors.Is(err, io.EOF) {
		return row, io.EOF
	}
	if errors.Is(err, csv.ErrFieldCount) {
		return row, fmt.Errorf("%s: %w: got %d columns, want %d", r.s.file, err, len(rec), r.cr.FieldsPerRecord)
	}
	if err != nil {
		return row, fmt.Errorf("%s: %w", r.s.file, err)
	}
	for i, c := range r.s.cols {
		j := r.at[i]
		if j < 0 {
			if err := decodeCell(c.field(&row), c.def); err != nil {
				return row, fmt.Errorf("%s: column %q's default %q: %w", r.s.file, c.name, c.def, err)
			}
			continue
		}
		if err := decodeCell(c.field(&row), rec[j]); err != nil {
			line, _ := r.cr.FieldPos(j)
			return row, &CellError{File: r.s.file, Line: line, Column: j + 1, Name: c.name, Value: rec[j], Err: err}
		}
	}
	return row, nil
}

// checkHeader matches got to the schema's columns in order, an added
// column (Column.Added) matching nothing when got lacks it, and returns
// each schema column's place in got (-1: absent). It names the first
// column of got that differs from the schema.
func (s *Schema[T]) checkHeader(got []string) ([]int, error) {
	at := make([]int, len(s.cols))
	j := 0
	for i, c := range s.cols {
		switch {
		case j < len(got) && got[j] == c.name:
			at[i] = j
			j++
		case c.added:
			at[i] = -1
		case j >= len(got):
			return nil, fmt.Errorf("%s: header has %d columns, want %d: column %d %q is missing: %w",
				s.file, len(got), len(s.cols), i+1, c.name, ErrHeader)
		default:
			return nil, fmt.Errorf("%s: header column %d: want %q, got %q: %w", s.file, j+1, c.name, got[j], ErrHeader)
		}
	}
	if j < len(got) {
		return nil, fmt.Errorf("%s: header has %d columns, want %d: unexpected column %d %q: %w",
			s.file, len(got), len(s.cols), j+1, got[j], ErrHeader)
	}
	return at, nil
}

// ReadFile reads the rows of type T from the file at path.
func ReadFile[T Row[T]](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	defer f.Close()
	rows, err := ReadAll[T](f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return rows, nil
}

// ReadOptional reads dir's file of row type T, for a file a results
// directory may lack: present is false when it does not exist, and a file
// there without rows gives an empty, non-nil slice.
func ReadOptional[T Row[T]](dir string) (rows []T, present bool, err error) {
	path := filepath.Join(dir, FileName[T]())
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	rows, err = ReadFile[T](path)
	if err != nil {
		return nil, true, err
	}
	if rows == nil {
		rows = []T{}
	}
	return rows, true, nil
}

// EachRow calls fn with every row of type T of the file at path, in
// order, holding one row at a time (a file too large to read whole); the
// first error, fn's included, ends it, naming the file.
func EachRow[T Row[T]](path string, fn func(T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := eachRow(f, fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
