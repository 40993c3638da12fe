package proxy

import (
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestProxySendTimeoutLogsClientTimeout: a send_timeout cut is logged as
// NGINX logs it at info, "client timed out (110: Connection timed out)
// while sending to client", with the request line, so a lab reading the
// log can tell which request it cut; a client that leaves by itself is
// not logged so.
func TestProxySendTimeoutLogsClientTimeout(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it waits out a proxy timeout")
	for _, buffering := range []bool{true, false} {
		t.Run(fmt.Sprintf("buffering=%v", buffering), func(t *testing.T) {
			var logs slowlabtest.SyncBuffer
			log.SetOutput(&logs)
			t.Cleanup(func() { log.SetOutput(os.Stderr) })
			body := testBody(8 << 20)
			app := newAppServerOn(t, body, listen(t, smallSndbuf))
			o := testOptions(t, app.URL, buffering)
			o.SendTimeout = time.Second
			p, addr := startProxyOn(t, o, listen(t, smallSndbuf))

			// One client leaves by itself: a disconnect, not a timeout.
			gone := stallClient(t, addr, "/large?download=left")
			eventually(t, "the proxy sending to the first client", func() bool { return testutil.ToFloat64(p.m.inFlight) == 1 })
			gone.Close()
			eventually(t, "the first client's disconnect", func() bool { return testutil.ToFloat64(p.m.clientDisconnects) == 1 })

			stallClient(t, addr, "/large?download=7")
			eventually(t, "the stalled client closed", func() bool { return testutil.ToFloat64(p.m.clientDisconnects) == 2 })
			// The proxy counts the disconnect, then logs the cut: wait
			// for the line itself.
			eventually(t, "the cut logged", func() bool { return strings.Contains(logs.String(), "client timed out") })
			var lines []string
			for l := range strings.Lines(logs.String()) {
				if strings.Contains(l, "client timed out") {
					lines = append(lines, l)
				}
			}
			want := `[info] client timed out (110: Connection timed out) while sending to client, client: 127.0.0.1, server: , request: "GET /large?download=7 HTTP/1.1", host: "` + addr + `"`
			if len(lines) != 1 || !strings.Contains(lines[0], want) {
				t.Errorf("log lines with client timed out: %q\nwant one with %s\nwhole log:\n%s", lines, want, logs.String())
			}
		})
	}
}
