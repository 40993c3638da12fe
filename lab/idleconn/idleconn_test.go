package idleconn

import (
	"context"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// Bad input is refused before anything starts, naming the field; a Run of
// it leaves no results directory behind.
func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Conns = []int{10, 10001} }, "connections[1] 10001: allowed 1 to 10000"},
		{func(c *Config) { c.Conns = []int{0} }, "connections[0] 0: allowed 1 to 10000"},
		{func(c *Config) { c.Sources = []string{"127.0.0.2", "10.0.0.2"} }, `sources[1] "10.0.0.2": must be an IPv4 address in 127.0.0.0/8`},
		{func(c *Config) { c.Sources = []string{"::1"} }, `sources[0] "::1": must be an IPv4 address in 127.0.0.0/8`},
		{func(c *Config) { c.Hold = lab.Duration(-time.Second) }, "hold -1s: allowed more than 0 up to 10m0s"},
		{func(c *Config) { c.Hold = lab.Duration(24 * time.Hour) }, "hold 24h0m0s: allowed more than 0 up to 10m0s"},
		{func(c *Config) { c.ByteEvery = lab.Duration(time.Hour) }, "byte_every 1h0m0s: allowed more than 0 up to the hold, 1m40s"},
		{func(c *Config) { c.AppTimeout = lab.Duration(1500 * time.Millisecond) }, "app_timeout 1.5s: want 0 (the app's default) or whole seconds up to 1h0m0s"},
		{func(c *Config) { c.HeaderTimeout = lab.Duration(-time.Second) }, "client_header_timeout -1s: want 0 (the proxy's default) or whole seconds up to 1h0m0s"},
		{func(c *Config) { c.ConnectTimeout = 0 }, "connect_timeout 0s: allowed more than 0 up to 1m"},
		{func(c *Config) { c.RouteNames = []stack.Route{"proxy-buffering-off"} }, `routes[0] "proxy-buffering-off": allowed direct, proxy-buffering-on`},
		{func(c *Config) { c.Modes = []string{"flood"} }, `modes[0] "flood": allowed [idle slowloris]`},
		{func(c *Config) { c.ServerNames = []string{"sync-0"} }, "servers[0]: "},
	} {
		c := Published()
		tc.edit(c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
			continue
		}
		out := t.TempDir() + "/out"
		if _, err := c.Run(context.Background(), &lab.Env{Out: out}); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Run: got %v, want %q", err, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: Run of an invalid config left %s behind", tc.want, out)
		}
	}
	if err := Published().Validate(); err != nil {
		t.Errorf("published: %v", err)
	}
}

// Connections come from one source address per 4,000, from 127.0.0.2,
// unless the scenario lists them.
func TestSources(t *testing.T) {
	c := Published()
	if got := c.sources(10000); len(got) != 3 || got[0] != netip.MustParseAddr("127.0.0.2") || got[2] != netip.MustParseAddr("127.0.0.4") {
		t.Errorf("10000 connections from %v, want 127.0.0.2-4", got)
	}
	c.Sources = []string{"127.9.9.9"}
	if got := c.sources(10000); len(got) != 1 || got[0] != netip.MustParseAddr("127.9.9.9") {
		t.Errorf("listed source: %v", got)
	}
}

// raiseNoFile raises the soft limit and restores it; past the hard limit
// it raises both where the process may, else fails naming the limit and
// changes nothing.
func TestRaiseNoFileRestores(t *testing.T) {
	orig := noFile(t)
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig) })
	lowered := syscall.Rlimit{Cur: orig.Cur - 1000, Max: orig.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	restore, err := raiseNoFile(lowered.Cur + 500)
	if err != nil {
		t.Fatal(err)
	}
	if got := noFile(t); got.Cur != lowered.Cur+500 || got.Max != lowered.Max {
		t.Errorf("raised to %+v, want soft %d, hard %d", got, lowered.Cur+500, lowered.Max)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if got := noFile(t); got != lowered {
		t.Errorf("restored to %+v, want %+v", got, lowered)
	}
	restore, err = raiseNoFile(orig.Max + 100)
	switch {
	case err != nil && !strings.Contains(err.Error(), "raise RLIMIT_NOFILE"):
		t.Errorf("past the hard limit: %v, want an error naming RLIMIT_NOFILE", err)
	case err != nil && noFile(t) != lowered:
		t.Errorf("a failed raise changed the limit to %+v", noFile(t))
	case err == nil: // allowed to raise the hard limit (CAP_SYS_RESOURCE)
		if got := noFile(t); got.Cur < orig.Max+100 {
			t.Errorf("raised to %+v, want at least %d", got, orig.Max+100)
		}
		if err := restore(); err != nil || noFile(t) != lowered {
			t.Errorf("restore: %v, limit %+v, want %+v", err, noFile(t), lowered)
		}
	}
}
