package assess

import (
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab/stack"
)

// TestOwnedRouteFixes: on a route HAProxy, Caddy or Apache owns, the fix
// of a probe its settings decide is in that proxy's terms (NGINX's
// proxy_request_buffering was the fix printed for slow uploads behind
// HAProxy); where the proxy has the setting on another route, it names
// that route; on the route that has it, it says it did not do it; NGINX's
// routes keep NGINX's fixes.
func TestOwnedRouteFixes(t *testing.T) {
	const proxies = "docs/proxies.md"
	for _, tc := range []struct {
		p     Probe
		route stack.Route
		want  string // in the fix; "" for none in particular
		doc   string
	}{
		{ProbeSlowUploads, stack.RouteHAProxyDefault, "waits only for what fits in tune.bufsize", proxies},
		{ProbeSlowUploads, stack.RouteHAProxyBufferRequest, "waits only for what fits in tune.bufsize", proxies},
		{ProbeSlowReaders, stack.RouteHAProxyDefault, "has no setting that reads it ahead", proxies},
		{ProbeStalled, stack.RouteHAProxyBufferRequest, "until timeout client ends it", proxies},
		{ProbeSlowUploads, stack.RouteCaddyDefault, "buffer_requests: Caddy reads the whole body into memory before it connects to the app (the caddy-buffer-request route)", proxies},
		{ProbeSlowUploads, stack.RouteCaddyBufferResponse, "(the caddy-buffer-request route)", proxies},
		{ProbeSlowUploads, stack.RouteCaddyBufferRequest, "buffer_requests did not take the bodies off the app", proxies},
		{ProbeSlowReaders, stack.RouteCaddyDefault, "(the caddy-buffer-response route)", proxies},
		{ProbeStalled, stack.RouteCaddyBufferRequest, "(the caddy-buffer-response route)", proxies},
		{ProbeSlowReaders, stack.RouteCaddyBufferResponse, "buffer_responses did not take the responses off the app", proxies},
		{ProbeSlowReaders, stack.RouteApacheDefault, "ProxyIOBufferSize as large as the response (apache-iobuffer)", proxies},
		{ProbeSlowReaders, stack.RouteApacheIOBuffer, "not reliably", proxies},
		{ProbeSlowUploads, stack.RouteApacheIOBuffer, "mod_proxy_http passes a request body on as it comes", proxies},
		{ProbeH2SlowStreams, stack.RouteCaddyTLS, "reverse_proxy's buffer_responses reads a response whole", proxies},
		{ProbeH2OneConn, stack.RouteCaddyTLS, "reverse_proxy's buffer_responses reads a response whole", proxies},
		{ProbeH2OneConn, stack.RouteH2BufferingOff, "proxy_buffering on at the HTTP/2 front", "docs/h2-slow-client.md"},
		// Probes no proxy setting decides here, and NGINX's routes, keep
		// fixFor's.
		{ProbeIdle, stack.RouteHAProxyDefault, "", "docs/idle-connections.md"},
		{ProbeHeldStreams, stack.RouteCaddyDefault, "", "docs/long-poll.md"},
		{ProbeSlowUploads, stack.RouteBufferingOff, "", "docs/slow-upload.md"},
		{ProbeSlowReaders, stack.RouteBufferingOff, "", "docs/slow-client.md"},
		{ProbeSlowReaders, stack.RouteDirect, "", "docs/slow-client.md"},
	} {
		fix, doc := fixFor(tc.p, tc.route, Held{})
		if !strings.Contains(fix, tc.want) || doc != tc.doc {
			t.Errorf("%s on %s: fix %q (%s), want %q (%s)", tc.p, tc.route, fix, doc, tc.want, tc.doc)
		}
		if doc == proxies && (strings.Contains(fix, "NGINX's default") || strings.Contains(fix, "send_timeout")) {
			t.Errorf("%s on %s: fix %q names an NGINX setting as the route's own", tc.p, tc.route, fix)
		}
	}
	// Every proxy named owns routes, and a route named as a setting's is
	// that proxy's.
	owners := map[string]bool{}
	for _, r := range stack.OwnedRoutes() {
		owners[r.Owner()] = true
	}
	for name, fixes := range proxyFixes {
		if !owners[name] {
			t.Errorf("proxyFixes: %s owns no route (owners %v)", name, owners)
		}
		for p, f := range fixes {
			if !slices.Contains(Probes, p) || f.without == "" || (f.route != "") != (f.setting != "") {
				t.Errorf("proxyFixes[%s][%s] = %+v", name, p, f)
			}
			if f.route != "" && f.route.Owner() != name {
				t.Errorf("proxyFixes[%s][%s]: route %s is %q's", name, p, f.route, f.route.Owner())
			}
		}
	}
	if o := stack.RouteBufferingOn.Owner(); o != "" {
		t.Errorf("proxy-buffering-on: owner %q, want none", o)
	}
}
