package loadgen

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// failAfter accepts n writes, then fails.
type failAfter struct {
	n   int
	got strings.Builder
}

func (f *failAfter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("pipe closed")
	}
	f.n--
	return f.got.Write(b)
}

// Lines from many goroutines arrive whole; after the first error nothing
// more is written and Err says why; an encoding error counts as one.
func TestLineWriter(t *testing.T) {
	out := &failAfter{n: 1000}
	w := NewLineWriter(out)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				w.Line(fmt.Appendf(nil, "g%d line %d %s\n", g, i, strings.Repeat("x", 100)), nil)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.got.String(), "\n"), "\n")
	if w.Err() != nil || len(lines) != 400 {
		t.Fatalf("%d lines, error %v; want 400 and none", len(lines), w.Err())
	}
	for _, l := range lines {
		if len(l) < 100 || !strings.HasPrefix(l, "g") {
			t.Fatalf("line cut or interleaved: %q", l)
		}
	}
	out.n = 0
	w.Line([]byte("lost\n"), nil)
	w.Line([]byte("never\n"), nil)
	if w.Err() == nil || strings.Contains(out.got.String(), "never") {
		t.Errorf("after a failed write: error %v, output ends %q", w.Err(), out.got.String()[out.got.Len()-20:])
	}
	enc := NewLineWriter(&failAfter{n: 10})
	enc.Line(nil, errors.New("cannot encode"))
	enc.Line([]byte("after\n"), nil)
	if enc.Err() == nil || enc.Err().Error() != "cannot encode" {
		t.Errorf("encoding error: %v", enc.Err())
	}
}
