package stack

import (
	"fmt"
	"net"
	"strconv"
)

// nginxSize writes n bytes in NGINX's size syntax: 32m, 64k, 0.
func nginxSize(n int64) string {
	switch {
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "m"
	case n != 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// freeLoopbackPort returns a loopback TCP port that was free a moment ago.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
