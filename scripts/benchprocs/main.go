// Command benchprocs holds processes for scripts/bench-exporter.sh: N
// sleeping processes in 3 groups (`sleep 600`, `sleep 601`, `sleep 602`,
// so that every exporter can group them by command line), each holding
// FDS open descriptors (12 unlinked temp files in DIR, the rest connected
// loopback sockets) beside its own. It prints "ready" once all run and
// ends them, by PID, when its standard input closes or it is signalled.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
)

func main() {
	n := flag.Int("n", 50, "processes")
	fds := flag.Int("fds", 20, "descriptors each process holds (12 temp files, the rest sockets)")
	dir := flag.String("dir", os.TempDir(), "where the temp files are (unlinked at once)")
	flag.Parse()
	if err := run(*n, *fds, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "benchprocs:", err)
		os.Exit(1)
	}
}

func run(n, nfds int, dir string) error {
	if n < 1 || n > 10000 || nfds < 12 || nfds > 200 {
		return fmt.Errorf("-n %d (want 1..10000), -fds %d (want 12..200)", n, nfds)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return err
	}
	var files []*os.File
	for i := range 12 {
		f, err := os.Create(filepath.Join(dir, "proxy-temp-"+strconv.Itoa(i)))
		if err != nil {
			return err
		}
		if _, err := f.Write(make([]byte, 64<<10)); err != nil {
			return err
		}
		os.Remove(f.Name())
		files = append(files, f)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	for len(files) < nfds {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			return err
		}
		peer, err := ln.Accept()
		if err != nil {
			return err
		}
		defer peer.Close()
		f, err := c.(*net.TCPConn).File()
		c.Close()
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	for i := range n {
		c := exec.Command(sleep, strconv.Itoa(600+i%3))
		c.ExtraFiles = files
		if err := c.Start(); err != nil {
			return err
		}
		cmds = append(cmds, c)
	}
	for _, f := range files {
		f.Close()
	}
	fmt.Println("ready")
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-done:
	case <-sig:
	}
	return nil
}
