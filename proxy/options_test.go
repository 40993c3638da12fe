package proxy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestProxyOptionsValidate(t *testing.T) {
	slowlabtest.ResolveWith(t, map[string][]string{
		"localhost":   {"127.0.0.1", "::1"},
		"app.test":    {"127.0.0.9"},
		"example.com": {"192.0.2.10"},
		"mixed.test":  {"127.0.0.1", "10.0.0.2"},
	})
	valid := DefaultOptions()
	valid.Upstream = "127.0.0.1:8000"
	if err := valid.Validate(); err != nil {
		t.Fatalf("defaults with an upstream: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"no upstream", func(o *Options) { o.Upstream = "" },
			`Upstream "": allowed host:port with a port 1 to 65535, e.g. 127.0.0.1:8000`},
		{"upstream without port", func(o *Options) { o.Upstream = "127.0.0.1" },
			`Upstream "127.0.0.1": allowed host:port with a port 1 to 65535, e.g. 127.0.0.1:8000`},
		{"upstream port 0", func(o *Options) { o.Upstream = "127.0.0.1:0" },
			`Upstream "127.0.0.1:0": allowed host:port with a port 1 to 65535, e.g. 127.0.0.1:8000`},
		{"remote upstream", func(o *Options) { o.Upstream = "10.0.0.1:80" },
			`Upstream "10.0.0.1:80": allowed a loopback host unless remote upstreams are allowed (10.0.0.1 is not a loopback address (127.0.0.0/8, ::1, localhost))`},
		{"remote name", func(o *Options) { o.Upstream = "example.com:80" },
			`Upstream "example.com:80": allowed a loopback host unless remote upstreams are allowed (example.com resolves to 192.0.2.10, which is not a loopback address (127.0.0.0/8, ::1, localhost))`},
		{"name with a remote address", func(o *Options) { o.Upstream = "mixed.test:80" },
			`Upstream "mixed.test:80": allowed a loopback host unless remote upstreams are allowed (mixed.test resolves to 10.0.0.2, which is not a loopback address (127.0.0.0/8, ::1, localhost))`},
		{"unresolvable name", func(o *Options) { o.Upstream = "nowhere.test:80" },
			`Upstream "nowhere.test:80": allowed a loopback host unless remote upstreams are allowed (nowhere.test: cannot resolve it to check that it is a loopback address (127.0.0.0/8, ::1, localhost): lookup nowhere.test: no such host)`},
		{"buffer size 0", func(o *Options) { o.BufferSize = 0 },
			`BufferSize 0: allowed 1k to 16m`},
		{"buffer size huge", func(o *Options) { o.BufferSize = 32 << 20 },
			`BufferSize 32m: allowed 1k to 16m`},
		{"one buffer", func(o *Options) { o.Buffers.Count = 1 },
			`Buffers "1 16k": allowed a count of 2 to 1024 (nginx needs at least 2)`},
		{"tiny buffers", func(o *Options) { o.Buffers.Size = 100 },
			`Buffers "4 100": allowed a size of 1k to 16m`},
		{"too much memory", func(o *Options) { o.Buffers = Buffers{1024, 1 << 20} },
			`Buffers "1024 1m": allowed at most 256m in all`},
		{"busy below a buffer", func(o *Options) { o.BusyBuffersSize = 8 << 10 },
			`BusyBuffersSize 8k: allowed at least 16k (the larger of BufferSize and one of Buffers) and less than 48k (all Buffers but one)`},
		{"busy all buffers", func(o *Options) { o.BusyBuffersSize = 64 << 10 },
			`BusyBuffersSize 64k: allowed at least 16k (the larger of BufferSize and one of Buffers) and less than 48k (all Buffers but one)`},
		{"busy vs big buffer size", func(o *Options) { o.BufferSize = 64 << 10 },
			`BusyBuffersSize 32k: allowed at least 64k (the larger of BufferSize and one of Buffers) and less than 48k (all Buffers but one)`},
		{"temp file below a buffer", func(o *Options) { o.MaxTempFileSize = 4096 },
			`MaxTempFileSize 4k: allowed 0 (no temp file) or at least 16k (the larger of BufferSize and one of Buffers)`},
		{"negative temp file", func(o *Options) { o.MaxTempFileSize = -1 },
			`MaxTempFileSize -1: allowed 0 (no temp file) or at least 16k (the larger of BufferSize and one of Buffers)`},
		{"write size below a buffer", func(o *Options) { o.TempFileWriteSize = 1000 },
			`TempFileWriteSize 1000: allowed 16k (the larger of BufferSize and one of Buffers) to 256m`},
		{"no temp dir", func(o *Options) { o.TempDir = "" },
			`TempDir "": allowed a directory path`},
		{"no timeout", func(o *Options) { o.UpstreamTimeout = 0 },
			`UpstreamTimeout 0s: allowed a duration above 0, e.g. 60s`},
		{"negative shutdown", func(o *Options) { o.ShutdownTimeout = -time.Second },
			`ShutdownTimeout -1s: allowed 0 or more, e.g. 5s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid
			tc.change(&o)
			err := o.Validate()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got  %v\nwant %s", err, tc.want)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("%T is not a *ValidationError", err)
			}
		})
	}
	for _, ok := range []func(*Options){
		func(o *Options) { o.Upstream = "localhost:80" },
		func(o *Options) { o.Upstream = "app.test:80" },
		func(o *Options) { o.Upstream = "[::1]:80" },
		func(o *Options) { o.Upstream = "127.9.9.9:80" },
		func(o *Options) { o.Upstream, o.AllowRemote = "example.com:80", true },
		func(o *Options) { o.MaxTempFileSize = 0 },
		func(o *Options) { o.Buffers, o.BusyBuffersSize = Buffers{8, 4 << 10}, 16<<10 },
	} {
		o := valid
		ok(&o)
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	// The resolver decides what localhost is, not its name.
	slowlabtest.ResolveWith(t, map[string][]string{"localhost": {"10.1.1.1"}})
	o := valid
	o.Upstream = "localhost:80"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "localhost resolves to 10.1.1.1, which is not a loopback address") {
		t.Errorf("localhost resolving to 10.1.1.1: %v, want it refused naming 10.1.1.1", err)
	}
	if IsLoopbackHost("localhost") || !IsLoopbackHost("127.0.0.1") {
		t.Errorf("IsLoopbackHost: localhost %v, 127.0.0.1 %v; want false (it resolves to 10.1.1.1), true", IsLoopbackHost("localhost"), IsLoopbackHost("127.0.0.1"))
	}
}

func TestProxyParseBuffers(t *testing.T) {
	for in, want := range map[string]Buffers{"4 16k": {4, 16 << 10}, " 8\t4k ": {8, 4 << 10}, "2 1m": {2, 1 << 20}} {
		if got, err := ParseBuffers(in); err != nil || got != want {
			t.Errorf("ParseBuffers(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "4", "4 16k 1", "x 16k", "4 16q", "4 32m"} {
		if got, err := ParseBuffers(in); err == nil {
			t.Errorf("ParseBuffers(%q) = %v; want an error", in, got)
		}
	}
	if s := (Buffers{4, 16 << 10}).String(); s != "4 16k" {
		t.Errorf("String %q", s)
	}
}
