package loopback_test

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/slowlab/slowlab/internal/loopback"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestCheck(t *testing.T) {
	slowlabtest.ResolveWith(t, map[string][]string{
		"localhost": {"127.0.0.1", "::1"},
		"lab.test":  {"127.0.0.2"},
		"mixed":     {"127.0.0.1", "10.0.0.3"},
		"empty":     {},
	})
	for _, tc := range []struct {
		host string
		want string // "" for loopback, else a part of the error
	}{
		{"127.0.0.1", ""},
		{"127.255.0.9", ""},
		{"::1", ""},
		{"::ffff:127.0.0.1", ""},
		{"localhost", ""},
		{"lab.test", ""},
		{"10.0.0.1", "10.0.0.1 is not a loopback address (127.0.0.0/8, ::1, localhost)"},
		{"::ffff:10.0.0.1", "::ffff:10.0.0.1 is not a loopback address"},
		{"::2", "::2 is not a loopback address"},
		{"mixed", "mixed resolves to 10.0.0.3, which is not a loopback address"},
		{"empty", "empty resolves to no address"},
		{"nowhere", "nowhere: cannot resolve it to check that it is a loopback address (127.0.0.0/8, ::1, localhost): lookup nowhere: no such host"},
	} {
		err := loopback.Check(tc.host)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want loopback", tc.host, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.host, err, tc.want)
		}
		if loopback.Is(tc.host) != (tc.want == "") {
			t.Errorf("Is(%s) = %v", tc.host, !(tc.want == ""))
		}
	}
}

// A reserved refusing port refuses connections, and no listener can take
// it while it is held; once released, one can.
func TestRefused(t *testing.T) {
	addr, release, err := loopback.Refused()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Errorf("dial %s: %v, want connection refused", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Errorf("a listener took the reserved port %s", addr)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the released port: %v", err)
	}
	ln.Close()
}
