package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"
)

// wantsUpgrade reports whether r asks to switch to WebSocket on an
// HTTP/1.1 connection (Connection: upgrade, Upgrade: websocket), which
// the proxy passes on only with Options.WebSocket, as NGINX does only
// where its config sets the Upgrade and Connection headers.
func wantsUpgrade(r *http.Request) bool {
	return r.ProtoMajor == 1 && r.ProtoMinor == 1 &&
		httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") &&
		httpguts.HeaderValuesContainsToken(r.Header["Upgrade"], "websocket")
}

// tunnel takes over the client connection once the upstream agreed to
// switch (its 101 read by openUpstream): it sends the client the 101 and
// relays bytes both ways until either side ends or the upstream is silent
// for UpstreamTimeout (proxy_read_timeout closes an idle WebSocket unless
// something, a ping, crosses it). The upstream connection is released when
// the tunnel ends.
func (p *Proxy) tunnel(w http.ResponseWriter, up *upstream) error {
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return fmt.Errorf("websocket: take over the client connection: %w", err)
	}
	defer client.Close()
	p.m.requests.WithLabelValues("101").Inc()
	p.m.websockets.Inc()
	defer p.m.websockets.Dec()
	if err := writeSwitch(brw.Writer, up.resp); err != nil {
		return err
	}
	var once sync.Once
	end := func() { once.Do(func() { client.Close(); up.close() }) }
	done := make(chan struct{})
	go func() { // client to app: what the client sent with its request first
		defer close(done)
		io.Copy(up.tc, io.MultiReader(io.LimitReader(brw.Reader, int64(brw.Reader.Buffered())), client))
		end()
	}()
	io.Copy(client, up.br) // app to client: bytes read with the 101 first
	end()
	<-done
	return nil
}

// writeSwitch sends the client the upstream's 101 with its headers, the
// hop-by-hop Upgrade and Connection included (they are the switch).
func writeSwitch(w *bufio.Writer, resp *http.Response) error {
	fmt.Fprintf(w, "HTTP/1.1 101 %s\r\n", strings.TrimSpace(strings.TrimPrefix(resp.Status, "101")))
	h := resp.Header.Clone()
	for _, k := range []string{"Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Content-Length"} {
		h.Del(k)
	}
	if err := h.Write(w); err != nil {
		return err
	}
	w.WriteString("\r\n")
	return w.Flush()
}
