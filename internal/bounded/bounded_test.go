package bounded

import (
	"errors"
	"io"
	"strings"
	"testing"
)

var errTooLong = errors.New("too long")

// A header of exactly the bound reads; one byte more fails with the
// caller's error, and after Lift the rest reads through.
func TestHeader(t *testing.T) {
	h := &Header{R: strings.NewReader("abcdefgh"), Left: 4, Err: errTooLong}
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

// A body of exactly the bound reads whole; one byte more fails with the
// caller's error after the bound's bytes, never cut short silently.
func TestBody(t *testing.T) {
	for _, tc := range []struct {
		body, want string
		err        error
	}{
		{"abcd", "abcd", nil},
		{"abc", "abc", nil},
		{"abcde", "abcd", errTooLong},
	} {
		b, err := io.ReadAll(&Body{R: strings.NewReader(tc.body), Left: 4, Err: errTooLong})
		if string(b) != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%q: read %q, %v; want %q, %v", tc.body, b, err, tc.want, tc.err)
		}
	}
}
