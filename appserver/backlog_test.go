package appserver

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// acceptQueue returns how many connections wait, accepted by the kernel
// but not yet by the server, on the IPv4 socket listening on port: Linux
// shows it as the rx_queue of a listener in /proc/net/tcp. Elsewhere the
// test is skipped.
func acceptQueue(t *testing.T, port string) int {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Skipf("cannot see the accept queue: %v", err)
	}
	defer f.Close()
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("port %q: %v", port, err)
	}
	want := fmt.Sprintf(":%04X", p)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || !strings.HasSuffix(fields[1], want) || fields[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		_, rx, _ := strings.Cut(fields[4], ":")
		n, err := strconv.ParseInt(rx, 16, 64)
		if err != nil {
			t.Fatalf("/proc/net/tcp: bad queue %q", fields[4])
		}
		return int(n)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no listener on port %s in /proc/net/tcp", port)
	return 0
}
