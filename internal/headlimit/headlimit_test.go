package headlimit

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// A header of exactly the bound reads; one byte more fails with the
// caller's error, and after Lift the rest reads through.
func TestReader(t *testing.T) {
	errTooLong := errors.New("too long")
	h := &Reader{R: strings.NewReader("abcdefgh"), Left: 4, Err: errTooLong}
	b, err := io.ReadAll(io.LimitReader(h, 4))
	if string(b) != "abcd" || err != nil || !h.Reached() {
		t.Fatalf("within the bound: %q %v, reached %v", b, err, h.Reached())
	}
	if n, err := h.Read(make([]byte, 1)); n != 0 || !errors.Is(err, errTooLong) {
		t.Fatalf("one byte over: %d %v, want %v", n, err, errTooLong)
	}
	h.Lift()
	if b, err := io.ReadAll(h); string(b) != "efgh" || err != nil || h.Reached() {
		t.Fatalf("lifted: %q %v", b, err)
	}
}
