package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// startProxyAdmin serves a new Proxy on ln with its admin endpoints on a
// loopback port of their own until the test ends, and returns the
// proxy's and the admin address.
func startProxyAdmin(t *testing.T, o Options, ln net.Listener) (p *Proxy, addr, adminAddr string) {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	admin := listen(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln, admin) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return p, ln.Addr().String(), admin.Addr().String()
}

// buffersClient reads the admin GET /buffers as the hop sampler does.
type buffersClient struct {
	url string
	c   *http.Client
}

func newBuffersClient(t *testing.T, admin string) *buffersClient {
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &buffersClient{url: "http://" + admin + "/buffers", c: &http.Client{Transport: tr, Timeout: slowlabtest.HangGuard}}
}

// fetch returns the report, refusing anything but a 200 JSON array.
func (b *buffersClient) fetch() ([]Buffered, error) {
	resp, err := b.c.Get(b.url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		return nil, fmt.Errorf("GET /buffers: %s, Content-Type %q: %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	var out []Buffered
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("GET /buffers: %w: %s", err, body)
	}
	if out == nil {
		return nil, fmt.Errorf("GET /buffers: %s, want a JSON array", body)
	}
	return out, nil
}

func (b *buffersClient) mustFetch(t *testing.T) []Buffered {
	t.Helper()
	out, err := b.fetch()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// poll fetches the report every millisecond in a goroutine of its own
// until stop is called, which returns every report fetched.
func (b *buffersClient) poll() (stop func() ([][]Buffered, error)) {
	var (
		mu      sync.Mutex
		reports [][]Buffered
		failed  error
	)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			r, err := b.fetch()
			mu.Lock()
			reports, failed = append(reports, r), err
			mu.Unlock()
			if err != nil {
				return
			}
			select {
			case <-quit:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() ([][]Buffered, error) {
		close(quit)
		<-done
		return reports, failed
	}
}

// conserved reports the first entry breaking
// upstream_read = memory + temp_file + client_written, or a negative count.
func conserved(report []Buffered) error {
	for _, e := range report {
		if e.UpstreamReadBytes != e.MemoryBytes+e.TempFileBytes+e.ClientWrittenBytes ||
			min(e.MemoryBytes, e.TempFileBytes, e.TempFileSizeBytes, e.UpstreamReadBytes, e.ClientWrittenBytes) < 0 {
			return fmt.Errorf("%+v: upstream_read %d != memory %d + temp_file %d + client_written %d = %d",
				e, e.UpstreamReadBytes, e.MemoryBytes, e.TempFileBytes, e.ClientWrittenBytes,
				e.MemoryBytes+e.TempFileBytes+e.ClientWrittenBytes)
		}
	}
	return nil
}

// entryFor returns the report's entry for the client at addr.
func entryFor(report []Buffered, client string) (Buffered, bool) {
	for _, e := range report {
		if e.Client == client {
			return e, true
		}
	}
	return Buffered{}, false
}

// TestProxyAdminBuffersIdle: an idle proxy's GET /buffers is an empty JSON
// array, served as application/json; other methods are refused.
func TestProxyAdminBuffersIdle(t *testing.T) {
	_, _, admin := startProxyAdmin(t, testOptions(t, "127.0.0.1:1", true), listen(t, 0))
	resp, body := get(t, "http://"+admin+"/buffers")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || string(body) != "[]\n" {
		t.Errorf("GET /buffers: %d, Content-Type %q, body %q; want 200, application/json, []", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, err := http.Post("http://"+admin+"/buffers", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /buffers: %d, want 405", resp.StatusCode)
	}
}

// TestProxyBuffers: a slow client downloads a large response through the
// proxy while GET /buffers is polled every millisecond. Every report holds
// upstream_read = memory + temp_file + client_written exactly, names the
// client by its local address and the upstream connection by the address
// the app saw it from, and keeps memory and the temp file within the
// options' bounds. The client stops after its first read until the proxy
// holds what a paused client makes it hold: with buffering on the whole
// body read from the released upstream, most of it in the temp file (whose
// size /buffers reports as /proc/self/fd shows it); with buffering off at
// most one relay buffer, the upstream held. It stops again half-way, where
// client_written must cover what it has read (but one write in progress):
// the temp file drains as the client reads, not in one step at the end.
// Once the response is over the request is no longer listed.
func TestProxyBuffers(t *testing.T) {
	for _, tc := range []struct {
		buffering, chunked bool
	}{{true, false}, {true, true}, {false, false}, {false, true}} {
		t.Run(fmt.Sprintf("buffering=%v/chunked=%v", tc.buffering, tc.chunked), func(t *testing.T) {
			body := testBody(slowBody)
			app := newAppServerOn(t, body, listen(t, smallSndbuf))
			app.chunked = tc.chunked
			o := testOptions(t, app.URL, tc.buffering)
			_, addr, admin := startProxyAdmin(t, o, listen(t, smallSndbuf))
			bc := newBuffersClient(t, admin)
			maxMemory, inProgress := int64(o.BufferSize), int64(o.BufferSize)
			if tc.buffering {
				maxMemory += int64(o.Buffers.Count) * int64(o.Buffers.Size)
				inProgress = int64(o.BusyBuffersSize)
			}
			// check applies what holds of every report.
			var client, upstream string
			check := func(report []Buffered) {
				t.Helper()
				if err := conserved(report); err != nil {
					t.Fatal(err)
				}
				if len(report) > 1 {
					t.Fatalf("%d requests listed, want at most this test's one: %+v", len(report), report)
				}
				for _, e := range report {
					if e.Client != client || e.UpstreamLocal != upstream || e.Buffering != tc.buffering {
						t.Fatalf("entry %+v; want client %s (the client's local address), upstream_local %s (the app's peer), buffering %v",
							e, client, upstream, tc.buffering)
					}
					if e.MemoryBytes > maxMemory || e.UpstreamReadBytes > slowBody {
						t.Fatalf("entry %+v: memory over %d or more read than the %d byte body", e, maxMemory, slowBody)
					}
					if !tc.buffering && (e.TempFileBytes != 0 || e.TempFileSizeBytes != 0) {
						t.Fatalf("entry %+v: a temp file with buffering off", e)
					}
					if e.TempFileBytes > e.TempFileSizeBytes || e.TempFileSizeBytes > o.MaxTempFileSize {
						t.Fatalf("entry %+v: more unsent than in the temp file, or a file over %d", e, o.MaxTempFileSize)
					}
				}
			}
			stop := bc.poll()
			var first, half Buffered
			var halfRead, lastRead int64
			res := slowClient{rate: slowRate, rcvbuf: 8 << 10,
				onConnect: func(c net.Conn) { client = c.LocalAddr().String() },
				onBytes: func(n int64) bool {
					lastRead = n
					switch {
					case first.Client == "":
						// The upstream connection exists once the
						// response began: the app saw its peer.
						upstream = app.lastConn().RemoteAddr().String()
						if tc.buffering {
							if sent := app.waitSent(t); sent.err != nil {
								t.Fatalf("upstream send: %v", sent.err)
							}
							eventually(t, "the whole body read from the released upstream and spooled", func() bool {
								r := bc.mustFetch(t)
								check(r)
								first, _ = entryFor(r, client)
								files := tempFiles(t, o.TempDir)
								return first.UpstreamReadBytes == slowBody && first.TempFileBytes > 0 &&
									len(files) == 1 && slices.Collect(maps.Values(files))[0] == first.TempFileSizeBytes
							})
							if first.TempFileBytes < slowBody/2 {
								t.Errorf("paused client: %+v; want most of the %d byte body in the temp file", first, slowBody)
							}
						} else {
							if held, sent := waitHeldOrSent(t, app); !held {
								t.Fatalf("the upstream sent the whole body (err %v) with buffering off while the client had read %d bytes", sent.err, n)
							}
							r := bc.mustFetch(t)
							check(r)
							var ok bool
							if first, ok = entryFor(r, client); !ok || first.UpstreamReadBytes == slowBody {
								t.Fatalf("report %+v while the upstream is held; want this request with part of the body read", r)
							}
						}
					case half.Client == "" && n >= slowBody/2:
						halfRead = n
						r := bc.mustFetch(t)
						check(r)
						var ok bool
						if half, ok = entryFor(r, client); !ok {
							t.Fatalf("report %+v half-way through the body; want this request listed", r)
						}
					}
					return true
				}}.get(t, addr, "/large")
			if res.err != nil || res.status != 200 || !bytes.Equal(res.body, body) {
				t.Fatalf("status %d, %d bytes, err %v; want 200 and the exact body", res.status, len(res.body), res.err)
			}
			eventually(t, "the request unlisted after its response", func() bool {
				r := bc.mustFetch(t)
				check(r)
				return len(r) == 0
			})
			reports, err := stop()
			if err != nil {
				t.Fatalf("polling /buffers: %v", err)
			}
			seen := 0
			for _, r := range reports {
				check(r)
				if _, ok := entryFor(r, client); ok {
					seen++
				}
			}
			// What the client read beyond the body is the header and
			// any chunk framing: at most that much of halfRead is not
			// body.
			overhead := lastRead - slowBody
			if half.ClientWrittenBytes+inProgress < halfRead-overhead {
				t.Errorf("half-way: the client read %d bytes (%d of them framing at most), /buffers says %+v: "+
					"client_written short of it by more than one %d byte write in progress", halfRead, overhead, half, inProgress)
			}
			t.Logf("%d reports polled, %d listing the request; paused: %+v; half-way (client read %d): %+v", len(reports), seen, first, halfRead, half)
		})
	}
}
