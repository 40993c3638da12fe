package stack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A running proxy reports the files its error log goes to: one absolute
// path per proxy, in the deployment's log directory and named for the
// run, that exists while it runs; no proxy (the direct route), no logs.
func TestProxyErrorLogs(t *testing.T) {
	for _, name := range []string{"embedded", "embedded+nginx"} {
		st := lookup(t, name)
		direct := startReal(t, st, RouteDirect, "sync-2", 1<<10)
		if logs := direct.run.ProxyErrorLogs(); logs != nil {
			t.Errorf("%s direct: proxy error logs %v, want none", name, logs)
		}
		direct.stopAndCheck(t)
		s := startReal(t, st, RouteBufferingOn, "sync-2", 1<<10)
		logs := s.run.ProxyErrorLogs()
		if len(logs) != 1 || !filepath.IsAbs(logs[0]) || filepath.Dir(logs[0]) != s.d.LogDir || !strings.HasPrefix(filepath.Base(logs[0]), s.d.RunID+"-") {
			t.Errorf("%s: proxy error logs %v, want one absolute path in %s named for run %s", name, logs, s.d.LogDir, s.d.RunID)
		} else if _, err := os.Stat(logs[0]); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		s.stopAndCheck(t)
	}
}
