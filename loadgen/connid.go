package loadgen

import (
	"crypto/tls"
	"net"
	"net/netip"
)

// The protocols a Result's request can be sent in.
const (
	ProtoHTTP1 = "HTTP/1.1"
	ProtoHTTP2 = "HTTP/2"
	ProtoHTTP3 = "HTTP/3"
)

// localAddrPort is conn's local address, zero when it is not a TCP one.
func localAddrPort(conn net.Conn) netip.AddrPort {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	if conn == nil {
		return netip.AddrPort{}
	}
	if a, ok := conn.LocalAddr().(*net.TCPAddr); ok {
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// LocalAddr is the client's end of the connection.
func (c *H2Conn) LocalAddr() netip.AddrPort { return localAddrPort(c.conn) }
