package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/slowlab/slowlab/child"
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

// startOnFreePort starts a proxy that cannot be told to pick its own port
// and report it (NGINX, HAProxy): start gets a loopback address whose port
// was free a moment ago, writes its config with it and starts the proxy;
// if another process took the port meanwhile ("Address already in use"),
// it tries again, three times in all.
func startOnFreePort[R any](start func(listen string) (R, error)) (R, error) {
	for attempt := 1; ; attempt++ {
		port, err := freeLoopbackPort()
		if err != nil {
			var none R
			return none, err
		}
		r, err := start("127.0.0.1:" + strconv.Itoa(port))
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			return r, err
		}
	}
}

// startConfigured writes a proxy's config (conf, its text b) and starts
// the proxy, argv, as the child name logging to logPath, with env (nil:
// the lab's own).
func startConfigured(ctx context.Context, name, conf string, b []byte, logPath string, argv, env []string) (*child.Process, error) {
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", conf, err)
	}
	if env == nil {
		env = os.Environ()
	}
	return child.Start(ctx, name, logPath, argv, env)
}
