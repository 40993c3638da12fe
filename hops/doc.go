// Package hops follows a slow download's bytes from the app to the client,
// hop by hop (issue #19, "buffer anatomy"): how many bytes the app has
// written, how many sit in its socket's send queue, in the proxy's receive
// queue from the app, in the proxy's memory and temp file, in the proxy's
// send queue to the client, in the client's receive queue, and how many
// the client has read.
//
// A Sampler takes a Sample every Interval (50 ms by default): two
// sock_diag dumps back to back (netlink, with TCP_INFO) of the TCP sockets
// on the stack's listening ports, in the sampler's network namespace (a
// dump walks the kernel's whole socket table, so it is not one instant:
// how far the sockets moved between the two is the sample's skew, and a
// sample that moved much is taken again, the least moved try kept); on a proxied route, the size of
// the proxy's temp files, read from the files themselves (TempFiles: the
// proxy's fds in /proc/PID/fd, stat'ed through the fd) just before the
// first dump and just after the second (how far it moved adds to the
// skew); and, for a proxy that reports its buffers (the embedded proxy's
// GET /buffers), that report, read just before and just after the dump so
// the sample knows how far the proxy moved meanwhile. Every socket of the
// path is in one dump: the load generator's own sockets are in the same
// namespace as the stack's, so its receive queue and read count come from
// the same kernel snapshot as the app's send queue.
//
// Hops attributes the sockets to downloads after the run, by ports: the
// client's local address names its socket and the proxy's accepted one;
// the port the app saw the request come from (the app's
// X-Slowlab-Peer-Port response header, appserver.PeerPortHeader) names the
// app's socket and the proxy's socket to the app. It writes what it found
// as recorder.Hop rows (hops.csv) with their source. What the kernel does
// not say, where a proxy does not report it (NGINX's memory and temp file
// per download), is derived from the other hops for the reader and marked
// derived; the proxy's temp files, which nothing outside the proxy can
// tell apart by download, are the proxy's own rows (Download
// recorder.HopProxyWide), with its memory bound per response from its
// configuration.
//
// Check tests the conservation of bytes at every sample from the measured
// hops only (a derived hop stays out), each side of the path on its own
// where the rows have the proxy's cumulative counts of its two sockets:
// the client's (what its sender wrote, less its send queue undelivered, is
// what the client received: client_recv_queue + client_read), the app's
// through a proxy (app_written, less its send queue undelivered, is what
// the proxy's socket to it received) and what the proxy holds, against its
// report (within its memory bound more: a write in flight it has not
// counted yet) or, where it reports nothing (NGINX), a range: per
// download at most its temp files and its memory bound, and over the
// downloads it relays at least what its temp files hold unsent (their size
// less what it sent to the clients) and at most their size plus its memory
// bound per download. Each test allows the sample's skew, for a download
// the most one of its sockets moved while the sample was taken (two sockets of a
// dump are read at two instants; what moved in between is in the later
// one's movement from the first dump to the second). A sample is judged
// only when its skew is below the client's receive buffer, the most the
// smallest hop can hold; the others are counted (Result), not judged, and
// so are samples whose app_written was not measured, or through a proxy
// not measured to the proxy (its socket to the app missing: a dump walks
// the socket table while sockets come and go, and can skip a live one,
// which Hops tells from a closed one by the later samples). It also tests that
// client_read and app_written never fall from a sample to the next. Where
// a test does not hold it names its hops and those missing from the
// sample.
//
// hops does not start stacks, send load (loadgen) or decide where its rows
// go (lab and recorder); it reads sockets and the proxy's fds only on
// the host it runs on.
package hops
