package stack

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
)

// TmpfsArgv wraps argv so that it runs in a mount namespace of its own
// with a tmpfs of size bytes mounted on dir: unshare(1) makes the
// namespace (mount propagation private, so nothing reaches the host's
// mounts and the host's do not follow), a shell mounts the tmpfs and
// execs argv in the same process. The namespace, and with it the tmpfs,
// is gone when its last process exits, however that happens (SIGKILL
// included): nothing is left to unmount. If the mount fails the shell
// exits 125 before argv runs. dir must exist (it is the mount point).
func TmpfsArgv(size int64, dir string, argv []string) []string {
	const script = `mount -t tmpfs -o "size=$1,mode=0700" slowlab-proxy-temp "$2" || exit 125; shift 2; exec "$@"`
	out := []string{"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "slowlab-tmpfs",
		strconv.FormatInt(size, 10), dir}
	return append(out, argv...)
}

// checkTmpfs returns nil when d needs no tmpfs, or when this process can
// make one: root (a mount namespace needs CAP_SYS_ADMIN) and unshare(1)
// and mount(1) on PATH (util-linux and mount).
func checkTmpfs(d Deployment) error {
	if d.TempTmpfs == 0 {
		return nil
	}
	if d.TempTmpfs < MinTempTmpfs || d.TempTmpfs > MaxTempTmpfs {
		return fmt.Errorf("temp tmpfs %d bytes: allowed %d (1m) to %d (1g)", d.TempTmpfs, MinTempTmpfs, MaxTempTmpfs)
	}
	if os.Geteuid() != 0 {
		return errors.New("a tmpfs for the proxy's temp dir needs root (a mount namespace of the proxy's own)")
	}
	for _, bin := range []string{"unshare", "mount"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("a tmpfs for the proxy's temp dir needs %s on PATH (apt-get install util-linux mount)", bin)
		}
	}
	return nil
}
