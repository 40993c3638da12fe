package hops

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/proxy"
	"github.com/slowlab/slowlab/recorder"
)

// pacedApp serves size bytes to every request, written in 64 KiB blocks
// paced to rate (bytes/s), the first half, then nothing for pause, then
// the second half, with the request's source port in
// appserver.PeerPortHeader as the lab's apps do.
func pacedApp(size int64, rate float64, pause time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set(appserver.PeerPortHeader, strconv.Itoa(int(ap.Port())))
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		block := make([]byte, 64<<10)
		start := time.Now()
		for sent := int64(0); sent < size; {
			n := min(int64(len(block)), size-sent)
			if _, err := w.Write(block[:n]); err != nil {
				return
			}
			if sent < size/2 && sent+n >= size/2 {
				w.(http.Flusher).Flush()
				time.Sleep(pause)
				start = start.Add(pause)
			}
			sent += n
			time.Sleep(time.Until(start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))))
		}
	})
}

// slowGet sends GET path to addr from a socket with an 8 KiB receive
// buffer and reads the response at about rate bytes/s. It sends its local
// address on local as soon as it is connected, and returns the download
// as Hops needs it.
func slowGet(addr, path string, rate float64, local chan<- netip.AddrPort) (Download, error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<10) })
		return err
	}}
	conn, err := d.Dial("tcp4", addr)
	if err != nil {
		return Download{}, err
	}
	defer conn.Close()
	dl := Download{Local: conn.LocalAddr().(*net.TCPAddr).AddrPort()}
	local <- dl.Local
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	br := bufio.NewReaderSize(conn, 16<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return dl, err
	}
	defer resp.Body.Close()
	peer, err := strconv.ParseUint(resp.Header.Get(appserver.PeerPortHeader), 10, 16)
	if err != nil {
		return dl, fmt.Errorf("peer port header: %w", err)
	}
	dl.PeerPort = uint16(peer)
	buf := make([]byte, 16<<10)
	start := time.Now()
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		n += int64(k)
		time.Sleep(time.Until(start.Add(time.Duration(float64(n) / rate * float64(time.Second)))))
		if err == io.EOF {
			break
		}
		if err != nil {
			return dl, err
		}
	}
	if n != resp.ContentLength {
		return dl, fmt.Errorf("read %d of %d bytes", n, resp.ContentLength)
	}
	// What the app wrote: its header (about as received) and the body.
	hdr := int64(len("HTTP/1.1 200 OK\r\n\r\n"))
	for k, vs := range resp.Header {
		for _, v := range vs {
			hdr += int64(len(k) + len(v) + 4)
		}
	}
	dl.Total = hdr + n
	return dl, nil
}

