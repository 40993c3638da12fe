package slowlabtest

import (
	"encoding/binary"
	"net"
	"syscall"
	"testing"
	"unsafe"
)

// notsentOffset is where struct tcp_info keeps tcpi_notsent_bytes, a u32
// (include/uapi/linux/tcp.h; Linux 4.6+).
const notsentOffset = 144

// NotSent returns the bytes in c's send queue that TCP has not sent even
// once (tcpi_notsent_bytes), and false when the kernel's struct tcp_info
// is too short to have the field. It reads the raw struct, not
// unix.TCPInfo, because the length the kernel returns is what tells an
// old kernel from a queue that is empty.
func NotSent(t testing.TB, c net.Conn) (uint32, bool) {
	t.Helper()
	tc, ok := c.(*net.TCPConn)
	if !ok {
		t.Fatalf("NotSent: %T is not a TCP connection", c)
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info [512]byte
	size := uint32(len(info))
	var errno syscall.Errno
	if err := raw.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
	}); err != nil {
		t.Fatal(err)
	}
	if errno != 0 {
		t.Fatalf("getsockopt TCP_INFO: %v", errno)
	}
	if size < notsentOffset+4 {
		return 0, false
	}
	return binary.NativeEndian.Uint32(info[notsentOffset:]), true
}
