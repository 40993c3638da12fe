package proxy

import (
	"io"
	"net/http"
	"testing"

	"github.com/slowlab/slowlab/internal/bytesize"
)

// BenchmarkProxyRelay measures relay throughput to a fast client (one
// request at a time, client connection kept alive, a new upstream
// connection per request), against the app served directly.
func BenchmarkProxyRelay(b *testing.B) {
	for _, size := range []int{64 << 10, 4 << 20} {
		body := testBody(size)
		for _, route := range []string{"direct", "buffering=off", "buffering=on"} {
			b.Run(bytesize.Format(int64(size))+"/"+route, func(b *testing.B) {
				app := newAppServer(b, body)
				url := app.URL
				if route != "direct" {
					_, addr := startProxy(b, testOptions(b, app.URL, route == "buffering=on"))
					url = "http://" + addr
				}
				tr := &http.Transport{DisableCompression: true}
				defer tr.CloseIdleConnections()
				c := &http.Client{Transport: tr}
				buf := make([]byte, 64<<10)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					resp, err := c.Get(url + "/large")
					if err != nil {
						b.Fatal(err)
					}
					n, err := io.CopyBuffer(io.Discard, resp.Body, buf)
					resp.Body.Close()
					if err != nil || n != int64(size) {
						b.Fatalf("read %d bytes: %v", n, err)
					}
				}
			})
		}
	}
}
