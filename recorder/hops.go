package recorder

// Hop is one row of hops.csv: at one sample of one run, how many bytes of
// one slow download were in one place between the app and the client
// (issue #19's hop list). Hop is one of the Hop* names; Source says how
// the figure was obtained: HopSourceKernel (sock_diag, the kernel's own
// queue and byte counters), HopSourceProxy (the embedded proxy's report of
// its buffers), HopSourceDerived (computed from other hops and the
// configuration, for a proxy that reports nothing, such as NGINX) or
// HopSourceCheck (the conservation check's own rows) or HopSourceMissing.
// A derived figure is kept for the reader (the stacked figure) but is no
// measurement: the conservation check (hops.Check) leaves it out.
//
// Rows of Download HopProxyWide are the proxy's as a whole at that sample
// (its temp files cannot be told apart by download from outside it):
// HopProxyTempFileSize (source HopSourceFile) and HopProxyMemoryBound
// (source HopSourceConfig), with the proxy's SampleSkew and Unaccounted.
type Hop struct {
	RunID    string  `csv:"run_id"`
	TS       float64 `csv:"t_s,seconds"` // seconds since the run's t0
	Download int     `csv:"download"`    // the slow client's number
	Hop      string  `csv:"hop"`
	Bytes    int64   `csv:"bytes"`
	Source   string  `csv:"source"`
}

// The places a slow download's bytes are sampled in, from the app to the
// client. AppWritten and ClientRead are cumulative; the others hold bytes
// now. Conservation: AppWritten = AppSendQueue + ProxyUpstreamRecvQueue +
// ProxyMemory + ProxyTempFile + ProxyClientSendQueue + ClientRecvQueue +
// ClientRead - AppSendQueueDelivered - ProxyClientSendQueueDelivered;
// Unaccounted is the difference. AppSendQueueNotSent is a part of
// AppSendQueue, not subtracted. A send queue holds its bytes until they
// are acknowledged, and the receiver acknowledges late (delayed ACKs), so
// bytes can be in a send queue and in the next receive queue at once: the
// *Delivered hops are those, the receiver's received count beyond the
// sender's acknowledged one, read from the same dump. SampleSkew is how
// far the sockets (between the sample's two dumps) and the proxy's own
// counters moved while one sample was taken, the sample's uncertainty.
const (
	HopAppWritten                    = "app_written"
	HopAppSendQueue                  = "app_send_queue"
	HopAppSendQueueNotSent           = "app_send_queue_notsent"
	HopAppSendQueueDelivered         = "app_send_queue_delivered"
	HopProxyUpstreamRecvQ            = "proxy_upstream_recv_queue"
	HopProxyMemory                   = "proxy_memory"
	HopProxyTempFile                 = "proxy_temp_file"
	HopProxyClientSendQueue          = "proxy_client_send_queue"
	HopProxyClientSendQueueDelivered = "proxy_client_send_queue_delivered"
	HopClientRecvQueue               = "client_recv_queue"
	HopClientRead                    = "client_read"
	HopUnaccounted                   = "unaccounted"
	HopSampleSkew                    = "sample_skew"
	// HopProxyTempFileSize is the summed size (st_size) of the response
	// temp files the proxy holds open, read from the files themselves
	// (stat of the proxy's fds): everything spooled so far, sent or not,
	// a cumulative count (a temp file is never truncated), at the same
	// sample as the sockets. It bounds what the proxy holds in its temp
	// files: at most it, at least it less what the proxy sent to clients.
	HopProxyTempFileSize = "proxy_temp_file_size"
	// HopProxyMemoryBound is the most of one response the proxy holds in
	// memory by its configuration (NGINX's proxy_buffer_size +
	// proxy_buffers): a bound, not a measurement.
	HopProxyMemoryBound = "proxy_memory_bound"
	// HopClientRecvBuffer is the client socket's receive buffer
	// (sk_rcvbuf, sock_diag's memory info): the most ClientRecvQueue can
	// hold, and so the least the conservation check must resolve.
	HopClientRecvBuffer = "client_recv_buffer"
	// HopProxyUpstreamReceived is what the proxy's socket to the app has
	// received (TCP_INFO bytes_received), cumulative: with AppWritten it
	// tests the app's side of the path on its own.
	HopProxyUpstreamReceived = "proxy_upstream_received"
	// HopProxyClientWritten is what the proxy has written to the client's
	// socket (bytes acknowledged + send queue), cumulative: with
	// ClientRead it tests the client's side of the path on its own.
	HopProxyClientWritten = "proxy_client_written"
)

// HopProxyWide is the Download of the rows that are the proxy's as a
// whole at a sample, not one download's.
const HopProxyWide = -1

// Sources of a Hop's figure.
const (
	HopSourceKernel  = "sock_diag"
	HopSourceProxy   = "proxy"
	HopSourceDerived = "derived"
	HopSourceCheck   = "check"
	// HopSourceFile: read from the files themselves (the proxy's open
	// temp files, found through /proc/PID/fd and stat'ed through the fd).
	HopSourceFile = "temp_file"
	// HopSourceConfig: a bound the configuration sets, not a measurement.
	HopSourceConfig = "config"
	// HopSourceMissing: the hop's socket was not in the sample (not open
	// yet, or never found); its bytes are 0 and not counted.
	HopSourceMissing = "missing"
)

// HopsInTransit are the hops between AppWritten and ClientRead, in path
// order: where written bytes not yet read are.
var HopsInTransit = []string{HopAppSendQueue, HopProxyUpstreamRecvQ, HopProxyMemory, HopProxyTempFile,
	HopProxyClientSendQueue, HopClientRecvQueue}

func (Hop) Schema() *Schema[Hop] { return hopSchema }

var hopSchema = Tagged[Hop]("hops.csv")
