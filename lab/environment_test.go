package lab

import (
	"testing"

	"github.com/slowlab/slowlab/lab/kernelnet"
)

// Environment records the network settings of the lab's namespace under
// "host", or under the label a parent session gave the namespace it
// started this session in (kernelnet.NetnsEnv).
func TestEnvironmentRecordsNet(t *testing.T) {
	want := kernelnet.NetSettings(kernelnet.HostNamespace, nil, nil)
	if want == nil {
		t.Skip("no network setting is readable on this host")
	}
	t.Setenv(kernelnet.NetnsEnv, "")
	if env := Environment(&Env{}, "test"); env.Net == nil || *env.Net != *want {
		t.Errorf("Environment records net %+v, want %+v", env.Net, want)
	}
	t.Setenv(kernelnet.NetnsEnv, "wmem=1m")
	if env := Environment(&Env{}, "test"); env.Net == nil || env.Net.Namespace != "wmem=1m" || env.Net.TCPWmem != want.TCPWmem {
		t.Errorf("in a namespace labelled wmem=1m: Environment records net %+v", env.Net)
	}
}
