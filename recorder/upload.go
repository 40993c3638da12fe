package recorder

// Upload is one slow upload of the slow-upload experiment (uploads.csv).
// StartS is when its request header was sent, relative to the run's
// start; SendS how long the client took to hand the body to its socket
// (from the header to the last write returned, or to the write that
// failed); TotalS until the response was read or the upload failed.
// AppReadS is the app's time in body reads as it reported it
// (Server-Timing body;dur), AppBytes the bytes it said it read; both are
// empty when no answer of the app's arrived (a reset, a proxy's 502).
// Outcome is one of UploadOutcomes.
type Upload struct {
	RunID, Route, Server string
	Uploaders, Rep       int
	Client               int
	SizeBytes, RateBps   int64
	AppTimeoutS          Maybe // the app's timeout (Gunicorn --timeout), empty when the app's default
	StartS               float64
	SendS, TotalS        float64
	SentBytes            int64
	Status               int
	AppReadS             Maybe
	AppBytes             Maybe
	Outcome              string
	Error                string
}

// Upload.Outcome values: how an upload ended, as the client saw it.
const (
	UploadOK          = "ok"      // status 200 and the whole body sent
	UploadServerError = "5xx"     // a 5xx status (a proxy's 502 for an app worker killed mid-body)
	UploadStatus      = "status"  // another status than 200 or 5xx
	UploadReset       = "reset"   // the connection was reset or closed before any response
	UploadTimeout     = "timeout" // the client's timeout, or the run's end, came first
	UploadError       = "error"   // anything else: connect refused, a malformed response
)

// UploadOutcomes lists the outcomes in column order.
var UploadOutcomes = []string{UploadOK, UploadServerError, UploadStatus, UploadReset, UploadTimeout, UploadError}

func (Upload) Schema() *Schema[Upload] { return &uploadSchema }

var uploadSchema = Schema[Upload]{file: "uploads.csv", cols: []Column[Upload]{
	Col("run_id", 0, func(r *Upload) any { return &r.RunID }),
	Col("route", 0, func(r *Upload) any { return &r.Route }),
	Col("server", 0, func(r *Upload) any { return &r.Server }),
	Col("uploaders", 0, func(r *Upload) any { return &r.Uploaders }),
	Col("rep", 0, func(r *Upload) any { return &r.Rep }),
	Col("client", 0, func(r *Upload) any { return &r.Client }),
	Col("size_bytes", whole, func(r *Upload) any { return &r.SizeBytes }),
	Col("rate_bps", whole, func(r *Upload) any { return &r.RateBps }),
	Col("app_timeout_s", msOfS, func(r *Upload) any { return &r.AppTimeoutS }),
	Col("start_s", msOfS, func(r *Upload) any { return &r.StartS }),
	Col("send_s", msOfS, func(r *Upload) any { return &r.SendS }),
	Col("total_s", msOfS, func(r *Upload) any { return &r.TotalS }),
	Col("sent_bytes", whole, func(r *Upload) any { return &r.SentBytes }),
	Col("status", 0, func(r *Upload) any { return &r.Status }),
	Col("app_read_s", msOfS, func(r *Upload) any { return &r.AppReadS }),
	Col("app_bytes", whole, func(r *Upload) any { return &r.AppBytes }),
	Col("outcome", 0, func(r *Upload) any { return &r.Outcome }),
	Col("error", 0, func(r *Upload) any { return &r.Error }),
}}
