package exporter

import (
	"bytes"
	"path/filepath"
)

// What counts as a failed temp write, in a line of a proxy's error log:
//
//	SYSCALL() "PATH" failed (28: No space left on device)
//	SYSCALL() "PATH" has written only N of M
//
// where SYSCALL is pwrite, pwritev, write or writev (NGINX's ngx_write_file
// and ngx_write_chain_to_file, logged at crit; the embedded proxy logs
// `pwrite() "PATH" failed (28: no space left on device) while reading
// upstream`), the errno text is matched without regard to case, and PATH
// (as logged, cleaned) is below one of the group's temp dirs: NGINX's
// proxy_temp_path and client_body_temp_path, the embedded proxy's
// --temp-dir. Not counted: other errors on those paths (open() of a temp
// file, EIO, EDQUOT), writes to other files (the access log, a cache),
// lines without a quoted path.
var (
	writeSyscalls = [][]byte{[]byte("pwritev"), []byte("pwrite"), []byte("writev"), []byte("write")}
	callOpen      = []byte(`() "`)
	failedENOSPC  = []byte(` failed (28: no space left on device)`)
	writtenOnly   = []byte(` has written only `)
)

// isTempWriteFailure reports whether line records a failed write to a file
// below one of tempDirs (absolute, cleaned).
func isTempWriteFailure(line []byte, tempDirs []string) bool {
	for rest := line; ; {
		i := bytes.Index(rest, callOpen)
		if i < 0 {
			return false
		}
		call, after := rest[:i], rest[i+len(callOpen):]
		rest = after
		if !endsWithSyscall(call) {
			continue
		}
		end := bytes.IndexByte(after, '"')
		if end <= 0 {
			continue
		}
		path, tail := after[:end], after[end+1:]
		if !hasPrefixFold(tail, failedENOSPC) && !bytes.HasPrefix(tail, writtenOnly) {
			continue
		}
		if path[0] == '/' && under(filepath.Clean(string(path)), tempDirs) {
			return true
		}
	}
}

// endsWithSyscall reports whether b ends with a write syscall's name as a
// whole word ("pwrite" in "[crit] 12#0: pwrite", not "overwrite").
func endsWithSyscall(b []byte) bool {
	for _, s := range writeSyscalls {
		if bytes.HasSuffix(b, s) {
			before := len(b) - len(s)
			return before == 0 || !isWordByte(b[before-1])
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func hasPrefixFold(b, prefix []byte) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], prefix)
}
