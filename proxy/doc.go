// Package proxy is the embedded reverse proxy that stands in for NGINX where
// NGINX is not installed. It reproduces what the slow-client experiment
// measures about proxy_buffering, with NGINX's knobs and defaults:
//
//   - Every client request opens a new HTTP/1.1 connection to the upstream
//     with "Connection: close", as NGINX does without an upstream keepalive
//     block. Client connections may be kept alive.
//   - Buffering off (proxy_buffering off): the body is relayed through one
//     BufferSize buffer as fast as the client reads, so the upstream worker
//     stays busy until the client has taken nearly everything.
//   - Buffering on: the upstream is read as fast as it delivers into memory
//     (one BufferSize buffer plus Buffers, as NGINX keeps the start of the
//     body in the proxy_buffer_size buffer); once all of it holds unsent
//     data, the oldest is spooled in TempFileWriteSize batches to a temp
//     file of at most MaxTempFileSize (then reading waits for the client:
//     back-pressure), while the client is fed from memory and file in
//     order, at most BusyBuffersSize at a time (of memory buffers, or of
//     the temp file with sendfile(2)). The temp file is created in
//     TempDir with the prefix "proxy-temp-" and unlinked at once,
//     so it only shows up as "(deleted)" under /proc/PID/fd; it grows to the
//     amount spooled and is closed when the response ends. The upstream
//     connection is closed as soon as its body was read, which releases the
//     app worker while the client is still draining.
//
// The request side (slow-upload), with NGINX's knobs and defaults:
//
//   - Request buffering on (proxy_request_buffering on, the default): a
//     request's whole body is read before the upstream is contacted. A body
//     up to ClientBodyBufferSize (client_body_buffer_size, 16k) stays in
//     memory; a larger one goes, all of it, to a temp file in
//     ClientBodyTempDir (client_body_temp_path; by default
//     "client_body_temp" under TempDir) with the prefix "client-body-temp-",
//     unlinked at once like the response's. The upstream then gets the body
//     at once, with its Content-Length, so a slow uploader never holds an
//     app worker. A client that leaves mid-body is dropped without a
//     response.
//   - Request buffering off: the body is streamed to the upstream as it
//     arrives (chunked if the client's was), and the app waits for the
//     client.
//   - ClientHeaderTimeout (client_header_timeout, 60 s) bounds how long a
//     client may take to send a request's header.
//
// Clients may speak HTTP/2 (Options.HTTP2, NGINX's `listen ... http2`):
// with prior knowledge on a cleartext listener (h2c) and by ALPN under TLS
// (Options.TLS), at most MaxConcurrentStreams streams a connection
// (http2_max_concurrent_streams, 128). Each stream is a request with its
// own upstream connection as above, so one client connection can hold as
// many app workers as it has streams; slowlab_proxy_http2_streams counts
// them. send_timeout applies to the client connection, shared by its
// streams, and to each stream's writes (as NGINX's per stream).
//
// Clients may speak HTTP/3 too (Options.HTTP3, NGINX's `listen ...
// quic`): quic-go's server on the UDP port of the TLS listener's
// address, the same certificate, at most MaxConcurrentStreams streams a
// connection, each stream a request as an HTTP/2 stream is (its own
// upstream connection, send_timeout on its writes, reset when it passes).
//
// It is not net/http/httputil.ReverseProxy because the point is control
// over exactly these: when the upstream connection closes and where the
// body waits.
//
// An upstream that cannot be reached or answers garbage before its header
// gets the client a 502, a timeout a 504 (as NGINX); so does a response
// header (1xx responses included) over 1 MiB, net/http's default bound on
// a request header: a 502 "upstream sent too big header". An upstream that fails
// mid-body, or a shutdown that cuts a response, closes the client
// connection so the client sees a broken response, never a short one.
//
// The proxy counts its own requests, upstream time, spooled bytes and open
// temp files in a registry of its own (Registry), served with /healthz by
// AdminHandler.
//
// Where each response's body is right now, AdminHandler serves as GET
// /buffers (Proxy.Buffered; Content-Type application/json): a JSON array
// with one object per request in flight, listed from the moment its
// upstream connection is established until its handler returns, e.g.
//
//	[{"client":"127.0.0.1:50326","upstream_local":"127.0.0.1:35370",
//	  "buffering":true,"memory_bytes":65589,"temp_file_bytes":8257483,
//	  "temp_file_size_bytes":8323019,"upstream_read_bytes":8388608,
//	  "client_written_bytes":65536}]
//
// client is the client connection's remote address as the proxy sees it
// (the client's local address), upstream_local the local address of the
// proxy's connection to the upstream (the app's peer). The byte counts are
// of the body as relayed, never the header nor chunked framing:
// upstream_read_bytes read from the upstream so far; client_written_bytes
// handed to the client's socket so far (a write and flush that returned,
// so the kernel holds or has sent them); memory_bytes read and not yet
// written, in memory (with buffering off the one relay buffer);
// temp_file_bytes read and not yet written, in the temp file (spooled, not
// yet sent). Bytes being written count as memory or temp file until the
// write returns: at most BusyBuffersSize (buffering on) or BufferSize
// (off), part of which the kernel may already hold. Each object is taken
// under the request's lock (with buffering on, the spool's), so in every
// one, exactly:
//
//	upstream_read_bytes = memory_bytes + temp_file_bytes + client_written_bytes
//
// temp_file_size_bytes is outside that sum: the temp file's size, all that
// was spooled, sent or not, as the file looks from outside (the exporter's
// view; NGINX's temp files also keep what was sent). Not counted anywhere:
// body bytes that arrived with the upstream's header, or read ahead with
// chunked framing, still in the upstream connection's read buffer (at most
// BufferSize), until the relay reads them.
//
// It does not cache, compress, terminate TLS, retry, balance over several
// upstreams or rewrite headers beyond dropping hop-by-hop ones. It does not
// measure temp files from the outside (the exporter does that for NGINX and
// this proxy alike), start processes (lab) or generate load (loadgen).
package proxy
