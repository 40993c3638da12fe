package loadgen

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestSlowUploaderQueuedStillPaced: an upload whose server reads nothing
// for longer than the whole upload should take (it waits in a queue, its
// small send buffer and the server's receive buffer full) still arrives at
// about its rate once the server reads: a slow uplink never banks the
// bandwidth it could not use. What may arrive at once is what the kernel
// already holds (the server's receive queue, the client's send buffer), the
// write blocked in it and one write of the bucket; the rest comes at Rate.
// The time is counted from before the server's first body read.
func TestSlowUploaderQueuedStillPaced(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it paces an upload for seconds")
	const (
		size  = 2 << 20
		rate  = 1 << 20 // bytes per second
		write = 16 << 10
		sndb  = 16 << 10
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	u, _ := url.Parse("http://" + ln.Addr().String() + "/upload")
	res := make(chan Upload, 1)
	go func() {
		res <- SlowUploader{URL: u, Size: size, Rate: rate, SndBuf: sndb, WriteSize: write, Timeout: time.Minute}.Run(context.Background(), 0)
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The header arrived: the upload has started (its Start is now).
	var got []byte
	buf := make([]byte, 64<<10)
	for !bytes.Contains(got, []byte("\r\n\r\n")) {
		n, err := c.Read(buf[:1])
		if err != nil {
			t.Fatalf("reading the header: %v", err)
		}
		got = append(got, buf[:n]...)
	}
	// The queue: longer than the whole upload at its rate, reading nothing.
	time.Sleep(time.Duration(float64(size)/rate*float64(time.Second)) + 500*time.Millisecond)

	t0 := time.Now() // before the server's first body read: the cause
	banked, err := inQueue(c)
	if err != nil {
		t.Fatal(err)
	}
	var body int64
	for body < size {
		n, err := c.Read(buf)
		body += int64(n)
		if err != nil {
			t.Fatalf("read %d of %d body bytes: %v", body, size, err)
		}
	}
	took := time.Since(t0)
	if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	up := <-res
	if up.Outcome != UploadOK || up.Sent != size {
		t.Fatalf("upload %+v, want ok with %d bytes sent", up, size)
	}
	// About banked + the client's send buffer (Linux doubles it; a write
	// may overshoot it a little) + the blocked write + one write of the
	// bucket may come at once: 80% of the rest's time at Rate leaves room.
	atOnce := int64(banked) + 2*sndb + 2*write
	paced := time.Duration(float64(size-atOnce) / rate * float64(time.Second))
	t.Logf("after the queue: %d bytes were in the server's receive queue; the body took %v, paced part %v at %d B/s", banked, took, paced, rate)
	if took < paced*8/10 {
		t.Fatalf("the queued upload's body took %v once read, want at least 80%% of %v (%d bytes at %d B/s): it burst", took, paced, size-atOnce, rate)
	}
}

// inQueue is the bytes in c's receive queue (SIOCINQ).
func inQueue(c net.Conn) (int, error) {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	if err := raw.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		return 0, err
	}
	return n, ierr
}

// The uplink's bucket on a made-up clock: full (one write) at the start, a
// write every n/rate after, a late timer credited up to one write, and a
// long block (a server not reading) banking one write and no more.
func TestUplinkBucket(t *testing.T) {
	const rate, n = 1000.0, 100 // 100 ms per write
	t0 := time.Unix(1000, 0)
	ms := func(d int) time.Time { return t0.Add(time.Duration(d) * time.Millisecond) }
	l := newUplink(rate, n, t0)
	step := func(now time.Time, wantWait time.Duration, end time.Time) {
		t.Helper()
		if w := l.wait(n, now); w != wantWait {
			t.Fatalf("at %v: wait %v, want %v", now.Sub(t0), w, wantWait)
		}
		l.take(n)
		l.idle(end)
	}
	step(ms(0), 0, ms(0))                          // full at the start: the first write goes at once
	step(ms(0), 100*time.Millisecond, ms(130))     // the second is due at 100; its timer fires 30 ms late
	step(ms(130), 70*time.Millisecond, ms(200))    // the third is still due at 200: the late timer is made up
	step(ms(200), 100*time.Millisecond, ms(5000))  // the fourth, due at 300, blocks until 5000
	step(ms(5000), 0, ms(5000))                    // the blocked time banked one write,
	step(ms(5000), 100*time.Millisecond, ms(5100)) // and no more
	if l.wait(n, ms(5100)) != 100*time.Millisecond {
		t.Fatalf("after the burst: wait %v, want 100ms", l.wait(n, ms(5100)))
	}
}
