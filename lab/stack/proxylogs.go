package stack

import (
	"path/filepath"

	"github.com/slowlab/slowlab/child"
)

// ErrorLogs implements RunningProxy: error_log goes to NGINX's stderr,
// the child's log (LOGDIR/RUNID-nginx.log).
func (r *nginxRun) ErrorLogs() []string { return childLogs(r.p) }

// ErrorLogs implements RunningProxy: the embedded proxy logs its errors
// to its stderr, the child's log (LOGDIR/RUNID-proxy.log).
func (r *embeddedProxyRun) ErrorLogs() []string { return childLogs(r.p) }

// childLogs is the log of child process p, where its stderr goes, as an
// absolute path.
func childLogs(p *child.Process) []string {
	path, err := filepath.Abs(p.LogPath())
	if err != nil {
		path = p.LogPath()
	}
	return []string{path}
}
