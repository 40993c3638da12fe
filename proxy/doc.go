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
//     order, at most BusyBuffersSize of memory at a time. The temp file is
//     created in TempDir with the prefix "proxy-temp-" and unlinked at once,
//     so it only shows up as "(deleted)" under /proc/PID/fd; it grows to the
//     amount spooled and is closed when the response ends. The upstream
//     connection is closed as soon as its body was read, which releases the
//     app worker while the client is still draining.
//
// It is not net/http/httputil.ReverseProxy because the point is control
// over exactly these: when the upstream connection closes and where the
// body waits.
//
// An upstream that cannot be reached or answers garbage before its header
// gets the client a 502, a timeout a 504 (as NGINX). An upstream that fails
// mid-body, or a shutdown that cuts a response, closes the client
// connection so the client sees a broken response, never a short one.
//
// The proxy counts its own requests, upstream time, spooled bytes and open
// temp files in a registry of its own (Registry), served with /healthz by
// AdminHandler.
//
// It does not cache, compress, terminate TLS, retry, balance over several
// upstreams or rewrite headers beyond dropping hop-by-hop ones. It does not
// measure temp files from the outside (the exporter does that for NGINX and
// this proxy alike), start processes (lab) or generate load (loadgen).
package proxy
