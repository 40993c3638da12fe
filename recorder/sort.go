package recorder

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// DefaultSortChunk is how many rows a Sorter holds in memory by default:
// a few tens of MB of requests.csv rows.
const DefaultSortChunk = 1 << 16

// sortFanIn is how many sorted runs one merge pass reads at once; more
// are merged in passes, so a sort never holds more files open.
const sortFanIn = 64

// Sorter sorts rows of T of any number in bounded memory: Add holds up to
// Chunk rows, writes each full chunk sorted to a temporary file under Dir
// (a run, in the rows' own CSV contract), and Each merges the runs. Its
// memory is Chunk rows and one row per run merged at once, whatever the
// number of rows. Rows equal under Cmp come out in the order they were
// added. Close removes the temporary files.
type Sorter[T Row[T]] struct {
	Cmp   func(a, b T) int
	Dir   string // "" is os.TempDir()
	Chunk int    // 0 is DefaultSortChunk
	buf   []T
	runs  []string // sorted run files, oldest first
	err   error
}

// Add adds one row. An error (a run could not be written) stays: every
// later call returns it.
func (s *Sorter[T]) Add(row T) error {
	if s.err != nil {
		return s.err
	}
	if s.buf == nil {
		s.buf = make([]T, 0, s.chunk())
	}
	s.buf = append(s.buf, row)
	if len(s.buf) >= s.chunk() {
		s.err = s.spill()
	}
	return s.err
}

func (s *Sorter[T]) chunk() int {
	if s.Chunk > 0 {
		return s.Chunk
	}
	return DefaultSortChunk
}

// spill writes the held rows, sorted, as a new run.
func (s *Sorter[T]) spill() error {
	slices.SortStableFunc(s.buf, s.Cmp)
	name, err := s.writeRun(func(w *Writer[T]) error {
		for _, r := range s.buf {
			if err := w.Write(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.runs = append(s.runs, name)
	s.buf = s.buf[:0]
	return nil
}

// writeRun creates a run file and fills it with write.
func (s *Sorter[T]) writeRun(write func(*Writer[T]) error) (string, error) {
	f, err := os.CreateTemp(s.Dir, "slowlab-sort-*.csv")
	if err != nil {
		return "", fmt.Errorf("sort %s: %w", FileName[T](), err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	w, err := NewWriter[T](bw)
	if err == nil {
		err = write(w)
	}
	err = errors.Join(err, bw.Flush(), f.Close())
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("sort %s: %w", FileName[T](), err)
	}
	return f.Name(), nil
}

// Each calls fn with every row added, in order, and stops at fn's first
// error, which it returns. It may be called once, after the last Add.
func (s *Sorter[T]) Each(fn func(T) error) error {
	if s.err != nil {
		return s.err
	}
	if len(s.runs) > 0 && len(s.buf) > 0 {
		if err := s.spill(); err != nil { // the held rows make the newest run
			return err
		}
	}
	if len(s.runs) == 0 { // every row is held: nothing to merge
		slices.SortStableFunc(s.buf, s.Cmp)
		for _, r := range s.buf {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	for len(s.runs) > sortFanIn {
		batch := s.runs[:sortFanIn]
		name, err := s.writeRun(func(w *Writer[T]) error { return s.merge(batch, w.Write) })
		if err != nil {
			return err
		}
		for _, r := range batch {
			os.Remove(r)
		}
		// The merged runs were the oldest: their run stays first.
		s.runs = append([]string{name}, s.runs[sortFanIn:]...)
	}
	return s.merge(s.runs, fn)
}

// merge calls fn with the rows of the runs, merged in order; among equal
// rows the older run's first.
func (s *Sorter[T]) merge(runs []string, fn func(T) error) error {
	h := &runHeap[T]{cmp: s.Cmp}
	for i, name := range runs {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("sort %s: %w", FileName[T](), err)
		}
		defer f.Close()
		r, err := NewReader[T](bufio.NewReaderSize(f, 1<<16))
		if err != nil {
			return fmt.Errorf("sort %s: %w", FileName[T](), err)
		}
		c := &runCursor[T]{r: r, order: i}
		if ok, err := c.next(); err != nil {
			return err
		} else if ok {
			h.cursors = append(h.cursors, c)
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		c := h.cursors[0]
		if err := fn(c.row); err != nil {
			return err
		}
		switch ok, err := c.next(); {
		case err != nil:
			return err
		case ok:
			heap.Fix(h, 0)
		default:
			heap.Pop(h)
		}
	}
	return nil
}

// Close removes the run files.
func (s *Sorter[T]) Close() error {
	var err error
	for _, r := range s.runs {
		if e := os.Remove(r); e != nil && !errors.Is(e, os.ErrNotExist) {
			err = errors.Join(err, e)
		}
	}
	s.runs, s.buf = nil, nil
	return err
}

// runCursor is a run's next row.
type runCursor[T Row[T]] struct {
	r     *Reader[T]
	row   T
	order int // the run's age: among equal rows the older run's first
}

// next reads the run's next row into c.row; false at the run's end.
func (c *runCursor[T]) next() (bool, error) {
	row, err := c.r.Read()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	c.row = row
	return err == nil, err
}

// runHeap orders the runs' cursors by their rows, then by age.
type runHeap[T Row[T]] struct {
	cursors []*runCursor[T]
	cmp     func(a, b T) int
}

func (h *runHeap[T]) Len() int { return len(h.cursors) }
func (h *runHeap[T]) Less(i, j int) bool {
	if c := h.cmp(h.cursors[i].row, h.cursors[j].row); c != 0 {
		return c < 0
	}
	return h.cursors[i].order < h.cursors[j].order
}
func (h *runHeap[T]) Swap(i, j int) { h.cursors[i], h.cursors[j] = h.cursors[j], h.cursors[i] }
func (h *runHeap[T]) Push(x any)    { h.cursors = append(h.cursors, x.(*runCursor[T])) }
func (h *runHeap[T]) Pop() any {
	c := h.cursors[len(h.cursors)-1]
	h.cursors = h.cursors[:len(h.cursors)-1]
	return c
}
