package hops

import (
	"net"
	"testing"
)

// BenchmarkDumpTCP is one filtered dump on a host with whatever sockets it
// has (the kernel filters them), with one established connection to find.
func BenchmarkDumpTCP(b *testing.B) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	b.ReportAllocs()
	for b.Loop() {
		s, err := DumpTCP([]uint16{port, 1}, false)
		if err != nil || len(s) != 2 {
			b.Fatalf("%d sockets, %v; want the connection's two", len(s), err)
		}
	}
}
