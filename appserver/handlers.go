package appserver

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// RequestIDHeader names a request so its app_send_s can be found on /app-send.
const RequestIDHeader = "X-Slowlab-Request-Id"

// PeerPortHeader is a response header of every GET and HEAD /large (400s
// included), and of no other endpoint, in all four apps: the embedded app
// server and the WSGI, ASGI and Node.js apps. Its value is the remote TCP
// port, in decimal, of the connection the app accepted the request on:
// on a direct connection the client's local port; through a proxy the
// local port of the proxy's upstream socket to the app. A hop sampler
// pairs a slow download's client socket with the app's accepted socket by
// it. It is left out when the app knows no port for the connection (a
// Unix socket, or the port 0 that Uvicorn's --proxy-headers puts in
// place of a trusted proxy's: see appserver/asgi).
const PeerPortHeader = "X-Slowlab-Peer-Port"

// fastBody is the published /fast response: 12 bytes of JSON.
var fastBody = []byte(`{"ok": true}`)

// maxBytes bounds /bytes?n= and /large?size= (1 GiB).
const maxBytes = 1 << 30

// Handler returns the app endpoints, without worker limits. Each endpoint
// and the status codes it counts are listed in endpointCodes too, so its
// metrics exist before its first request.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /fast", s.fast)
	mux.HandleFunc("GET /large", s.large)
	mux.HandleFunc("GET /longpoll", s.longpoll)
	mux.HandleFunc("GET /bytes", s.bytes)
	mux.HandleFunc("POST /upload", s.upload)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /ws", s.ws)
	mux.HandleFunc("GET /redirect", s.redirect)
	mux.HandleFunc("GET /page", s.page)
	return mux
}

func serverTiming(w http.ResponseWriter, start time.Time) {
	w.Header().Set("Server-Timing", fmt.Sprintf("app;dur=%.3f", float64(time.Since(start).Nanoseconds())/1e6))
}

func (s *Server) fast(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if !s.work(w, r, "fast", start) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", "12")
	serverTiming(w, start)
	w.Write(fastBody)
	s.done("fast", http.StatusOK, start)
}

// large writes the body as one fixed block repeated, then records app_send_s:
// generator start until the socket accepted the last byte (not delivery).
func (s *Server) large(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	setPeerPort(w, r)
	size := s.opts.LargeSize
	if q := r.URL.Query().Get("size"); q != "" {
		n, err := strconv.ParseInt(q, 10, 64)
		if err != nil || n < 0 || n > maxBytes {
			http.Error(w, fmt.Sprintf("size %q: want 0..%d bytes", q, maxBytes), http.StatusBadRequest)
			s.done("large", http.StatusBadRequest, start)
			return
		}
		size = n
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	serverTiming(w, start)
	id, pid, port := r.Header.Get(RequestIDHeader), os.Getpid(), peerPort(r)
	s.sends.add(SendRecord{Event: SendStart, ID: id, PID: pid, PeerPort: port})
	written, err := s.writeBlocks(w, size)
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	rec := SendRecord{ID: id, Bytes: written, AppSendS: time.Since(start).Seconds(), Complete: err == nil && written == size, PID: pid, PeerPort: port}
	if err != nil {
		rec.Error = err.Error()
	}
	s.sends.add(rec)
	s.done("large", http.StatusOK, start)
}

// setPeerPort sets PeerPortHeader to the port of r.RemoteAddr, if it has
// one.
func setPeerPort(w http.ResponseWriter, r *http.Request) {
	if n := peerPort(r); n != 0 {
		w.Header().Set(PeerPortHeader, strconv.Itoa(n))
	}
}

// peerPort is the port of r.RemoteAddr; 0 if it has none.
func peerPort(r *http.Request) int {
	_, port, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0
	}
	return int(n)
}

func (s *Server) writeBlocks(w http.ResponseWriter, size int64) (int64, error) {
	var written int64
	for written < size {
		b := s.block
		if rest := size - written; rest < int64(len(b)) {
			b = b[:rest]
		}
		n, err := w.Write(b)
		written += int64(n)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// longpoll holds the request for ?wait= (default 30s), then answers 204.
func (s *Server) longpoll(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	wait := 30 * time.Second
	if q := r.URL.Query().Get("wait"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d < 0 || d > MaxLongPollWait {
			http.Error(w, fmt.Sprintf("wait %q: want a duration from 0s to %s", q, MaxLongPollWait), http.StatusBadRequest)
			s.done("longpoll", http.StatusBadRequest, start)
			return
		}
		wait = d
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		s.done("longpoll", statusClientClosed, start)
		return
	}
	serverTiming(w, start)
	w.WriteHeader(http.StatusNoContent)
	s.done("longpoll", http.StatusNoContent, start)
}

func (s *Server) bytes(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	q := r.URL.Query().Get("n")
	n, err := strconv.ParseInt(q, 10, 64)
	if err != nil || n < 0 || n > maxBytes {
		http.Error(w, fmt.Sprintf("n %q: want 0..%d bytes", q, maxBytes), http.StatusBadRequest)
		s.done("bytes", http.StatusBadRequest, start)
		return
	}
	if !s.work(w, r, "bytes", start) {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	serverTiming(w, start)
	s.writeBlocks(w, n)
	s.done("bytes", http.StatusOK, start)
}

func (s *Server) done(endpoint string, code int, start time.Time) {
	s.metrics.requests.WithLabelValues(endpoint, strconv.Itoa(code)).Inc()
	s.metrics.write.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
}
