package latencygap

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"time"

	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// browser loads redirect chains and pages as a browser does: a request
// at a time along a chain, a page's sub-resources all at once once its
// document has arrived, over HTTP/1.1 at most MaxConnsPerOrigin
// connections per origin (one request at a time on each) or over HTTP/2
// one connection per origin. It times every request (httptrace) and its
// new connection's lookup, TCP connect and TLS handshake, which it does
// itself, so each is known apart.
type browser struct {
	client *http.Client
	tr     *http.Transport
	dial   dialFunc
	names  *nameDialer // nil: the URLs name the server by its IP
	tls    *tls.Config // nil: plain HTTP
	origin func(host string) int

	mu    sync.Mutex
	conns map[net.Conn]*connInfo
}

// connInfo is what opening a connection took; the first request to use
// it reports it.
type connInfo struct {
	dns          recorder.Maybe
	family       string // after a lookup: what it went over
	connect, tls time.Duration
	claimed      bool
}

// newBrowser is a browser with no connection open. dial reaches the
// server's namespace (the path's); names, when set, resolves the lab's
// names through its resolver first. clientTLS is the client's TLS
// configuration (nil for plain HTTP), serverName what its certificate
// names. keepAlive false opens a connection per request. origin numbers
// a URL's host:port.
func newBrowser(dial dialFunc, names *nameDialer, clientTLS *tls.Config, serverName, proto string, keepAlive bool,
	origin func(string) int) *browser {
	b := &browser{dial: dial, names: names, origin: origin, conns: map[net.Conn]*connInfo{}}
	b.tr = &http.Transport{DialContext: b.openConn, DisableKeepAlives: !keepAlive, MaxConnsPerHost: MaxConnsPerOrigin,
		MaxIdleConnsPerHost: MaxConnsPerOrigin, DisableCompression: true, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	if clientTLS != nil {
		b.tls = clientTLS.Clone()
		b.tls.ServerName = serverName
		b.tls.NextProtos = []string{"http/1.1"}
		b.tr.DialTLSContext = b.openConn
	}
	if proto == ProtoHTTP2 {
		b.tls.NextProtos = []string{"h2"}
		b.tr.TLSNextProto = nil // net/http's own HTTP/2, one connection per origin
		b.tr.ForceAttemptHTTP2, b.tr.MaxConnsPerHost = true, 1
	}
	b.client = &http.Client{Transport: b.tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return b
}

// close closes the browser's connections.
func (b *browser) close() { b.tr.CloseIdleConnections() }

// connect dials address, through the lab's resolver when the browser
// has one, and says what the lookup and the TCP connect took.
func (b *browser) connect(ctx context.Context, network, address string) (net.Conn, *connInfo, error) {
	start := time.Now()
	if b.names == nil {
		c, err := b.dial(ctx, network, address)
		return c, &connInfo{connect: time.Since(start)}, err
	}
	var l lookup
	c, err := b.names.DialContext(withLookup(ctx, &l), network, address)
	info := &connInfo{connect: time.Since(start) - l.took}
	if l.done {
		info.dns, info.family = recorder.Some(ms(l.took)), l.family
	}
	return c, info, err
}

// openConn is the transport's dial: connect, then with TLS the handshake,
// its times kept for the first request on the connection.
func (b *browser) openConn(ctx context.Context, network, address string) (net.Conn, error) {
	c, info, err := b.connect(ctx, network, address)
	if err != nil {
		return nil, err
	}
	if b.tls != nil {
		start := time.Now()
		tc := tls.Client(c, b.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", address, err)
		}
		c, info.tls = tc, time.Since(start)
	}
	b.mu.Lock()
	b.conns[c] = info
	b.mu.Unlock()
	return c, nil
}

// claim returns c's opening times to the first request that uses it.
func (b *browser) claim(c net.Conn) *connInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	info := b.conns[c]
	if info == nil || info.claimed {
		return nil
	}
	info.claimed = true
	return info
}

// fetch is one GET of u in a load that started at t0: its row (the
// load's fields left to the caller), its Location, and its body when
// keep (a document), else only counted.
func (b *browser) fetch(ctx context.Context, t0 time.Time, u *url.URL, keep bool) (f Fetch, location string, body []byte, err error) {
	var gotConn, firstByte time.Time
	var info *connInfo
	trace := &httptrace.ClientTrace{
		GotConn:              func(ci httptrace.GotConnInfo) { gotConn, info = time.Now(), b.claim(ci.Conn) },
		GotFirstResponseByte: func() { firstByte = time.Now() },
	}
	f.Origin = b.origin(u.Host)
	start := time.Now()
	f.StartMS = ms(start.Sub(t0))
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, u.String(), nil)
	var resp *http.Response
	if err == nil {
		resp, err = b.client.Do(req)
	}
	if err == nil {
		defer resp.Body.Close()
		f.Status, f.Proto, location = resp.StatusCode, resp.Proto, resp.Header.Get("Location")
		var buf bytes.Buffer
		if keep {
			f.Bytes, err = io.Copy(&buf, io.LimitReader(resp.Body, maxDocumentBytes))
		} else {
			f.Bytes, err = io.Copy(io.Discard, resp.Body)
		}
		body = buf.Bytes()
		if st, ok := loadgen.ParseServerTiming(resp.Header.Get("Server-Timing"), "app"); ok {
			f.ServerMS = recorder.Some(ms(st))
		}
		if st, ok := loadgen.ParseServerTiming(resp.Trailer.Get("Server-Timing"), "app"); ok {
			f.ServerLastByteMS = recorder.Some(ms(st))
		}
	}
	end := time.Now()
	f.TotalMS, f.EndMS = ms(end.Sub(start)), ms(end.Sub(t0))
	if !firstByte.IsZero() {
		f.TTFBMS = recorder.Some(ms(firstByte.Sub(start)))
	}
	if !gotConn.IsZero() {
		wait := gotConn.Sub(start)
		if info != nil {
			f.NewConn = true
			f.ConnectMS = recorder.Some(ms(info.connect))
			f.DNSMS, f.Family = info.dns, info.family
			if b.tls != nil {
				f.TLSMS = recorder.Some(ms(info.tls))
			}
			wait -= info.connect + info.tls + time.Duration(info.dns.Value*float64(time.Millisecond))
		}
		f.WaitMS = recorder.Some(max(ms(wait), 0))
	}
	if err != nil {
		f.Error = err.Error()
	}
	return f, location, body, err
}

