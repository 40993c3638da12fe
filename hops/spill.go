package hops

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
)

// Spill keeps a run's samples on disk, in the order they were put, so a
// run's memory does not grow with its length: a 32-download run samples
// about 130 sockets 20 times a second. Attribution reads them back one
// at a time.
type Spill struct {
	f   *os.File
	bw  *bufio.Writer
	enc *gob.Encoder
	n   int
}

// NewSpill creates the spill's file in dir (the system's temporary
// directory when "").
func NewSpill(dir string) (*Spill, error) {
	f, err := os.CreateTemp(dir, "slowlab-hops-*.gob")
	if err != nil {
		return nil, fmt.Errorf("hop samples: %w", err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	return &Spill{f: f, bw: bw, enc: gob.NewEncoder(bw)}, nil
}

// Put adds a sample (a Sampler's Sink).
func (s *Spill) Put(smp Sample) error {
	if err := s.enc.Encode(&smp); err != nil {
		return fmt.Errorf("hop samples: write %s: %w", s.f.Name(), err)
	}
	s.n++
	return nil
}

// Len is how many samples were put.
func (s *Spill) Len() int { return s.n }

// Each hands every sample put, in order, to fn, stopping at its first
// error. Put must not be called during or after it.
func (s *Spill) Each(fn func(Sample) error) error {
	if err := s.bw.Flush(); err != nil {
		return fmt.Errorf("hop samples: write %s: %w", s.f.Name(), err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("hop samples: %w", err)
	}
	dec := gob.NewDecoder(bufio.NewReaderSize(s.f, 64<<10))
	for i := 0; i < s.n; i++ {
		var smp Sample
		if err := dec.Decode(&smp); err != nil {
			return fmt.Errorf("hop samples: read sample %d of %d from %s: %w", i+1, s.n, s.f.Name(), err)
		}
		if err := fn(smp); err != nil {
			return err
		}
	}
	return nil
}

// Close removes the spill's file.
func (s *Spill) Close() error {
	return errors.Join(s.f.Close(), os.Remove(s.f.Name()))
}
