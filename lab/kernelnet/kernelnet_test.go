package kernelnet

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// netFields maps each sysctl key NetSettings reads to the field it fills.
func netFields(n *recorder.NetSettings) map[string]*string {
	return map[string]*string{
		"net/ipv4/tcp_rmem":            &n.TCPRmem,
		"net/ipv4/tcp_wmem":            &n.TCPWmem,
		"net/ipv4/tcp_notsent_lowat":   &n.TCPNotsentLowat,
		"net/ipv4/tcp_moderate_rcvbuf": &n.TCPModerateRcvbuf,
		"net/core/rmem_max":            &n.RmemMax,
		"net/core/wmem_max":            &n.WmemMax,
	}
}

// The host's settings, read with the defaults, are what /proc/sys and the
// loopback interface say, whitespace collapsed, under the namespace
// "host".
func TestNetSettingsHost(t *testing.T) {
	got := NetSettings(HostNamespace, nil, nil)
	want := &recorder.NetSettings{Namespace: "host"}
	readable := 0
	for key, field := range netFields(want) {
		b, err := os.ReadFile("/proc/sys/" + key)
		if err != nil {
			t.Logf("%s is not readable here (%v): want it blank", key, err)
			continue
		}
		*field = strings.Join(strings.Fields(string(b)), " ")
		readable++
	}
	if lo, err := net.InterfaceByName("lo"); err == nil {
		want.LoMTU = lo.MTU
		readable++
	} else {
		t.Logf("no loopback interface here (%v): want MTU 0", err)
	}
	if readable == 0 {
		if got != nil {
			t.Fatalf("nothing is readable here, yet NetSettings = %+v", got)
		}
		t.Skip("no network setting is readable on this host")
	}
	if got == nil || *got != *want {
		t.Fatalf("NetSettings = %+v\nwant         %+v", got, want)
	}
	if want.TCPWmem != "" {
		if m, err := got.TCPMem("tcp_wmem"); err != nil || m.Max <= 0 {
			t.Errorf("the host's tcp_wmem %q parses to %+v, %v", got.TCPWmem, m, err)
		}
	}
	if want.TCPRmem != "" {
		if m, err := got.TCPMem("tcp_rmem"); err != nil || m.Max <= 0 {
			t.Errorf("the host's tcp_rmem %q parses to %+v, %v", got.TCPRmem, m, err)
		}
	}
}

// With a read function that lacks a key, that setting is blank and the
// others are recorded, whitespace collapsed; a failing MTU is 0. Only when
// nothing at all can be read is the result nil.
func TestNetSettingsFakeRead(t *testing.T) {
	values := map[string]string{
		"net/ipv4/tcp_rmem":            "4096\t131072\t6291456\n",
		"net/ipv4/tcp_wmem":            "4096\t16384\t16777216\n",
		"net/ipv4/tcp_notsent_lowat":   "4294967295\n",
		"net/ipv4/tcp_moderate_rcvbuf": " \n", // blank: recorded as ""
		"net/core/rmem_max":            "212992\n",
		// net/core/wmem_max missing, as in a namespace that does not show it
	}
	var asked []string
	read := func(key string) (string, error) {
		asked = append(asked, key)
		v, ok := values[key]
		if !ok {
			return "", &fs.PathError{Op: "open", Path: "/proc/sys/" + key, Err: fs.ErrNotExist}
		}
		return v, nil
	}
	noMTU := func() (int, error) { return 0, errors.New("no loopback") }

	got := NetSettings("slowlab-test", read, noMTU)
	want := &recorder.NetSettings{Namespace: "slowlab-test", TCPRmem: "4096 131072 6291456", TCPWmem: "4096 16384 16777216",
		TCPNotsentLowat: "4294967295", RmemMax: "212992"}
	if got == nil || *got != *want {
		t.Errorf("NetSettings = %+v\nwant         %+v", got, want)
	}
	slices.Sort(asked)
	wantAsked := []string{"net/core/rmem_max", "net/core/wmem_max", "net/ipv4/tcp_moderate_rcvbuf",
		"net/ipv4/tcp_notsent_lowat", "net/ipv4/tcp_rmem", "net/ipv4/tcp_wmem"}
	if !slices.Equal(asked, wantAsked) {
		t.Errorf("read was asked for %q, want each of %q once", asked, wantAsked)
	}

	none := func(string) (string, error) { return "", fs.ErrPermission }
	if got := NetSettings("host", none, noMTU); got != nil {
		t.Errorf("nothing readable: NetSettings = %+v, want nil", got)
	}
	mtuOnly := NetSettings("host", none, func() (int, error) { return 65536, nil })
	if mtuOnly == nil || *mtuOnly != (recorder.NetSettings{Namespace: "host", LoMTU: 65536}) {
		t.Errorf("only the MTU readable: NetSettings = %+v, want it alone", mtuOnly)
	}
}

// ProcSys reads under /proc/sys only, whatever the key says.
func TestProcSysStaysUnderProcSys(t *testing.T) {
	want, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem")
	if err != nil {
		t.Skipf("tcp_wmem not readable here: %v", err)
	}
	got, err := ProcSys("../../proc/sys/net/ipv4/tcp_wmem")
	if err == nil {
		t.Errorf("ProcSys with a key climbing out of /proc/sys read %q", got)
	}
	if got, err := ProcSys("net/ipv4/tcp_wmem"); err != nil || got != string(want) {
		t.Errorf("ProcSys(net/ipv4/tcp_wmem) = %q, %v; want %q", got, err, want)
	}
}
