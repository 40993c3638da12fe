// Package netemtest holds what tests of emulated network paths share: the
// check that a path left nothing behind once closed.
package netemtest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// namedBefore are the named namespaces there when the test binary started:
// left by a process killed outright in an earlier session, not by a test.
var namedBefore, _ = filepath.Glob("/var/run/netns/slowlab-*")

// CheckNothingLeft fails t if anything a path creates is still there: a
// link named slowlab-* in this network namespace, a slowlab-* entry in
// /var/run/netns, or a thread or file descriptor of this process in
// another network namespace or on a TUN device. Threads and descriptors
// are given until slowlabtest.HangGuard to go (a closed namespace's last
// thread may still be exiting).
func CheckNothingLeft(t testing.TB) {
	t.Helper()
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, "slowlab-") {
			t.Errorf("link %s left in the test's namespace", l.Attrs().Name)
		}
	}
	names, err := filepath.Glob("/var/run/netns/slowlab-*")
	names = slices.DeleteFunc(names, func(n string) bool { return slices.Contains(namedBefore, n) })
	if len(names) > 0 || err != nil {
		t.Errorf("named namespaces left: %v %v", names, err)
	}
	held := slowlabtest.HeldNamespaces
	for deadline := time.Now().Add(slowlabtest.HangGuard); len(held()) > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if h := held(); len(h) > 0 {
		t.Errorf("still held: %v", h)
	}
}
