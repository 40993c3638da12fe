// Package appserver is the embedded app server: an HTTP/1.1 server whose worker
// models behave like Gunicorn's, so the slow-client and long-poll experiments
// can run where Gunicorn is not installed.
//
// Worker models:
//
//   - sync: W workers, each accepting exactly one connection at a time and
//     closing it after the response; a worker stuck writing to a slow reader
//     takes nothing else, exactly like Gunicorn's sync worker.
//   - gthread: W workers x T threads. As in Gunicorn, a worker takes new
//     connections up to WorkerConnections (Gunicorn's worker_connections,
//     1000) open at once, whether or not a thread is free, and its requests
//     wait for its threads in arrival order. Which worker gets a connection
//     is chance (Gunicorn's processes race for the socket; here each
//     connection goes to a worker drawn at random). So held requests need not spread
//     evenly over workers, and a worker whose threads are all held keeps
//     accepting requests that wait behind them while another worker has
//     free threads. Options.AcceptWhenFree switches to accepting only while
//     a thread is free, which leaves waiting connections in the kernel
//     backlog for any worker with a free thread (a policy Gunicorn lacks).
//     A kept-alive connection's next request queues for its own worker.
//     A new connection takes a thread for its first read, as Gunicorn 20.1
//     hands an accepted connection to its thread pool at once: a client
//     that connects and sends nothing holds a thread (for ever, as in
//     Gunicorn), so T idle connections starve the worker.
//   - async: one goroutine per connection, unbounded (a contrast, not in the
//     published experiment).
//
// Options.WorkerTimeout is Gunicorn's --timeout for the sync model: a
// worker that spends longer on one connection (reading a request that
// never comes, reading a slow upload, writing to a slow reader) has that
// connection closed without a response, logs "WORKER TIMEOUT" and counts
// it in slowlab_target_worker_timeouts_total, and takes the next one.
// Gunicorn's arbiter checks about once a second, so a real worker dies up
// to a second later; its gthread and gevent workers keep notifying while
// connections are held, so the timeout never fires there, and here it is
// ignored for gthread and async alike.
//
// The app endpoints are /fast, /large, /longpoll, /bytes and POST /upload
// (the body read in 64 KiB reads, Server-Timing body;dur its time in
// them); /fast and /bytes take ?work=DURATION&work_kind=sleep|cpu, spent
// inside their Server-Timing (embedded app only); the embedded app alone
// also serves GET /redirect?to=URL&status=301|302 (a redirect hop) and
// GET /page?n=N&size=S&cross=ORIGIN (an HTML document of N sub-resources
// on this origin and another), for the latency-gap experiment; every response
// carries Server-Timing: app;dur=<ms>, and every /large response
// X-Slowlab-Peer-Port (PeerPortHeader): the remote port of the connection
// the app accepted it on. The WSGI, ASGI and Node.js apps (appserver/wsgi,
// appserver/asgi, appserver/node) serve the same endpoints, byte for byte,
// and set these two headers the same way. A separate admin listener,
// outside the worker pool so it answers while every worker is stuck,
// serves /metrics, /healthz and /app-send (each /large response's start
// and end records, SendRecord: the worker process and peer port, then
// app_send_s). With Options.TracerProvider, each request a worker serves
// is a server span continuing the client's W3C traceparent.
//
// The package does not proxy (see package proxy), generate load (loadgen) or
// start processes (lab).
package appserver
