package stack

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxLogLine bounds one line of a component's log as the stack reads it
// (NGINX's error log lines are at most 2 KiB): a longer one fails the
// read, naming its line. A variable so tests can make it small.
var maxLogLine = 1 << 20

// LogLines calls f with each line of the log at p, newline included (the
// last one may have none), holding one line at a time rather than the
// file, which the component may have grown to any size (the stack's
// readers, and temp-cliff's count of the proxy's error lines).
func LogLines(p string, f func(line []byte)) error {
	file, err := os.Open(p)
	if err != nil {
		return err
	}
	defer file.Close()
	br := bufio.NewReaderSize(file, maxLogLine)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("%s line %d: over %d bytes", p, n, maxLogLine)
		}
		if len(line) > 0 {
			f(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
}
