package exporter

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkScrape measures one full scrape (all collectors) of 3 groups
// over N sleeping processes that each hold 20 fds: stdio, 12 unlinked temp
// files and 5 loopback TCP sockets. Run with
//
//	go test ./exporter -run '^$' -bench Scrape -benchtime 20x
func BenchmarkScrape(b *testing.B) {
	for _, procs := range []int{50, 1000} {
		b.Run(fmt.Sprintf("groups=3/procs=%d/fds=20", procs), func(b *testing.B) {
			benchScrape(b, procs)
		})
	}
}

func benchScrape(b *testing.B, procs int) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		b.Skip("needs sleep(1)")
	}
	dir := b.TempDir()
	var files []*os.File
	for i := range 12 {
		f, err := os.Create(filepath.Join(dir, "proxy-temp-"+strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(make([]byte, 64<<10)); err != nil {
			b.Fatal(err)
		}
		os.Remove(f.Name())
		files = append(files, f)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	for range 5 {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		peer, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		defer peer.Close()
		f, err := c.(*net.TCPConn).File()
		c.Close()
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	groups := []Group{{Name: "app"}, {Name: "proxy", TempDirs: []string{dir}}, {Name: "loadgen"}}
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	for i := range procs {
		c := exec.Command(sleep, "600")
		c.ExtraFiles = files
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		cmds = append(cmds, c)
		g := &groups[i%3]
		g.Selectors = append(g.Selectors, "pid:"+strconv.Itoa(c.Process.Pid))
	}
	e, err := New(Config{Groups: groups}, Options{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	v := scrapeLoop(b, e)
	if got := v["slowlab_proxy_temp_files{proxy}"]; got != 12 {
		b.Errorf("proxy temp files %v, want 12", got)
	}
	for _, c := range []string{"cgroup", "process", "tempfiles", "sockets"} {
		if v["slowlab_exporter_collector_success{"+c+"}"] != 1 {
			b.Errorf("collector %s failed", c)
		}
	}
}

// scrapeLoop scrapes e b.N times and reports the CPU time (user +
// system, all threads) per scrape: what a scrape costs the host, steadier
// than wall time on a busy machine. It returns the last scrape's values.
func scrapeLoop(b *testing.B, e *Exporter) map[string]float64 {
	var v map[string]float64
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		v = valuesB(b, e)
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	return v
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
