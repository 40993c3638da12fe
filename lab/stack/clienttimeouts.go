package stack

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/slowlab/slowlab/proxy"
)

// ClientTimeoutLog is what NGINX logs, at info, when send_timeout closes
// a client that took nothing, and the embedded proxy alike
// (proxy.ClientTimeoutLog).
const ClientTimeoutLog = proxy.ClientTimeoutLog

// ClientTimeout is one ClientTimeoutLog line of a proxy's log.
type ClientTimeout struct {
	// Target is the request's target as the line quotes it, e.g.
	// /large?download=1.
	Target string
	// At is when it was logged (NGINX: to the second, local time); zero
	// when the line has no time this parser knows.
	At time.Time
}

// ClientTimeouts returns the ClientTimeoutLog lines of a run's proxy
// error logs (as its running stack's ProxyErrorLogs names them; none
// without a proxy), in file and line order. It fails when a log cannot be
// read.
func ClientTimeouts(errorLogs []string) ([]ClientTimeout, error) {
	var out []ClientTimeout
	for _, p := range errorLogs {
		err := LogLines(p, func(line []byte) {
			if ct, ok := ParseClientTimeout(line); ok {
				out = append(out, ct)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("proxy log: %w", err)
		}
	}
	return out, nil
}

// ParseClientTimeout reads a ClientTimeoutLog line, e.g. NGINX's
//
//	2026/12/03 12:56:31 [info] 7#0: *3 client timed out (110: Connection timed out) while sending to client, client: 127.0.0.1, server: , request: "GET /large?download=1 HTTP/1.1", upstream: "http://127.0.0.1:8000/large?download=1", host: "127.0.0.1:8080"
//
// ok is false for any other line, or one that quotes no request.
func ParseClientTimeout(line []byte) (ct ClientTimeout, ok bool) {
	i := bytes.Index(line, []byte(ClientTimeoutLog))
	if i < 0 {
		return ct, false
	}
	rest := string(line[i+len(ClientTimeoutLog):])
	const key = `, request: "`
	j := strings.Index(rest, key)
	if j < 0 {
		return ct, false
	}
	req := rest[j+len(key):]
	end := strings.IndexByte(req, '"')
	if end < 0 {
		return ct, false
	}
	parts := strings.Fields(req[:end])
	if len(parts) < 2 {
		return ct, false
	}
	ct.Target = parts[1]
	ct.At = logTime(string(line[:i]))
	return ct, true
}
