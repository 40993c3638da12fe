package hops

import (
	"errors"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Samples put in a spill come back in order, whole; its file is gone after
// Close; a spill whose file was cut says which sample it could not read.
func TestSpill(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSpill(dir)
	if err != nil {
		t.Fatal(err)
	}
	var in []Sample
	for i := range 50 {
		smp := Sample{T: time.Duration(i) * 50 * time.Millisecond, Skew: int64(i), HasTemp: i%2 == 0, TempFile: int64(i) << 10,
			Sockets: []Socket{{Local: netip.MustParseAddrPort("127.0.0.1:8000"), Remote: netip.MustParseAddrPort("[::1]:40000"),
				State: 1, SendQ: uint32(i), BytesAcked: uint64(i) << 20, HasInfo: true}},
			Proxy: []ProxyBuffer{{Client: netip.MustParseAddrPort("127.0.0.1:40000"), Memory: int64(i), UpstreamRead: 7}}}
		in = append(in, smp)
		if err := s.Put(smp); err != nil {
			t.Fatal(err)
		}
	}
	var out []Sample
	if err := s.Each(func(smp Sample) error { out = append(out, smp); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("%d samples back, not the %d put", len(out), len(in))
	}
	stop := errors.New("stop")
	n := 0
	if err := s.Each(func(Sample) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("Each went on after an error: %d samples, %v", n, err)
	}
	name := s.f.Name()
	if err := os.Truncate(name, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.Each(func(Sample) error { return nil }); err == nil || !strings.Contains(err.Error(), "of 50") {
		t.Errorf("a cut spill read back: %v, want an error naming the sample", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("spill file still there after Close: %v", err)
	}
}
