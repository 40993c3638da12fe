package stack

import (
	"os"
	"os/exec"
	"os/user"
	"regexp"
	"strconv"
)

// nginxUser returns the user and group names to put in the user directive
// when running as root, or "" when not root or the names are unknown.
func nginxUser() (string, string) {
	if os.Geteuid() != 0 {
		return "", ""
	}
	u, err := user.LookupId(strconv.Itoa(os.Geteuid()))
	if err != nil {
		return "", ""
	}
	g, err := user.LookupGroupId(strconv.Itoa(os.Getegid()))
	if err != nil {
		return "", ""
	}
	return u.Username, g.Name
}

// nginxArgv runs nginx with the generated config and prefix. -e (NGINX
// 1.19.5 and later) points the log NGINX uses before reading the config at
// stderr too, so it never opens the compiled-in /var/log path.
func nginxArgv(bin, dir, conf string, earlyStderr bool) []string {
	argv := []string{bin, "-p", dir + "/", "-c", conf}
	if earlyStderr {
		argv = append(argv, "-e", "stderr")
	}
	return argv
}

var nginxVersionRE = regexp.MustCompile(`nginx/(\d+)\.(\d+)\.(\d+)`)

// nginxHasErrorLogFlag reports whether the nginx binary knows -e.
func nginxHasErrorLogFlag(bin string) bool {
	out, _ := exec.Command(bin, "-v").CombinedOutput()
	m := nginxVersionRE.FindSubmatch(out)
	if m == nil {
		return false
	}
	v := [3]int{}
	for i := range v {
		v[i], _ = strconv.Atoi(string(m[i+1]))
	}
	return v[0] > 1 || v[0] == 1 && (v[1] > 19 || v[1] == 19 && v[2] >= 5)
}
