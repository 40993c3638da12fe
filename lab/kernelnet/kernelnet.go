// Package kernelnet owns reading the kernel's network buffer settings of
// one network namespace, which environment.json records: the TCP and core
// socket buffer sysctls (ProcSys) and the loopback interface's MTU
// (LoopbackMTU), and the names a session gives a namespace (HostNamespace,
// and NetnsEnv, which a parent session sets for a child session it runs in
// a namespace it made).
//
// What it leaves to others: setting sysctls and making namespaces are
// buffer-sweep's (lab/buffersweep); the record's format is recorder's
// (recorder.NetSettings); writing environment.json is lab's.
package kernelnet

import (
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/slowlab/slowlab/recorder"
)

// The sysctls of recorder.NetSettings, as keys under /proc/sys.
const (
	keyTCPRmem           = "net/ipv4/tcp_rmem"
	keyTCPWmem           = "net/ipv4/tcp_wmem"
	keyTCPNotsentLowat   = "net/ipv4/tcp_notsent_lowat"
	keyTCPModerateRcvbuf = "net/ipv4/tcp_moderate_rcvbuf"
	keyRmemMax           = "net/core/rmem_max"
	keyWmemMax           = "net/core/wmem_max"
)

// HostNamespace is recorder.NetSettings.Namespace for settings read in
// the network namespace the lab process runs in.
const HostNamespace = "host"

// NetnsEnv names the environment variable a parent session sets when it
// starts a session in a network namespace it created (buffer-sweep's
// kernel settings): its value labels the namespace in environment.json,
// and it tells the child that it may set the namespace's sysctls.
const NetnsEnv = "SLOWLAB_NETNS"

// NetSettings reads the kernel's network buffer settings of one network
// namespace, which it records under the name namespace: the sysctls
// net.ipv4.tcp_rmem, tcp_wmem, tcp_notsent_lowat and tcp_moderate_rcvbuf
// and net.core.rmem_max and wmem_max through read, which is given keys
// such as "net/ipv4/tcp_wmem" (ProcSys when nil), and the loopback
// interface's MTU through loMTU (LoopbackMTU when nil). A caller that
// reads another namespace passes functions that read in it.
//
// A setting that cannot be read, or reads as blank, is recorded as ""
// (the MTU as 0) and is not an error: environment.json still says what
// could be read, and a session does not fail over it. When nothing at all
// could be read, NetSettings returns nil.
func NetSettings(namespace string, read func(key string) (string, error), loMTU func() (int, error)) *recorder.NetSettings {
	if read == nil {
		read = ProcSys
	}
	if loMTU == nil {
		loMTU = LoopbackMTU
	}
	n := &recorder.NetSettings{Namespace: namespace}
	found := false
	for _, s := range []struct {
		key string
		to  *string
	}{
		{keyTCPRmem, &n.TCPRmem},
		{keyTCPWmem, &n.TCPWmem},
		{keyTCPNotsentLowat, &n.TCPNotsentLowat},
		{keyRmemMax, &n.RmemMax},
		{keyWmemMax, &n.WmemMax},
		{keyTCPModerateRcvbuf, &n.TCPModerateRcvbuf},
	} {
		v, err := read(s.key)
		if err != nil {
			continue
		}
		// The kernel separates tcp_rmem's and tcp_wmem's sizes with tabs
		// and ends every value with a newline.
		if *s.to = strings.Join(strings.Fields(v), " "); *s.to != "" {
			found = true
		}
	}
	if mtu, err := loMTU(); err == nil && mtu > 0 {
		n.LoMTU = mtu
		found = true
	}
	if !found {
		return nil
	}
	return n
}

// ProcSys reads the sysctl key, such as "net/ipv4/tcp_wmem", from
// /proc/sys, as the kernel gives it. The kernel answers a network sysctl
// for the network namespace of the thread that opens the file: a caller
// reading another namespace's locks its goroutine to a thread in it.
func ProcSys(key string) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc/sys", filepath.Clean("/"+key)))
	return string(b), err
}

// LoopbackMTU is the MTU of the loopback interface "lo", asked of the
// kernel over netlink, in the network namespace of the thread that opens
// the netlink socket (as for ProcSys, lock the goroutine to a thread in
// the namespace to ask another one).
func LoopbackMTU() (int, error) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return 0, err
	}
	return lo.MTU, nil
}

// Session reads the settings of the network namespace a session runs
// in: the lab's own, labelled HostNamespace, or, for a session a parent
// started in a namespace it made, labelled as NetnsEnv says. nil when
// nothing could be read.
func Session() *recorder.NetSettings {
	ns := HostNamespace
	if label := os.Getenv(NetnsEnv); label != "" {
		ns = label
	}
	return NetSettings(ns, nil, nil)
}
