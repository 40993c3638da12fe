package loadgen

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// CheckTarget validates a target URL: http only, a host, and unless
// allowRemote, a loopback address (127.0.0.0/8, ::1 or localhost). Host
// names other than localhost are refused without allowRemote rather than
// resolved, so no lookup can turn a name into a remote address.
func CheckTarget(raw string, allowRemote bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("target %q: not a URL: %v", raw, err)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("target %q: scheme %q not supported (want http://HOST:PORT/PATH)", raw, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("target %q: no host (want http://HOST:PORT/PATH)", raw)
	}
	if allowRemote || IsLoopback(host) {
		return u, nil
	}
	return nil, fmt.Errorf("target %q: %s is not a loopback address (127.0.0.0/8, ::1, localhost); pass --allow-remote to load another host", raw, host)
}

// IsLoopback reports whether host (an IP literal or "localhost") is loopback.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
