package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/exporter"
)

// TestFindPortSelector: an app named by port: alone (a socket this test
// listens on) is found without a process, and the note says what the
// selector names, the sockets on its port, and that the app's cgroup
// limits are therefore unknown, not that it found nothing: the exporter
// counts the app's connections through that same selector. With a pid:
// selector beside it, the process's cgroup is read instead (its limits
// may still fail to read: that is another note).
func TestFindPortSelector(t *testing.T) {
	if _, err := cgroup.Detect(exporter.DefaultCgroupFS); err != nil {
		t.Skipf("no cgroups to read limits from: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := fmt.Sprintf("port:%d", ln.Addr().(*net.TCPAddr).Port)
	e := External{Groups: map[string][]string{"app": {port}}}
	f, err := e.Find(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := "app: " + port + " selects the TCP sockets on its port (one listens there now), not processes: the app's cgroup limits are unknown"
	if len(f.PIDs["app"]) != 0 || len(f.Notes) != 1 || !strings.HasPrefix(f.Notes[0], want) || !strings.Contains(f.String(), want) {
		t.Errorf("found %+v (%s); want no process and the note %q", f, f, want)
	}
	e.Groups["app"] = append(e.Groups["app"], fmt.Sprintf("pid:%d", os.Getpid()))
	if f, err = e.Find(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Cgroups["app"]; !ok || len(f.PIDs["app"]) != 1 || strings.Contains(f.String(), "TCP sockets") {
		t.Errorf("with pid:%d found %+v; want its cgroup and no note of sockets", os.Getpid(), f)
	}
}

// TestFindSelectsNothing: a selector that matches no process fails Find
// with ErrSelectsNothing (what cmd/slowlab exits 2 on), the role and the
// selector named.
func TestFindSelectsNothing(t *testing.T) {
	e := External{Groups: map[string][]string{"app": {"comm:^no-such-process-of-slowlab$"}}}
	_, err := e.Find(context.Background())
	want := `external.groups.app: selector "comm:^no-such-process-of-slowlab$" selects nothing now: no process`
	if !errors.Is(err, ErrSelectsNothing) || err.Error() != want {
		t.Errorf("Find = %v; want ErrSelectsNothing, %q", err, want)
	}
}

// TestExternalValidateNamesFirst: with two bad request kinds or roles,
// Validate names the first in sorted order, whatever the map's.
func TestExternalValidateNamesFirst(t *testing.T) {
	ok := func() External {
		return External{URLs: map[Target]string{TargetFast: "http://127.0.0.1:1/fast"}, Route: RouteDirect,
			Server: Server{Model: "sync", Workers: 2, Threads: 1}, Groups: map[string][]string{"app": {"comm:^x$"}}}
	}
	if err := ok().Validate(); err != nil {
		t.Fatalf("the valid external: %v", err)
	}
	kinds, roles := ok(), ok()
	kinds.URLs["zz"], kinds.URLs["bb"], kinds.URLs["mm"] = "http://127.0.0.1:1/z", "http://127.0.0.1:1/b", "http://127.0.0.1:1/m"
	roles.Groups["zz"], roles.Groups["db"], roles.Groups["mm"] = []string{"comm:^z$"}, []string{"comm:^d$"}, []string{"comm:^m$"}
	for range 20 {
		if err := kinds.Validate(); err == nil || !strings.Contains(err.Error(), `unknown request kind "bb"`) {
			t.Fatalf("three unknown kinds: %v, want bb named", err)
		}
		if err := roles.Validate(); err == nil || !strings.HasPrefix(err.Error(), "external.groups.db: roles are app and proxy") {
			t.Fatalf("three unknown roles: %v, want db named", err)
		}
	}
}
