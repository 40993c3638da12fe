package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// MaxResponseHeaderBytes bounds the bytes a response header may take, its
// 1xx informational responses before it included, in both fast clients:
// the net/http path's Transport.MaxResponseHeaderBytes (whose own default
// is 10 MiB) and lean's; and in the one-shot clients that read their
// response with net/http's ReadResponse, which bounds nothing (the slow
// reader, the SSE client, the slow uploader: headLimit). It is net/http's
// server-side default, http.DefaultMaxHeaderBytes. A longer header fails
// the request with ErrHeaderTooLarge (reason header_too_large), so a
// server that sends header bytes or 1xx responses for ever cannot grow the
// generator's memory or hold a request until its timeout. The WebSocket
// handshake's transport, HTTP/3's and the HTTP/2 framer's header list
// (decoded size, as HTTP/2 counts it) have the same bound.
const MaxResponseHeaderBytes = http.DefaultMaxHeaderBytes

// ErrHeaderTooLarge is a response header longer than
// MaxResponseHeaderBytes, 1xx responses included: lean's error, with the
// text of net/http's (netHTTPHeaderTooLarge).
var ErrHeaderTooLarge = fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", MaxResponseHeaderBytes)

// netHTTPHeaderTooLarge is the start of net/http's transport error for a
// header over its MaxResponseHeaderBytes, which it does not export: its
// text is the only way to tell it.
const netHTTPHeaderTooLarge = "net/http: server response headers exceeded "

// ErrorReasons are the values ErrorReason returns for an error: the
// reason label values of slowlab_loadgen_request_errors_total, each of
// which exists (at 0) from the moment a loop starts.
var ErrorReasons = []string{"timeout", "refused", "reset", "eof", "canceled", "incomplete", "not_sent", "late", "header_too_large", "other"}

// ErrorReason maps an error to a bounded metric label value, one of
// ErrorReasons ("" for nil).
func ErrorReason(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotSent):
		return "not_sent"
	case errors.Is(err, ErrLate):
		return "late"
	case errors.Is(err, ErrHeaderTooLarge), strings.Contains(err.Error(), netHTTPHeaderTooLarge):
		return "header_too_large"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, ErrIncomplete):
		return "incomplete"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	}
	return "other"
}
