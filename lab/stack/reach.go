package stack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slowlab/slowlab/internal/loopback"
)

// ReachTimeout bounds the check of each external URL (Reach): the
// connect and, where one is asked, the response header.
const ReachTimeout = 5 * time.Second

// Reach is how much of an answer Answer wants from a URL.
type Reach int

// The answers, least first.
const (
	// ReachConnect: a TCP connect (a long-poll, stream or upload URL,
	// which may hold a GET open or refuse it by design).
	ReachConnect Reach = iota
	// ReachHeader: a GET's response header, any status; the body is not
	// read (a large URL's would be a download).
	ReachHeader
	// Reach2xx: a GET's response header with a 2xx status (the fast URL,
	// whose every request the experiment counts).
	Reach2xx
)

// ErrNoAnswer is wrapped by Answer's error when the URL did not answer at
// all: the connection was refused, or nothing came within the timeout.
var ErrNoAnswer = errors.New("is the stack running?")

// errRefused is wrapped, with ErrNoAnswer, by Answer's error when the
// connection was refused: nothing listens there.
var errRefused = errors.New("connection refused")

// Answer checks that raw (a URL Validate accepted) answers as want says,
// within timeout: one connection, closed after the response header. Its
// error says what happened ("connection refused", "connected, but no
// response header within 5s", "status 404, want 2xx"). Unless
// allowRemote, it connects only to loopback addresses, checked after name
// resolution. It is the one check of whether a stack answers: the
// sessions' on the external stack (External.Reach) and assess's fast URL.
func Answer(ctx context.Context, raw string, allowRemote bool, want Reach, timeout time.Duration) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var connected atomic.Bool
	dialer := net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		if ap, err := netip.ParseAddrPort(address); !allowRemote && (err != nil || !loopback.Addr(ap.Addr())) {
			return fmt.Errorf("%s: not a loopback address (127.0.0.0/8, ::1)", address)
		}
		return nil
	}}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		connected.Store(err == nil)
		return c, err
	}
	noAnswer := func(err error) error {
		switch {
		case parent.Err() != nil: // interrupted, not unanswered
			return parent.Err()
		case errors.Is(err, syscall.ECONNREFUSED):
			return fmt.Errorf("%w: %w", errRefused, ErrNoAnswer)
		case ctx.Err() != nil && !connected.Load():
			return fmt.Errorf("no TCP connect within %s: %w", timeout, ErrNoAnswer)
		case ctx.Err() != nil:
			return fmt.Errorf("connected, but no response header within %s: %w", timeout, ErrNoAnswer)
		}
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return err
	}
	if want == ReachConnect {
		c, err := dial(ctx, "tcp", canonicalAddr(req))
		if err != nil {
			return noAnswer(err)
		}
		return c.Close()
	}
	tr := &http.Transport{DialContext: dial, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return noAnswer(err)
	}
	resp.Body.Close() // unread: the connection goes with it
	if want == Reach2xx && (resp.StatusCode < 200 || resp.StatusCode > 299) {
		return fmt.Errorf("status %d, want 2xx", resp.StatusCode)
	}
	return nil
}

// canonicalAddr is req's host:port, the scheme's port when it names none.
func canonicalAddr(req *http.Request) string {
	port := req.URL.Port()
	if port == "" {
		port = map[string]string{"https": "443"}[req.URL.Scheme]
		if port == "" {
			port = "80"
		}
	}
	return net.JoinHostPort(req.URL.Hostname(), port)
}

// reachOf is how much a session wants from each kind of URL: the fast
// URL a 2xx, the large one its header (not its body), the ones that may
// hold a GET or want a POST a connect. Over HTTP/2 every URL gets a
// connect only (an HTTP/1.1 GET is no check of a front with prior
// knowledge).
func (e External) reachOf(kind Target) Reach {
	switch {
	case e.HTTP2:
		return ReachConnect
	case kind == TargetFast:
		return Reach2xx
	case kind == TargetLarge:
		return ReachHeader
	}
	return ReachConnect
}

// Reach checks, before a session's first run, that each URL of kinds the
// deployment has answers (Answer, ReachTimeout each), and fails on the
// first that does not, naming it: "external stack: fast_url
// http://127.0.0.1:1/fast: connection refused: is the stack running?".
// Validate stays offline; this is the session's look at the stack.
func (e External) Reach(ctx context.Context, kinds []Target) error {
	for _, k := range Targets {
		raw, ok := e.URLs[k]
		if !ok || (kinds != nil && !slices.Contains(kinds, k)) {
			continue
		}
		if err := Answer(ctx, raw, e.AllowRemote, e.reachOf(k), cmp.Or(e.reachTimeout, ReachTimeout)); err != nil {
			return fmt.Errorf("external stack: %s_url %s: %w", k, raw, err)
		}
	}
	return nil
}

// stopped is, for a session already under way, the external stack's
// fast URL refusing connections: nothing listens there any more, so what
// the run measured is not the stack. A connect that only times out is
// not (an app whose accept queue a run fills drops connections, it does
// not refuse them: that is a finding), nor is an HTTP error of a proxy
// whose app died (the experiment records it).
func (e External) stopped(ctx context.Context) error {
	raw, ok := e.URLs[TargetFast]
	if !ok {
		return nil
	}
	err := Answer(ctx, raw, e.AllowRemote, ReachConnect, cmp.Or(e.reachTimeout, ReachTimeout))
	if errors.Is(err, errRefused) {
		return fmt.Errorf("external stack: fast_url %s stopped answering during the run: %w", raw, err)
	}
	return nil
}