// chain follows a redirect chain from first: each hop must answer 301 or
// 302 and the last, after hops of them, 200 with size bytes.
func (b *browser) chain(ctx context.Context, first *url.URL, hops, size int) ([]Fetch, error) {
	t0 := time.Now()
	var out []Fetch
	u := first
	for hop := 0; ; hop++ {
		f, loc, _, err := b.fetch(ctx, t0, u, false)
		f.Hop, f.Role = hop, RoleHop
		if hop == hops {
			f.Role = RoleResource
		}
		if err == nil {
			err = checkFetch(&f, hop < hops, size)
		}
		out = append(out, f)
		if err != nil || hop == hops {
			return out, err
		}
		if u, err = u.Parse(loc); err != nil {
			return out, fmt.Errorf("hop %d: Location %q: %w", hop, loc, err)
		}
	}
}

// page loads the document at doc, then every sub-resource it refers to
// at once: there must be resources of size bytes each.
func (b *browser) page(ctx context.Context, doc *url.URL, resources, size int) ([]Fetch, error) {
	t0 := time.Now()
	f, _, body, err := b.fetch(ctx, t0, doc, true)
	f.Role = RoleDocument
	if err == nil && f.Status != http.StatusOK {
		err = fmt.Errorf("document: status %d", f.Status)
		f.Error = err.Error()
	}
	out := []Fetch{f}
	if err != nil {
		return out, err
	}
	subs, err := subresources(bytes.NewReader(body), doc)
	if err == nil && len(subs) != resources {
		err = fmt.Errorf("document: %d sub-resources, want %d", len(subs), resources)
	}
	if err != nil {
		return out, err
	}
	fetched := make([]Fetch, len(subs))
	errs := make([]error, len(subs))
	var wg sync.WaitGroup
	for i, u := range subs {
		wg.Go(func() {
			f, _, _, err := b.fetch(ctx, t0, u, false)
			f.Hop, f.Role = i+1, RoleSubresource
			if err == nil {
				err = checkFetch(&f, false, size)
			}
			fetched[i], errs[i] = f, err
		})
	}
	wg.Wait()
	return append(out, fetched...), errors.Join(errs...)
}

// checkFetch says what is wrong with a response that should have been a
// redirect, or the resource of size bytes, noting it in its row.
func checkFetch(f *Fetch, redirect bool, size int) error {
	var err error
	switch {
	case redirect && f.Status != http.StatusMovedPermanently && f.Status != http.StatusFound:
		err = fmt.Errorf("hop %d: status %d, want a redirect", f.Hop, f.Status)
	case !redirect && f.Status != http.StatusOK:
		err = fmt.Errorf("status %d", f.Status)
	case !redirect && f.Bytes != int64(size):
		err = fmt.Errorf("%w: %d of %d bytes", loadgen.ErrIncomplete, f.Bytes, size)
	}
	if err != nil {
		f.Error = err.Error()
	}
	return err
}
