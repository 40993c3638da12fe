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
	RunID       string  `csv:"run_id"`
	Route       string  `csv:"route"`
	Server      string  `csv:"server"`
	SlowClients int     `csv:"slow_clients"`
	Rep         int     `csv:"rep"`
	Client      int     `csv:"client"`
	Status      int     `csv:"status"`
	Bytes       int64   `csv:"bytes"`
	ReceiveS    float64 `csv:"receive_s,seconds"`
	AppSendS    Maybe   `csv:"app_send_s,seconds"`
	Complete    bool    `csv:"complete"`
	Outcome     string  `csv:"outcome"`
	Error       string  `csv:"error"`
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

func (LargeResponse) Schema() *Schema[LargeResponse] { return largeResponseSchema }

var largeResponseSchema = Tagged[LargeResponse]("large-responses.csv")
