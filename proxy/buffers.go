package proxy

import (
	"cmp"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"sync"
)

// Buffered is where one in-flight response's body is at one moment, as the
// proxy knows it: what it has read from the upstream, what it holds in
// memory and in its temp file, and what it has handed to the client's
// socket. Every byte count is of the body as relayed (after the upstream's
// chunked framing is removed); the response header counts nowhere.
//
// The four counts are taken together under the request's lock, so at every
// snapshot, exactly:
//
//	UpstreamReadBytes = MemoryBytes + TempFileBytes + ClientWrittenBytes
type Buffered struct {
	// Client is the client connection's remote address (ip:port) as the
	// proxy sees it: the client's local address.
	Client string `json:"client"`
	// UpstreamLocal is the local address (ip:port) of the proxy's
	// connection to the upstream: what the app sees as its peer.
	UpstreamLocal string `json:"upstream_local"`
	// Buffering is the proxy's Options.Buffering.
	Buffering bool `json:"buffering"`
	// MemoryBytes is body read from the upstream and not yet handed to
	// the client's socket that is in the proxy's buffers: with buffering
	// off the one relay buffer (at most BufferSize), with buffering on the
	// memory buffers (at most BufferSize + Buffers), including the ones
	// the client is being sent from (at most BusyBuffersSize).
	MemoryBytes int64 `json:"memory_bytes"`
	// TempFileBytes is body in the temp file not yet handed to the
	// client's socket: spooled and not yet sent, including the chunk
	// being sent (at most BusyBuffersSize). 0 with buffering off.
	TempFileBytes int64 `json:"temp_file_bytes"`
	// TempFileSizeBytes is the temp file's size: everything this response
	// spooled, sent or not (the temp file is never truncated or reused).
	// Outside the identity; it is what a look at the file from outside
	// (the exporter's) sees.
	TempFileSizeBytes int64 `json:"temp_file_size_bytes"`
	// UpstreamReadBytes is body read from the upstream so far.
	UpstreamReadBytes int64 `json:"upstream_read_bytes"`
	// ClientWrittenBytes is body handed to the client's socket so far: a
	// write (and flush) to it that returned, so the kernel holds or has
	// sent every byte counted.
	ClientWrittenBytes int64 `json:"client_written_bytes"`
}

// flow is one request's body accounting, embedded in its upstream, and
// listed in Proxy.flows while the request is in flight.
type flow struct {
	client        string   // r.RemoteAddr
	upstreamLocal net.Addr // the upstream connection's LocalAddr
	buffering     bool

	// mu guards the counts below. With buffering on it is also the
	// spool's lock, so a snapshot sees the spool between two of its
	// steps, never in the middle of one.
	mu           sync.Mutex
	read         int64 // body read from the upstream
	memory       int64 // read, not written, in memory buffers
	tempFile     int64 // read, not written, in the temp file
	tempFileSize int64 // the temp file's size
	written      int64 // body written and flushed to the client
}

// relayed records n bytes read into the one relay buffer (buffering off).
func (f *flow) relayed(n int) {
	f.mu.Lock()
	f.read += int64(n)
	f.memory += int64(n)
	f.mu.Unlock()
}

// sentFromMemory records n bytes of memory handed to the client's socket.
func (f *flow) sentFromMemory(n int64) {
	f.mu.Lock()
	f.memory -= n
	f.written += n
	f.mu.Unlock()
}

func (f *flow) snapshot() Buffered {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Buffered{
		Client:             f.client,
		UpstreamLocal:      f.upstreamLocal.String(),
		Buffering:          f.buffering,
		MemoryBytes:        f.memory,
		TempFileBytes:      f.tempFile,
		TempFileSizeBytes:  f.tempFileSize,
		UpstreamReadBytes:  f.read,
		ClientWrittenBytes: f.written,
	}
}

// track lists f as in flight; untrack removes it, if listed.
func (p *Proxy) track(f *flow) {
	p.flowMu.Lock()
	p.flows[f] = struct{}{}
	p.flowMu.Unlock()
}

func (p *Proxy) untrack(f *flow) {
	p.flowMu.Lock()
	delete(p.flows, f)
	p.flowMu.Unlock()
}

// Buffered returns where the body of every request in flight is now, one
// entry per request, ordered by client address then upstream address
// (never nil). A request is in flight from the moment its upstream
// connection is established until its handler returns: after the last
// body byte was handed to the client's socket, or when the request failed.
// Buffered lists the requests in flight when it is called, then takes
// each one's counts under its lock (consistent: see Buffered), one after
// the other, so requests starting and ending never wait for it.
func (p *Proxy) Buffered() []Buffered {
	p.flowMu.Lock()
	live := make([]*flow, 0, len(p.flows))
	for f := range p.flows {
		live = append(live, f)
	}
	p.flowMu.Unlock()
	out := make([]Buffered, len(live))
	for i, f := range live {
		out[i] = f.snapshot()
	}
	slices.SortFunc(out, func(a, b Buffered) int {
		return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.UpstreamLocal, b.UpstreamLocal))
	})
	return out
}

// serveBuffered is the admin GET /buffers: Buffered as a JSON array.
func (p *Proxy) serveBuffered(w http.ResponseWriter, _ *http.Request) {
	b, err := json.Marshal(p.Buffered())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}
