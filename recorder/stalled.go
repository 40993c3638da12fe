package recorder

// StalledDownload is one download of the stalled-reader experiment
// (stalled-downloads.csv). Mode is StallMode (reads StallBytes, then
// nothing for stall_s, then the rest as fast as it comes) or SlowMode
// (paced to rate_bps throughout). StartS is when its request was sent,
// relative to the run's start; StalledS and ResumedS when it stopped and
// resumed reading, LastByteS when it read its last body byte and EndS
// when it ended, all relative to StartS (empty when it never got there).
// Bytes are the body bytes received of ContentLength (-1 when the header
// gave none). Outcome is one of StalledOutcomes, EndedBy one of
// StalledEnders. AppSendS is the app's own record of the response (from
// its first byte to its last write returning, or failing), empty when the
// app left none: a Gunicorn worker killed mid-response writes nothing.
type StalledDownload struct {
	RunID, Route, Server string
	Mode                 string
	Clients, Rep         int
	Client               int
	SizeBytes, RateBps   int64
	AppTimeoutS          Maybe // the app's timeout (Gunicorn --timeout), empty when the app's default
	SendTimeoutS         Maybe // the proxy's send_timeout, empty on the direct route
	StallS, GiveUpS      float64
	StartS               float64
	StalledS, ResumedS   Maybe
	LastByteS            Maybe
	EndS                 float64
	StallBytes           int64
	Bytes, ContentLength int64
	Status               int
	AppSendS             Maybe
	Outcome, EndedBy     string
	Error                string
}

// StalledDownload.Mode values.
const (
	StallMode = "stall"
	SlowMode  = "slow"
)

// StalledDownload.Outcome values: how a download ended, as the client saw
// it.
const (
	StalledComplete  = "complete"  // status 200 and every Content-Length byte received
	StalledTruncated = "truncated" // a response, then EOF (the server's FIN) before Content-Length
	StalledReset     = "reset"     // the connection was reset (RST), with or without a response
	StalledTimeout   = "timeout"   // the client's give-up bound came first: it closed
	StalledError     = "error"     // anything else: refused, no response, another status
)

// StalledOutcomes lists the outcomes in column order.
var StalledOutcomes = []string{StalledComplete, StalledTruncated, StalledReset, StalledTimeout, StalledError}

// StalledDownload.EndedBy values: the component that ended a download
// that did not complete, from the run's evidence about that download:
// the app's WORKER TIMEOUT lines against the worker that served it, the
// proxy's "client timed out" line for it (see the stalled-reader
// experiment's package doc).
const (
	EndedByNone        = "none"         // it completed
	EndedByClient      = "client"       // the client's give-up bound
	EndedByAppTimeout  = "app_timeout"  // the app's worker timeout (WORKER TIMEOUT in its log)
	EndedBySendTimeout = "send_timeout" // the proxy's send_timeout
	EndedByUnknown     = "unknown"      // no evidence names it
)

// StalledEnders lists the EndedBy values in column order.
var StalledEnders = []string{EndedByNone, EndedByClient, EndedByAppTimeout, EndedBySendTimeout, EndedByUnknown}

func (StalledDownload) Schema() *Schema[StalledDownload] { return &stalledSchema }

var stalledSchema = Schema[StalledDownload]{file: "stalled-downloads.csv", cols: []Column[StalledDownload]{
	Col("run_id", 0, func(r *StalledDownload) any { return &r.RunID }),
	Col("route", 0, func(r *StalledDownload) any { return &r.Route }),
	Col("server", 0, func(r *StalledDownload) any { return &r.Server }),
	Col("mode", 0, func(r *StalledDownload) any { return &r.Mode }),
	Col("clients", 0, func(r *StalledDownload) any { return &r.Clients }),
	Col("rep", 0, func(r *StalledDownload) any { return &r.Rep }),
	Col("client", 0, func(r *StalledDownload) any { return &r.Client }),
	Col("size_bytes", whole, func(r *StalledDownload) any { return &r.SizeBytes }),
	Col("rate_bps", whole, func(r *StalledDownload) any { return &r.RateBps }),
	Col("app_timeout_s", msOfS, func(r *StalledDownload) any { return &r.AppTimeoutS }),
	Col("send_timeout_s", msOfS, func(r *StalledDownload) any { return &r.SendTimeoutS }),
	Col("stall_s", msOfS, func(r *StalledDownload) any { return &r.StallS }),
	Col("give_up_s", msOfS, func(r *StalledDownload) any { return &r.GiveUpS }),
	Col("start_s", msOfS, func(r *StalledDownload) any { return &r.StartS }),
	Col("stalled_s", msOfS, func(r *StalledDownload) any { return &r.StalledS }),
	Col("resumed_s", msOfS, func(r *StalledDownload) any { return &r.ResumedS }),
	Col("last_byte_s", msOfS, func(r *StalledDownload) any { return &r.LastByteS }),
	Col("end_s", msOfS, func(r *StalledDownload) any { return &r.EndS }),
	Col("stall_bytes", whole, func(r *StalledDownload) any { return &r.StallBytes }),
	Col("bytes", whole, func(r *StalledDownload) any { return &r.Bytes }),
	Col("content_length", whole, func(r *StalledDownload) any { return &r.ContentLength }),
	Col("status", 0, func(r *StalledDownload) any { return &r.Status }),
	Col("app_send_s", msOfS, func(r *StalledDownload) any { return &r.AppSendS }),
	Col("outcome", 0, func(r *StalledDownload) any { return &r.Outcome }),
	Col("ended_by", 0, func(r *StalledDownload) any { return &r.EndedBy }),
	Col("error", 0, func(r *StalledDownload) any { return &r.Error }),
}}
