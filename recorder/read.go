package recorder

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

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
// its newline. So a final line that lacks its newline is that cut row,
// whether or not it parses (a cut in its last value can still parse):
// Read leaves it out, ends with io.EOF, and says so once (CutRow,
// NoteCutRows) rather than refusing the rows before it. Any other record
// that does not parse stays an error.
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
	if errors.Is(err, io.EOF) || err == nil && !r.src.cutAtEnd(r.cr) {
		return row, err
	}
	if err == nil { // it parses, but a value may be cut: 1234 read as 12
		err = errNoNewline
	}
	var zero T
	if r.src.cutAtEnd(r.cr) {
		r.cut = &CutRow{File: r.name, Line: startLine(err), Offset: start, Err: err}
		if err == errNoNewline || errors.As(err, new(*CellError)) {
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
	if err == nil && rows == nil {
		rows = []T{}
	}
	return rows, true, err
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
