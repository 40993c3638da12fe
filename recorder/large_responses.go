package recorder

// LargeResponse is one row of large-responses.csv: one slow download of
// /large, as every experiment whose slow clients download it writes them
// (SummarizeRun and SummarizeTempRun read them back). AppSendS is the
// app's own send time when the app reported it. Complete says the client
// received the whole body with status 200; Outcome is the verdict on the
// download, one of the Download* values, and Error says why when it is
// not DownloadComplete. Only complete downloads enter the app_send_s and
// client_receive_s medians.
type LargeResponse struct {
	RunID, Route, Server             string
	SlowClients, Rep, Client, Status int
	Bytes                            int64
	ReceiveS                         float64
	AppSendS                         Maybe
	Complete                         bool
	Outcome                          string
	Error                            string
}

// Outcomes of a slow download (LargeResponse.Outcome).
const (
	// DownloadComplete: the client read every byte with status 200 and the
	// app reported finishing its send.
	DownloadComplete = "complete"
	// DownloadClientError: the request failed (connect, reset, timeout,
	// interrupted, or a status other than 200).
	DownloadClientError = "client_error"
	// DownloadShortBody: the body ended before its Content-Length.
	DownloadShortBody = "short_body"
	// DownloadAppUnfinished: the client read it all, but the app never
	// reported finishing its send, so app_send_s is missing.
	DownloadAppUnfinished = "app_unfinished"
)

func (LargeResponse) Schema() *Schema[LargeResponse] { return &largeResponseSchema }

var largeResponseSchema = Schema[LargeResponse]{file: "large-responses.csv", cols: []Column[LargeResponse]{
	Col("run_id", 0, func(r *LargeResponse) any { return &r.RunID }),
	Col("route", 0, func(r *LargeResponse) any { return &r.Route }),
	Col("server", 0, func(r *LargeResponse) any { return &r.Server }),
	Col("slow_clients", 0, func(r *LargeResponse) any { return &r.SlowClients }),
	Col("rep", 0, func(r *LargeResponse) any { return &r.Rep }),
	Col("client", 0, func(r *LargeResponse) any { return &r.Client }),
	Col("status", 0, func(r *LargeResponse) any { return &r.Status }),
	Col("bytes", 0, func(r *LargeResponse) any { return &r.Bytes }),
	Col("receive_s", msOfS, func(r *LargeResponse) any { return &r.ReceiveS }),
	Col("app_send_s", msOfS, func(r *LargeResponse) any { return &r.AppSendS }),
	Col("complete", 0, func(r *LargeResponse) any { return &r.Complete }),
	Col("outcome", 0, func(r *LargeResponse) any { return &r.Outcome }),
	Col("error", 0, func(r *LargeResponse) any { return &r.Error }),
}}
