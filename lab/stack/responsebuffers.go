package stack

import "github.com/slowlab/slowlab/proxy"

// ResponseBuffers are the buffers a proxy of this package holds one
// response in, as its configuration sets them: NGINX as nginxTemplate
// writes them, the embedded proxy at package proxy's defaults (the same
// values). Neither proxy sets SO_SNDBUF or SO_RCVBUF on its sockets, so
// the kernel sizes those (autotuning).
type ResponseBuffers struct {
	BufferSize      int64         // proxy_buffer_size: the header, and the one buffer buffering off relays through
	Buffers         proxy.Buffers // proxy_buffers: with buffering on, the in-memory buffers per response
	BusyBuffersSize int64         // proxy_busy_buffers_size: how much of proxy_buffers may be busy sending (a part of them, not more)
	MaxTempFileSize int64         // proxy_max_temp_file_size: with buffering on, the most written to the temp file
}

// ResponseBuffers returns the response buffers d's proxy runs with.
func (d Deployment) ResponseBuffers() ResponseBuffers {
	return ResponseBuffers{BufferSize: proxy.DefaultBufferSize,
		Buffers:         proxy.Buffers{Count: proxy.DefaultBuffersCount, Size: proxy.DefaultBuffersSize},
		BusyBuffersSize: proxy.DefaultBusyBuffersSize, MaxTempFileSize: d.MaxTempFile()}
}
