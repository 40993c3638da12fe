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
// sample that moved much is taken again), and, for a proxy
// that reports its buffers (the embedded proxy's GET /buffers), that
// report, read just before and just after the dump so the sample knows
// how far the proxy moved meanwhile (its skew). Every socket of the path is
// in one dump: the load generator's own sockets are in the same namespace
// as the stack's, so its receive queue and read count come from the same
// kernel snapshot as the app's send queue.
//
// Hops attributes the sockets to downloads after the run, by ports: the
// client's local address names its socket and the proxy's accepted one;
// the port the app saw the request come from (the app's
// X-Slowlab-Peer-Port response header, appserver.PeerPortHeader) names the
// app's socket and the proxy's socket to the app. It writes what it found
// as recorder.Hop rows (hops.csv) with their source, and what the kernel
// does not say (NGINX's buffers) derived from the other hops and the
// proxy's configured memory, marked derived. Check tests the conservation
// of bytes at every sample: app_written = every hop in between +
// client_read, within 5% or 256 KiB plus the sample's skew; where it does
// not hold it names the hops that were missing from the sample.
//
// hops does not start stacks, send load (loadgen) or decide where its rows
// go (lab and recorder); it reads sockets only on the host it runs on.
package hops
