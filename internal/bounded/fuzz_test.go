package bounded

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

// seeds adds each file of testdata (response heads Gunicorn sent, an
// exporter's /metrics body) with a bound below, at and above its length,
// read in whole and in small pieces.
func seeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*"))
	if err != nil || len(files) == 0 {
		f.Fatalf("seeds: %v %v", files, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		n := uint16(len(b))
		f.Add(b, n-1, uint8(0), false)
		f.Add(b, n, uint8(7), true)
		f.Add(b, n+1, uint8(255), false)
		f.Add(b, n/2, uint8(1), true)
	}
}

// source is data as a peer gives it: at most chunk+1 bytes a read, with
// io.EOF after the last byte or (withEOF) along with it, counting what
// was taken from it.
type source struct {
	r     io.Reader
	chunk int
	taken int
}

func newSource(data []byte, chunk uint8, withEOF bool) *source {
	var r io.Reader = bytes.NewReader(data)
	if withEOF {
		r = iotest.DataErrReader(r)
	}
	return &source{r: r, chunk: int(chunk) + 1}
}

func (s *source) Read(p []byte) (int, error) {
	if len(p) > s.chunk {
		p = p[:s.chunk]
	}
	n, err := s.r.Read(p)
	s.taken += n
	return n, err
}

// FuzzHeader: Header takes no more than its bound from the peer and keeps
// the bytes in order; shorter data reads whole, longer fails with Err
// (data of exactly the bound may do either, as the peer's EOF comes with
// its last byte or after it), and Reached says the bound was read; after
// Lift the rest reads through.
func FuzzHeader(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte, bound uint16, chunk uint8, withEOF bool) {
		src := newSource(data, chunk, withEOF)
		left := int(bound)
		h := &Header{R: src, Left: int64(left), Err: errTooLong}
		got, err := io.ReadAll(h)
		if len(got) > left || src.taken > left || !bytes.HasPrefix(data, got) {
			t.Fatalf("bound %d: kept %d bytes, took %d; want at most the bound, a prefix of the data", left, len(got), src.taken)
		}
		switch {
		case len(data) < left && (err != nil || len(got) != len(data)):
			t.Fatalf("%d bytes under the bound %d: read %d, %v; want them all", len(data), left, len(got), err)
		case len(data) > left && !errors.Is(err, errTooLong):
			t.Fatalf("%d bytes over the bound %d: read %d, %v; want %v", len(data), left, len(got), err, errTooLong)
		case len(data) == left && (len(got) != left || err != nil && !errors.Is(err, errTooLong)):
			t.Fatalf("%d bytes at the bound: read %d, %v", left, len(got), err)
		}
		if h.Reached() != (len(got) == left) {
			t.Fatalf("read %d of the bound %d, Reached %t", len(got), left, h.Reached())
		}
		h.Lift()
		rest, err := io.ReadAll(h)
		if err != nil || !bytes.Equal(append(got, rest...), data) {
			t.Fatalf("lifted: %d more bytes, %v; want the other %d", len(rest), err, len(data)-len(got))
		}
	})
}

// FuzzBody: Body takes no more than its bound and one byte from the peer;
// data up to the bound reads whole, as reading it unbounded does, and
// longer data gives the bound's bytes, then Err, never a body cut short
// silently.
func FuzzBody(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte, bound uint16, chunk uint8, withEOF bool) {
		src := newSource(data, chunk, withEOF)
		left := int(bound)
		got, err := io.ReadAll(&Body{R: src, Left: int64(left), Err: errTooLong})
		if len(got) > left || src.taken > left+1 || !bytes.HasPrefix(data, got) {
			t.Fatalf("bound %d: kept %d bytes, took %d; want at most the bound (and one more taken), a prefix of the data", left, len(got), src.taken)
		}
		if len(data) <= left {
			whole, werr := io.ReadAll(newSource(data, chunk, withEOF))
			if err != nil || !bytes.Equal(got, whole) || werr != nil {
				t.Fatalf("%d bytes within the bound %d: read %d, %v; unbounded %d, %v", len(data), left, len(got), err, len(whole), werr)
			}
		} else if !errors.Is(err, errTooLong) || len(got) != left {
			t.Fatalf("%d bytes over the bound %d: read %d, %v; want the bound's, then %v", len(data), left, len(got), err, errTooLong)
		}
	})
}
