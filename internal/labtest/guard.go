package labtest

import (
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
)

// BusyHost makes the host busier than any --max-host-cpu for the rest of
// t (every CPU kept busy by the test itself) and shortens the guard's
// cooldown between tries to 100 ms, so a host-guard test sees its runs
// aborted and retried in seconds.
func BusyHost(t testing.TB) {
	saved := lab.HostBusyCooldown
	lab.HostBusyCooldown = 100 * time.Millisecond
	t.Cleanup(func() { lab.HostBusyCooldown = saved })
	slowlabtest.BusyCPUs(t)
}
