package proxy

import (
	"net/http"
	"strings"
)

// AccelBufferingHeader is NGINX's per-response switch of proxy buffering,
// sent by the upstream: "no" relays that response unbuffered although
// Buffering is on, "yes" buffered although it is off (NGINX compares the
// value without regard to case and ignores any other). Like NGINX
// (proxy_hide_header's default list), the proxy does not pass it to the
// client.
const AccelBufferingHeader = "X-Accel-Buffering"

// responseBuffering is whether a response is relayed buffered: the
// proxy's Buffering unless the upstream's AccelBufferingHeader says
// otherwise. Measured with NGINX 1.22: on a buffering location an event
// stream with "no" arrives as each event is written; on a non-buffering
// one "yes" holds a close-delimited body until a buffer fills.
func responseBuffering(h http.Header, buffering bool) bool {
	switch v := h.Get(AccelBufferingHeader); {
	case strings.EqualFold(v, "no"):
		return false
	case strings.EqualFold(v, "yes"):
		return true
	}
	return buffering
}
