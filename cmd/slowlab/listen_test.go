package main

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestListenAddressInUse: an address another process holds is a failure
// (exit 1) for target, proxy, exporter and loadgen's --metrics-addr alike,
// named on one line; an address that is not one stays a usage error (exit 2).
func TestListenAddressInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	self := "me=pid:" + strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"target", "--model", "sync", "--workers", "1", "--listen", addr, "--admin", "127.0.0.1:0"}, 1, `slowlab target: --listen "` + addr + `": `},
		{[]string{"target", "--model", "sync", "--workers", "1", "--listen", "127.0.0.1:0", "--admin", addr}, 1, `slowlab target: --admin "` + addr + `": `},
		{[]string{"proxy", "--buffering", "on", "--upstream", "127.0.0.1:1", "--listen", addr, "--admin", "127.0.0.1:0"}, 1, `slowlab proxy: --listen "` + addr + `": `},
		{[]string{"exporter", "--group", self, "--web.listen-address", addr}, 1, "slowlab exporter: listen " + addr + ": "},
		{[]string{"target", "--model", "sync", "--workers", "1", "--listen", "nonsense", "--admin", "127.0.0.1:0"}, 2, `slowlab target: --listen "nonsense": `},
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/fast", "--duration", "1s", "--metrics-addr", addr}, 1, `slowlab loadgen: --metrics-addr "` + addr + `": `},
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/fast", "--duration", "1s", "--metrics-addr", "nonsense"}, 2, `slowlab loadgen: --metrics-addr "nonsense": `},
		{[]string{"exporter", "--group", self, "--web.listen-address", "nonsense"}, 2, `slowlab exporter: --web.listen-address "nonsense": `},
		{[]string{"exporter", "--group", self, "--web.listen-address", "127.0.0.1:99999"}, 2, `slowlab exporter: --web.listen-address "127.0.0.1:99999": `},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if code != tc.code || len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) ||
				tc.code == 1 && !strings.HasSuffix(lines[0], "address already in use") {
				t.Errorf("%v: exit %d, stderr:\n%s\nwant exit %d and one line starting %q", tc.args, code, stderr, tc.code, tc.want)
			}
		})
	}
}
