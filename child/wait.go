package child

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"time"
)

// pollEvery is how often the Wait functions look again.
const pollEvery = 25 * time.Millisecond

// WaitLog polls p's log until done says it shows readiness, and returns
// what done found in it; it fails if p exits, deadline passes or ctx ends
// first. For servers that print no ready line of their own (Gunicorn).
func WaitLog(ctx context.Context, p *Process, deadline time.Time, done func(log []byte) ([][]byte, bool)) ([][]byte, error) {
	for {
		if b, err := os.ReadFile(p.LogPath()); err == nil {
			if m, ok := done(b); ok {
				return m, nil
			}
		}
		if err := p.poll(ctx, deadline, "its log does not show it ready"); err != nil {
			return nil, err
		}
	}
}

// WaitHTTP polls url until it answers 200: the readiness of a server that
// prints no ready line of its own.
func WaitHTTP(ctx context.Context, p *Process, url string, deadline time.Time) error {
	return waitHTTP(ctx, p, url, deadline, &http.Transport{Proxy: nil, DisableKeepAlives: true})
}

// WaitH2C is WaitHTTP over cleartext HTTP/2 with prior knowledge, for a
// server that speaks nothing else (NGINX's listen ... http2 without TLS).
func WaitH2C(ctx context.Context, p *Process, url string, deadline time.Time) error {
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true, Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return waitHTTP(ctx, p, url, deadline, tr)
}

// WaitTLS is WaitHTTP over TLS with the client configuration given
// (trusting the server's certificate), HTTP/2 when the server offers it
// by ALPN: for a server that serves only TLS.
func WaitTLS(ctx context.Context, p *Process, url string, deadline time.Time, cfg *tls.Config) error {
	return waitHTTP(ctx, p, url, deadline, &http.Transport{Proxy: nil, DisableKeepAlives: true, TLSClientConfig: cfg.Clone(), ForceAttemptHTTP2: true})
}

func waitHTTP(ctx context.Context, p *Process, url string, deadline time.Time, tr *http.Transport) error {
	client := &http.Client{Timeout: time.Second, Transport: tr}
	defer tr.CloseIdleConnections()
	why := ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			why = "answers " + resp.Status
		} else {
			why = err.Error()
		}
		if err := p.poll(ctx, deadline, "GET "+url+": "+why); err != nil {
			return err
		}
	}
}

// poll waits one polling interval and returns an error, with the log
// tail, if p exited, the deadline passed or ctx ended meanwhile.
func (p *Process) poll(ctx context.Context, deadline time.Time, why string) error {
	t := time.NewTimer(pollEvery)
	defer t.Stop()
	select {
	case <-p.done:
		return fmt.Errorf("%s exited before it was ready (%v): %s", p.name, p.err, p.LogTail())
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", p.name, ctx.Err())
	case <-t.C:
	}
	if time.Now().After(deadline) {
		return fmt.Errorf("%s not ready by its deadline (%s): %s", p.name, why, p.LogTail())
	}
	return nil
}
