// Package holdstest holds what the experiments' tests of their may-hold
// warnings (package holds) share: a namespace's settings with given
// tcp_wmem and tcp_rmem maxima, and the conditions a list of warnings
// names.
package holdstest

import (
	"strconv"
	"strings"

	"github.com/slowlab/slowlab/recorder"
)

// Net is a namespace's recorded settings with tcp_wmem's maximum wmem and
// tcp_rmem's rmem, bytes (Linux's minima and defaults, wmem_max and
// rmem_max 208 KiB).
func Net(wmem, rmem int64) *recorder.NetSettings {
	return &recorder.NetSettings{Namespace: "test", TCPWmem: "4096 16384 " + strconv.FormatInt(wmem, 10),
		TCPRmem: "4096 131072 " + strconv.FormatInt(rmem, 10), WmemMax: "212992", RmemMax: "212992"}
}

// Named is the condition each warning names (what comes before its
// first colon), in order.
func Named(warnings []string) []string {
	var out []string
	for _, w := range warnings {
		name, _, _ := strings.Cut(w, ":")
		out = append(out, name)
	}
	return out
}
