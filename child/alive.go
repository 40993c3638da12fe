package child

import (
	"bytes"
	"os"
	"strconv"
)

// Alive reports whether pid is a process that has not exited: a zombie
// (exited, not yet reaped by its parent) or a dead one is not.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name's closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}
