package hops

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"time"
)

// proxyEntry is one element of the embedded proxy's GET /buffers.
type proxyEntry struct {
	Client        string `json:"client"`
	UpstreamLocal string `json:"upstream_local"`
	Memory        int64  `json:"memory_bytes"`
	TempFile      int64  `json:"temp_file_bytes"`
	UpstreamRead  int64  `json:"upstream_read_bytes"`
	ClientWritten int64  `json:"client_written_bytes"`
}

// maxReport bounds the report FetchProxy reads (about 5,000 responses).
const maxReport = 1 << 20

// FetchProxy returns a Sampler.Proxy that reads the report at url (the
// embedded proxy's /buffers): a JSON array of the responses it relays.
func FetchProxy(url string) func(ctx context.Context) ([]ProxyBuffer, error) {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{MaxIdleConns: 1, DisableCompression: true}}
	return func(ctx context.Context) ([]ProxyBuffer, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("proxy buffers: %w", err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxReport+1))
		if err != nil {
			return nil, fmt.Errorf("proxy buffers %s: %w", url, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("proxy buffers %s: status %s", url, resp.Status)
		}
		return ParseProxyReport(b)
	}
}

// ParseProxyReport parses a /buffers report.
func ParseProxyReport(b []byte) ([]ProxyBuffer, error) {
	if len(b) > maxReport {
		return nil, fmt.Errorf("proxy buffers: report over %d bytes", maxReport)
	}
	var entries []proxyEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, fmt.Errorf("proxy buffers: %w", err)
	}
	out := make([]ProxyBuffer, 0, len(entries))
	for i, e := range entries {
		client, err := netip.ParseAddrPort(e.Client)
		if err != nil {
			return nil, fmt.Errorf("proxy buffers[%d].client: %w", i, err)
		}
		var up netip.AddrPort
		if e.UpstreamLocal != "" {
			if up, err = netip.ParseAddrPort(e.UpstreamLocal); err != nil {
				return nil, fmt.Errorf("proxy buffers[%d].upstream_local: %w", i, err)
			}
		}
		if e.Memory < 0 || e.TempFile < 0 || e.UpstreamRead < 0 || e.ClientWritten < 0 {
			return nil, fmt.Errorf("proxy buffers[%d]: negative byte count", i)
		}
		out = append(out, ProxyBuffer{Client: netip.AddrPortFrom(client.Addr().Unmap(), client.Port()),
			UpstreamLocal: netip.AddrPortFrom(up.Addr().Unmap(), up.Port()),
			Memory:        e.Memory, TempFile: e.TempFile, UpstreamRead: e.UpstreamRead, ClientWritten: e.ClientWritten})
	}
	return out, nil
}
