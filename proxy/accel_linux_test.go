package proxy

import (
	"bytes"
	"net/http"
	"testing"
)

func TestResponseBuffering(t *testing.T) {
	for _, tc := range []struct {
		value     string
		buffering bool
		want      bool
	}{
		{"", true, true}, {"", false, false},
		{"no", true, false}, {"No", true, false}, {"no", false, false},
		{"yes", false, true}, {"YES", false, true}, {"yes", true, true},
		{"maybe", true, true}, {"maybe", false, false}, {"no ", true, true},
	} {
		h := http.Header{}
		if tc.value != "" {
			h.Set(AccelBufferingHeader, tc.value)
		}
		if got := responseBuffering(h, tc.buffering); got != tc.want {
			t.Errorf("%s %q with Buffering %v: buffered %v, want %v", AccelBufferingHeader, tc.value, tc.buffering, got, tc.want)
		}
	}
}

// accelApp is an appServer whose responses carry X-Accel-Buffering: value.
func accelApp(t *testing.T, body []byte, value string) *appServer {
	app := newAppServerOn(t, body, listen(t, smallSndbuf))
	app.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(AccelBufferingHeader, value)
		app.serve(w, r)
	})
	return app
}

// TestProxyAccelBufferingNo: on a buffering proxy, a response with
// X-Accel-Buffering: no is relayed unbuffered, as NGINX does: when the
// client pauses after its first read, the upstream is held at the
// client's pace and nothing is spooled; the header does not reach the
// client.
func TestProxyAccelBufferingNo(t *testing.T) {
	body := testBody(slowBody)
	app := accelApp(t, body, "no")
	o := testOptions(t, app.URL, true)
	_, addr := startProxyOn(t, o, listen(t, smallSndbuf))

	resp, _ := get(t, "http://"+addr+"/")
	if v, ok := resp.Header[AccelBufferingHeader]; ok {
		t.Errorf("client got %s: %q; NGINX hides it", AccelBufferingHeader, v)
	}
	app.waitSent(t)
	paused := false
	res := slowClient{rate: slowRate, rcvbuf: 8 << 10, onBytes: func(n int64) bool {
		if len(tempFiles(t, o.TempDir)) != 0 {
			t.Errorf("temp file open for a response with %s: no", AccelBufferingHeader)
		}
		if !paused {
			paused = true
			if held, sent := waitHeldOrSent(t, app); !held {
				t.Fatalf("the upstream sent the whole body (err %v) while the client had read %d bytes: the proxy buffered it", sent.err, n)
			}
		}
		return true
	}}.get(t, addr, "/large")
	if res.err != nil || res.status != 200 || !bytes.Equal(res.body, body) {
		t.Fatalf("status %d, %d bytes, err %v; want 200 and the exact body", res.status, len(res.body), res.err)
	}
}

// TestProxyAccelBufferingYes: on a proxy with buffering off, a response
// with X-Accel-Buffering: yes is buffered: while the client pauses after
// its first read, the upstream sends the whole body into a temp file.
func TestProxyAccelBufferingYes(t *testing.T) {
	body := testBody(slowBody)
	app := accelApp(t, body, "yes")
	o := testOptions(t, app.URL, false)
	_, addr := startProxyOn(t, o, listen(t, smallSndbuf))

	var during map[string]int64
	res := slowClient{rate: slowRate, rcvbuf: 8 << 10, onBytes: func(n int64) bool {
		if during == nil {
			if sent := app.waitSent(t); sent.err != nil {
				t.Fatalf("upstream send: %v", sent.err)
			}
			during = tempFiles(t, o.TempDir)
		}
		return true
	}}.get(t, addr, "/large")
	if res.err != nil || res.status != 200 || !bytes.Equal(res.body, body) {
		t.Fatalf("status %d, %d bytes, err %v; want 200 and the exact body", res.status, len(res.body), res.err)
	}
	if len(during) != 1 {
		t.Errorf("open temp files while the client paused: %v; want one (the body spooled)", during)
	}
}
