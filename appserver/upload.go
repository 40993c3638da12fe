package appserver

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// UploadChunk is the size of each read of an /upload body, in every app.
const UploadChunk = 64 << 10

// UploadBytesHeader is a response header of every POST /upload in all four
// apps: the body bytes the app read, in decimal. The JSON body says the
// same: {"bytes": N}.
const UploadBytesHeader = "X-Slowlab-Body-Bytes"

// UploadTimingMetric is the Server-Timing metric of an /upload response
// that holds the app's time in body reads: from before its first read of
// the body to the read that found its end, waits for the client included
// (`Server-Timing: app;dur=..., body;dur=<ms>`).
const UploadTimingMetric = "body"

// upload reads the request body in UploadChunk reads to its end and
// answers 200 with how many bytes it read and how long reading took. A
// worker reading a slow upload is as busy as one writing to a slow
// reader. A body that ends early (the client left, or was cut) gets a 400
// that nobody may read, counted as 499 like a long-poll whose client left.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	n, read, err := readBody(r.Body, make([]byte, UploadChunk))
	if err != nil {
		w.Header().Set(UploadBytesHeader, strconv.FormatInt(n, 10))
		w.Header().Set("Server-Timing", uploadTiming(start, read))
		http.Error(w, fmt.Sprintf("read body: %v after %d bytes", err, n), http.StatusBadRequest)
		s.done("upload", statusClientClosed, start)
		return
	}
	body := fmt.Sprintf(`{"bytes": %d}`, n)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set(UploadBytesHeader, strconv.FormatInt(n, 10))
	w.Header().Set("Server-Timing", uploadTiming(start, read))
	io.WriteString(w, body)
	s.done("upload", http.StatusOK, start)
}

// readBody reads body with buf until its end, returning the bytes read
// and the time from the first read to the last.
func readBody(body io.Reader, buf []byte) (int64, time.Duration, error) {
	t0 := time.Now()
	var n int64
	for {
		k, err := body.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, time.Since(t0), nil
		}
		if err != nil {
			return n, time.Since(t0), err
		}
	}
}

// uploadTiming is an /upload response's Server-Timing value.
func uploadTiming(start time.Time, read time.Duration) string {
	return fmt.Sprintf("app;dur=%.3f, %s;dur=%.3f", float64(time.Since(start).Nanoseconds())/1e6, UploadTimingMetric, float64(read.Nanoseconds())/1e6)
}