// recordBuffered records a small real run through a buffering proxy (the
// embedded proxy, package proxy, in this process, with NGINX's buffer
// sizes) and returns its hops.csv rows as written and read back: an app
// writing 16 MiB at 64 MiB/s with a 300 ms pause half way (so the proxy's
// temp files fill over several samples and hold still between), two clients reading at 4 MiB/s, sampled every 10 ms with the
// proxy's temp files measured from this process's fds and, like NGINX's,
// its buffers not reported.
func recordBuffered(t *testing.T) []recorder.Hop {
	const size, fill, read = 16 << 20, 64 << 20, 4 << 20
	appLn, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: pacedApp(size, fill, 300*time.Millisecond)}
	go app.Serve(appLn)
	defer app.Close()
	opts := proxy.DefaultOptions()
	opts.Upstream, opts.TempDir = appLn.Addr().String(), t.TempDir()
	px, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	pxLn, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- px.Serve(ctx, pxLn, nil) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()

	p := Path{AppPort: uint16(appLn.Addr().(*net.TCPAddr).Port), ProxyPort: uint16(pxLn.Addr().(*net.TCPAddr).Port),
		ProxyMemory: int64(opts.BufferSize + opts.Buffers.Count*opts.Buffers.Size)}
	s := &Sampler{Interval: 10 * time.Millisecond, Ports: []uint16{p.AppPort, p.ProxyPort},
		Temp: TempFiles{PIDs: []int{os.Getpid()}, Dirs: []string{opts.TempDir}}.Size}
	g := s.Start(context.Background(), time.Now())
	type got struct {
		d   Download
		err error
	}
	results := make(chan got, 2)
	local := make(chan netip.AddrPort, 2)
	for i := range 2 {
		go func() {
			d, err := slowGet(pxLn.Addr().String(), "/large", read, local)
			d.Client = i
			results <- got{d, err}
		}()
	}
	var downloads []Download
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		downloads = append(downloads, r.d)
	}
	samples, err := g.Stop()
	if err != nil {
		t.Fatal(err)
	}
	rows := Hops("buffered", p, downloads, samples)
	dir := t.TempDir()
	w, err := recorder.CreateFile[recorder.Hop](dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := recorder.ReadFile[recorder.Hop](filepath.Join(dir, recorder.FileName[recorder.Hop]()))
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// held returns the violations of rows that are not of a sample taken
// while a connection was being set up.
func held(rows []recorder.Hop) []Violation {
	var out []Violation
	for _, v := range Check(rows) {
		if !v.Setup() {
			out = append(out, v)
		}
	}
	return out
}

// tempSamples are the proxy's temp-file-size rows, in time order.
func tempSamples(rows []recorder.Hop) []int {
	var idx []int
	for i, r := range rows {
		if r.Hop == recorder.HopProxyTempFileSize {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return cmpF(rows[a].TS, rows[b].TS) })
	return idx
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestCheckMutationsOnRealRun: the samples of a real run through a
// buffering proxy, its temp files measured from the files, pass Check;
// each mutation of them fails it: the temp-file hop dropped, doubled, one
// sample's temp-file reading replaced by an earlier one (measured at
// another instant than its sockets), and one sample moved later in time.
func TestCheckMutationsOnRealRun(t *testing.T) {
	rows := recordBuffered(t)
	if bad := held(rows); len(bad) > 0 {
		t.Fatalf("unmutated: %d samples not conserved; the first: %s", len(bad), bad[0])
	}
	ts := tempSamples(rows)
	var peak int64
	for _, i := range ts {
		peak = max(peak, rows[i].Bytes)
	}
	// A sample while the temp files held still (the app's pause), and the
	// first later one at which they held still again, 4 MiB more (the
	// response spooled): the first one's reading paired with the later
	// one's sockets is a reading from another instant. Held still, each
	// sample's own uncertainty (its skew) is small.
	stable := func(k int) bool { return k > 0 && rows[ts[k]].Bytes == rows[ts[k-1]].Bytes && rows[ts[k]].Bytes > 0 }
	still, grown := -1, -1
	for k := 1; k < len(ts) && grown < 0; k++ {
		if !stable(k) {
			continue
		}
		for j := k + 1; j < len(ts); j++ {
			if stable(j) && rows[ts[j]].Bytes-rows[ts[k]].Bytes >= 4<<20 {
				still, grown = k, j
				break
			}
		}
	}
	t.Logf("%d rows, %d proxy samples, temp files peak %d bytes", len(rows), len(ts), peak)
	if peak < 8<<20 || grown < 0 {
		var seq []string
		for _, i := range ts {
			seq = append(seq, fmt.Sprintf("%.3f:%d", rows[i].TS, rows[i].Bytes))
		}
		t.Fatalf("temp files peaked at %d bytes, and no sample while they held still was followed by one holding still 4 MiB more: want over 8 MiB and both; the samples: %v", peak, seq)
	}
	t.Logf("held still at %.3f s (%d bytes), and again at %.3f s (%d bytes)", rows[ts[still]].TS, rows[ts[still]].Bytes, rows[ts[grown]].TS, rows[ts[grown]].Bytes)

	mutations := map[string]func([]recorder.Hop) []recorder.Hop{
		"drop temp-file hop": func(r []recorder.Hop) []recorder.Hop {
			return slices.DeleteFunc(r, func(h recorder.Hop) bool { return h.Hop == recorder.HopProxyTempFileSize })
		},
		"double temp-file hop": func(r []recorder.Hop) []recorder.Hop {
			for i := range r {
				if r[i].Hop == recorder.HopProxyTempFileSize {
					r[i].Bytes *= 2
				}
			}
			return r
		},
		"temp files read at an earlier sample": func(r []recorder.Hop) []recorder.Hop {
			r[ts[grown]].Bytes = r[ts[still]].Bytes
			return r
		},
		"one sample moved later": func(r []recorder.Hop) []recorder.Hop {
			// Download 0's sample at which the temp files first held
			// still, to just after the one at which they held still again.
			at, to := r[ts[still]].TS, r[ts[grown]].TS+0.0005
			for i := range r {
				if r[i].Download == 0 && r[i].TS == at {
					r[i].TS = to
				}
			}
			return r
		},
	}
	for name, mutate := range mutations {
		bad := held(mutate(slices.Clone(rows)))
		if len(bad) == 0 {
			t.Errorf("%s: Check found nothing", name)
			continue
		}
		t.Logf("%s: %d violations; the first: %s", name, len(bad), bad[0])
	}
}
