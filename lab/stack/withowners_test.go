package stack

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRealStackTakesTheRoutesProxy: --stack real with a route another
// proxy owns runs that proxy beside NGINX (as gunicorn+nginx+haproxy
// would), once however many of its routes; without the proxy installed it
// fails naming what to install; a stack named by its components is left as
// it is, and CheckRoute still refuses the route there. Installed looks the
// proxy up on PATH, which the test controls with an executable of its name.
func TestRealStackTakesTheRoutesProxy(t *testing.T) {
	real, _, err := compose(NameReal, realApps(), realProxy())
	if err != nil {
		t.Fatal(err)
	}
	if err := real.CheckRoute(RouteHAProxyDefault); err == nil {
		t.Fatalf("the real stack without HAProxy runs %s", RouteHAProxyDefault)
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "haproxy"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	st, err := real.WithOwners(RouteDirect, RouteHAProxyDefault, RouteHAProxyBufferRequest)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range st.proxies() {
		names = append(names, p.Name())
	}
	if !slices.Equal(names, []string{realProxy(), "haproxy"}) {
		t.Errorf("proxies %v, want %s and haproxy once", names, realProxy())
	}
	for _, r := range []Route{RouteDirect, RouteHAProxyDefault, RouteHAProxyBufferRequest} {
		if err := st.CheckRoute(r); err != nil {
			t.Errorf("%s: %v", r, err)
		}
	}
	if len(real.More) != 0 {
		t.Errorf("WithOwners changed the stack it was called on: %v", real.More)
	}

	t.Setenv("PATH", t.TempDir())
	if _, err := real.WithOwners(RouteHAProxyDefault); err == nil || !strings.Contains(err.Error(), "apt-get install haproxy") {
		t.Errorf("HAProxy not installed: %v, want an error naming its package", err)
	}

	named, err := composeName("gunicorn+nginx")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := named.WithOwners(RouteHAProxyDefault); err != nil || len(got.More) != 0 || got.CheckRoute(RouteHAProxyDefault) == nil {
		t.Errorf("gunicorn+nginx with %s: more %v, %v; want it as it is, the route refused", RouteHAProxyDefault, got.More, err)
	}
}
