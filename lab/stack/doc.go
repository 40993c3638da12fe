// Package stack owns the system under test: an app server × a proxy, each
// a component registered once (RegisterApp, RegisterProxy) in a file of its
// own. A component says what it needs installed, which server models it
// runs (apps), how it starts as a child process, whether the published
// cgroup limits apply to it, and what it can report (the app's send times,
// held long-polls, admin /metrics). The stack composes them for one run:
// it creates each component's cgroup (slowlab/<pid>/<run>/app, .../proxy),
// starts the app, then the proxy in front of it on the routes that have
// one, and builds the exporter's selectors for both.
//
// Stacks by name: "embedded" (the embedded app and proxy, nothing to
// install), "real" (NGINX in front of every installed app server: Gunicorn
// sync, gthread and gevent, Uvicorn, Node.js, each server model run by the
// app that has it; "gunicorn-nginx" is its old name), "auto" (real when
// what the servers need is installed, else embedded, saying which and
// why), any APP+PROXY of registered components such as
// "embedded+nginx", "node+nginx" or "gunicorn+haproxy" (HAProxy, which
// runs routes of its own, haproxy-default and haproxy-buffer-request, and
// refuses NGINX's by name before anything starts, as the other proxies
// refuse its: RouteOwner, CheckRoute), APP+PROXY+PROXY... with several
// proxies, each route run behind the one that runs it (ProxyFor: to
// compare proxies in one session), or "external": an app (and proxy) the
// user runs, which the stack neither starts nor limits; it maps the
// experiments' requests to the user's URLs (Running.Target), finds the
// user's processes through exporter selectors, and reads the cgroup
// limits they run under (External, external.go). Whether a stack answers
// is checked here, once (Answer, reach.go): a session's look at the
// external stack before its first run (External.Reach), a run's at its
// end (Running.Failed: a fast URL that refuses connections), and assess's
// fast URL.
//
// Clients reach the proxy over HTTP/1.1, HTTP/2 (H2Routes, and a proxy's
// own TLS route: OwnedRoute.HTTP2TLS, HTTP2Routes) and, where the
// deployment asks (Deployment.HTTP3) on a TLS route, HTTP/3: QUIC on the
// TLS port over UDP, served by the proxies that can (HTTP3Server: the
// embedded proxy, and Caddy on caddy-tls), refused by name elsewhere.
//
// What runs read back from the components' logs is parsed here, where
// the components are: the apps' WORKER TIMEOUT lines (WorkerTimeouts, a
// run's LOGDIR/RUNID-*.log) and the proxies' send_timeout cuts
// (ClientTimeouts, from the running stack's ProxyErrorLogs); and what an
// app says it holds (HeldCounter) is sampled over a run here too
// (SampleHeld, SampleRunHeld).
//
// A condition names its server as a model (ParseServer) or as "async"
// (AsyncServer), the stack's own event-loop server, whatever it is:
// ResolveServer finds it, and ExpandRuns expands an experiment's
// conditions into runs on a stack, leaving out those it cannot run.
//
// The installed apps serve the same endpoints with the same records:
// wsgi/app.py (WSGI, Gunicorn), asgi/app.py (ASGI, Uvicorn) and node/app.js
// (node:http) in appserver/, each keeping a send log and held-<pid> files
// that appProcess reads.
//
// Adding an app server: in this package, one file app_NAME.go that
// implements App and calls RegisterApp from its init (the stacks, server
// models and the real stack's choice of app come from that registry, so
// no other file here changes), and its test file NAME_test.go, which
// implements apps_test.go's testedApp so the shared serving, long-poll and
// backpressure tests run on it. Outside it: the app itself, in
// appserver/NAME/ (serving the shared endpoints, keeping the send log and
// held-<pid> files appProcess reads), and its Debian package in the
// Makefile's DEBIAN_PACKAGES. A proxy is one file, proxy_NAME.go, that
// implements Proxy and calls RegisterProxy; one whose knobs are not
// NGINX's names its routes for what they do and owns them (RouteOwner),
// and its Debian package goes in DEBIAN_PACKAGES too. CONTRIBUTING.md
// says the same.
//
// It does not decide what runs when (the experiments in lab/...), nor
// measure the load or the processes (loadgen, exporter).
package stack
