package slowlabtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// EstablishedTo counts this network namespace's established IPv4 TCP
// sockets whose remote port is port: the client ends of connections to a
// server listening there (a proxy's upstream connections, a load
// generator's).
func EstablishedTo(t testing.TB, port string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("port %q: %v", port, err)
	}
	want := fmt.Sprintf(":%04X", p)
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[2], want) && f[3] == "01" {
			n++
		}
	}
	return n
}
