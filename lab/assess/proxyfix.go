package assess

import (
	"fmt"

	"github.com/slowlab/slowlab/lab/stack"
)

// proxyFix is what fixes a probe on the routes of a proxy other than
// NGINX, in that proxy's own settings (docs/proxies.md measures them):
// fixFor's NGINX directives are not what its operator can set. route is
// the proxy's route that has the setting ("" where it has none) and
// setting what it is; without is the fix where it has none, or where the
// route that has it degraded all the same.
type proxyFix struct {
	route   stack.Route
	setting string
	without string
}

// caddyH2Fix is the fix of the HTTP/2 probes on caddy-tls.
const caddyH2Fix = "Caddy streams each HTTP/2 stream's response as the app sends it, through an upstream connection of its own: reverse_proxy's buffer_responses reads a response whole into memory (measured over HTTP/1.1 on caddy-buffer-response; the lab has no TLS route with it), each stream's response in Caddy's memory"

// proxyFixes are the fixes by the proxy that owns the route and probe.
var proxyFixes = map[string]map[Probe]proxyFix{
	"haproxy": {
		ProbeSlowReaders: {without: "HAProxy relays a response through its tune.bufsize (16 KiB) buffers and has no setting that reads it ahead of the reader: put a proxy that buffers responses between it and the app (NGINX proxy_buffering on, Caddy buffer_responses)"},
		ProbeStalled:     {without: "HAProxy relays a response through its tune.bufsize (16 KiB) buffers and has no setting that reads it ahead of the reader, so a stalled reader holds a worker until timeout client ends it: put a proxy that buffers responses between it and the app (NGINX proxy_buffering on, Caddy buffer_responses)"},
		ProbeSlowUploads: {without: "option http-buffer-request (haproxy-buffer-request) waits only for what fits in tune.bufsize (16 KiB) and passes a longer body on as it comes: put a proxy that reads the whole body first between HAProxy and the app (NGINX proxy_request_buffering on, Caddy buffer_requests)"},
	},
	"caddy": {
		ProbeSlowReaders: {route: stack.RouteCaddyBufferResponse, setting: "reverse_proxy's buffer_responses: Caddy reads the whole response into memory before it writes any of it, each reader's response in its memory (max_buffer_size bounds it)",
			without: "buffer_responses did not take the responses off the app: Caddy's memory or CPU limit may be what held it (see the proxy's memory and CPU above)"},
		ProbeStalled: {route: stack.RouteCaddyBufferResponse, setting: "reverse_proxy's buffer_responses: Caddy reads the whole response into memory, and the stalled reader holds that memory instead of a worker (Caddy has no write timeout at its defaults)",
			without: "buffer_responses did not take the responses off the app: Caddy's memory or CPU limit may be what held it (see the proxy's memory and CPU above)"},
		ProbeSlowUploads: {route: stack.RouteCaddyBufferRequest, setting: "reverse_proxy's buffer_requests: Caddy reads the whole body into memory before it connects to the app",
			without: "buffer_requests did not take the bodies off the app: Caddy's memory or CPU limit may be what held it (see the proxy's memory and CPU above)"},
		// caddy-tls streams each HTTP/2 stream's response as caddy-default
		// does; no TLS route of the lab's has buffer_responses.
		ProbeH2SlowStreams: {without: caddyH2Fix},
		ProbeH2OneConn:     {without: caddyH2Fix},
	},
	"apache": {
		ProbeSlowReaders: {without: "mod_proxy paces the app to the reader, and ProxyIOBufferSize as large as the response (apache-iobuffer) takes most of it off the app but not reliably: put a proxy that buffers responses between Apache and the app (NGINX proxy_buffering on, Caddy buffer_responses)"},
		ProbeStalled:     {without: "mod_proxy paces the app to the reader, and ProxyIOBufferSize as large as the response (apache-iobuffer) takes most of it off the app but not reliably, so a stalled reader holds a worker until Timeout ends it: put a proxy that buffers responses between Apache and the app (NGINX proxy_buffering on, Caddy buffer_responses)"},
		ProbeSlowUploads: {without: "mod_proxy_http passes a request body on as it comes and has no setting that reads it first: put a proxy that does between Apache and the app (NGINX proxy_request_buffering on, Caddy buffer_requests)"},
	},
}

// ownedRouteFix is the fix of probe p on a route another proxy owns, in
// that proxy's settings; "" for a route no proxy owns (fixFor's NGINX
// fixes apply) or a probe the proxy's settings do not decide.
func ownedRouteFix(p Probe, route stack.Route) string {
	f, ok := proxyFixes[route.Owner()][p]
	switch {
	case !ok:
		return ""
	case f.route == "" || f.route == route:
		return f.without
	}
	return fmt.Sprintf("%s (the %s route)", f.setting, f.route)
}
