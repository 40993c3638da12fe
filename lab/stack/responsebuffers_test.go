package stack

import (
	"regexp"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/proxy"
)

// ResponseBuffers says what the nginx.conf the lab writes sets, for both
// routes and a deployment's proxy_max_temp_file_size, and what the
// embedded proxy runs with; a change to either that ResponseBuffers does
// not follow fails here.
func TestResponseBuffersAreTheConfigs(t *testing.T) {
	maxTemp := int64(8 << 20)
	for _, d := range []Deployment{{}, {MaxTempFileSize: &maxTemp}} {
		want := d.ResponseBuffers()
		for _, buffering := range []bool{false, true} {
			b, err := nginxConfig{RunID: "r", Dir: "/d", TempDir: "/t", Listen: "127.0.0.1:1", Upstream: "127.0.0.1:2",
				Buffering: buffering, ClientBodyBuffer: "16k", ClientHeaderTimeout: "60s", SendTimeout: "60s",
				MaxTempFileSize: nginxSize(d.MaxTempFile()), HTTPVersion: "1.1"}.render()
			if err != nil {
				t.Fatal(err)
			}
			conf := string(b)
			directive := func(name string) string {
				m := regexp.MustCompile(`(?m)^\s*`+name+`\s+([^;]+);`).FindAllStringSubmatch(conf, -1)
				if len(m) != 1 {
					t.Fatalf("nginx.conf sets %s %d times, want once:\n%s", name, len(m), conf)
				}
				return m[0][1]
			}
			size := func(name string) int64 {
				v, err := bytesize.Parse(directive(name))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return v
			}
			bufs, err := proxy.ParseBuffers(directive("proxy_buffers"))
			if err != nil {
				t.Fatal(err)
			}
			got := ResponseBuffers{BufferSize: size("proxy_buffer_size"), Buffers: bufs,
				BusyBuffersSize: size("proxy_busy_buffers_size"), MaxTempFileSize: size("proxy_max_temp_file_size")}
			if got != want {
				t.Errorf("nginx.conf (buffering %v) sets %+v, ResponseBuffers says %+v", buffering, got, want)
			}
			// The kernel sizes NGINX's sockets: no sndbuf= or rcvbuf= on listen.
			if l := directive("listen"); strings.Contains(l, "sndbuf") || strings.Contains(l, "rcvbuf") {
				t.Errorf("listen %s sets a socket buffer", l)
			}
		}
	}
	// The embedded proxy runs with proxy.DefaultOptions' buffers and the
	// deployment's proxy_max_temp_file_size.
	o := proxy.DefaultOptions()
	want := (&Deployment{MaxTempFileSize: &maxTemp}).ResponseBuffers()
	if got := (ResponseBuffers{BufferSize: int64(o.BufferSize), Buffers: o.Buffers, BusyBuffersSize: int64(o.BusyBuffersSize),
		MaxTempFileSize: maxTemp}); got != want {
		t.Errorf("the embedded proxy's defaults %+v, ResponseBuffers says %+v", got, want)
	}
}
