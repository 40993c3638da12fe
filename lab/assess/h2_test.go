package assess

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// TestDefaultProbesByFront: without --probes an HTTP/1.1 front gets the
// HTTP/1.1 probes and no HTTP/2 one; an h2-* route, or an external stack
// given --http2, gets H2DefaultProbes; --probes given stays as given.
func TestDefaultProbesByFront(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []Probe
	}{
		{nil, DefaultProbes},
		{[]string{"--route", "proxy-buffering-off"}, DefaultProbes},
		{[]string{"--fast-url", "http://127.0.0.1:1/fast"}, DefaultProbes},
		{[]string{"--route", "h2-proxy-buffering-off"}, H2DefaultProbes},
		{[]string{"--route", "h2-tls-proxy-buffering-on"}, H2DefaultProbes},
		{[]string{"--http2", "--fast-url", "http://127.0.0.1:1/fast"}, H2DefaultProbes},
		{[]string{"--route", "h2-proxy-buffering-off", "--probes", "h2-streams-one-conn"}, []Probe{ProbeH2OneConn}},
	} {
		c := Default()
		fs := flag.NewFlagSet("assess", flag.ContinueOnError)
		c.Flags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := c.ApplyExternal(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !slices.Equal(c.Probes, tc.want) {
			t.Errorf("%v: probes %v, want %v", tc.args, c.Probes, tc.want)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%v: %v", tc.args, err)
		}
	}
	for _, p := range DefaultProbes {
		if p.http2() {
			t.Errorf("the HTTP/1.1 default has %s", p)
		}
	}
	c := Default()
	c.ext = extFlags{http2: true}
	if err := c.ApplyExternal(); err == nil || !strings.Contains(err.Error(), "give --fast-url too") {
		t.Errorf("--http2 alone: %v", err)
	}
}

// h2cServer serves /fast and a 2 MiB /large over cleartext HTTP/2 with
// prior knowledge only (h2) or over HTTP/1.1 only, on loopback.
func h2cServer(t *testing.T, h2 bool) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/fast", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("/large", func(w http.ResponseWriter, _ *http.Request) { w.Write(make([]byte, 2<<20)) })
	srv := httptest.NewUnstartedServer(mux)
	if h2 {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestH2PreflightRefuses: an external stack given --http2 is refused
// before any load, by name, where its URLs do not speak HTTP/2: a fast URL
// that answers HTTP/1.1 only, a large URL that does; where both do, the
// preflight passes and measures the large response over HTTP/2.
func TestH2PreflightRefuses(t *testing.T) {
	slowlabtest.EndToEnd(t, "it starts the embedded stack")
	h1, h2 := h2cServer(t, false), h2cServer(t, true)
	for _, tc := range []struct {
		fast, large string
		want        string
	}{
		{h1.URL, h1.URL, "answers over HTTP/1.1, not over HTTP/2"},
		{h2.URL, h1.URL, "does not answer over HTTP/2 (probe h2-slow-streams)"},
		{h2.URL, h2.URL, ""},
	} {
		c := quick("sync-2", stack.RouteDirect, 2, ProbeH2SlowStreams)
		c.ext = extFlags{fast: tc.fast + "/fast", large: tc.large + "/large", http2: true}
		if err := c.ApplyExternal(); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		env, err := lab.Options{Out: t.TempDir()}.Env(c, labtest.LogWriter{T: t})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(env.LogDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		fr, tg, v, err := c.openProbe(context.Background(), env, ProbeH2SlowStreams)
		if fr == nil && err == nil {
			t.Fatalf("no stack: %s", v.Stopped)
		}
		if fr != nil {
			fr.Close()
		}
		switch {
		case tc.want == "" && (err != nil || tg.largeSize != 2<<20 || tg.h2 == nil):
			t.Errorf("fast %s, large %s over HTTP/2: %v, large %d bytes, want it taken (2 MiB)", tc.fast, tc.large, err, tg.largeSize)
		case tc.want != "" && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("fast %s, large %s: %v, want it refused: %q", tc.fast, tc.large, err, tc.want)
		}
	}
}
