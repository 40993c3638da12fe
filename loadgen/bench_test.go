package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowlab/slowlab/recorder"
)

// rawServer answers every HTTP/1.1 request on a loopback listener with
// the same small 200 response, with as little work and allocation as it
// can, so a benchmark's allocations and CPU are mostly the client's. It
// closes a connection when the request asks it to (new-connection mode).
func rawServer(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	const body = "ok\n"
	keep := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\n" + body)
	closing := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\n" + body)
	bufs := sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				br := bufs.Get().(*bufio.Reader)
				defer bufs.Put(br)
				br.Reset(c)
				for {
					close := false
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
						if bytes.HasPrefix(bytes.ToLower(line), []byte("connection: close")) {
							close = true
						}
					}
					if close {
						c.Write(closing)
						return
					}
					if _, err := c.Write(keep); err != nil {
						return
					}
				}
			})
		}
	})
	return "http://" + ln.Addr().String() + "/fast"
}

// BenchmarkOpenLoop runs an open loop of b.N requests at a fixed rate
// against rawServer, as `slowlab loadgen --out` does (metrics observed,
// every result a requests.csv row, here to io.Discard), with a new
// connection per request and with keep-alive. Besides allocs/op it
// reports the schedule lag's p50, p99 and max, the share of requests
// started more than 1 ms late, and the failures; each with net/http and
// with ClientOptions.Lean.
//
//	go test -run '^$' -bench OpenLoop -benchmem ./loadgen
//	go test -run '^$' -bench OpenLoop/lean/new -cpuprofile cpu.out -memprofile mem.out ./loadgen
func BenchmarkOpenLoop(b *testing.B) {
	url := rawServer(b)
	for _, mode := range []struct {
		name      string
		keepAlive bool
		rate      float64
	}{{"new", false, 2000}, {"keepalive", true, 4000}, {"keepalive", true, 1000}} {
		for _, lean := range []bool{false, true} {
			client := map[bool]string{false: "nethttp", true: "lean"}[lean]
			b.Run(fmt.Sprintf("%s/%s/rate=%g", client, mode.name, mode.rate), func(b *testing.B) {
				c := NewClient(ClientOptions{KeepAlive: mode.keepAlive, Timeout: 10 * time.Second, Lean: lean})
				defer c.Close()
				w, err := recorder.NewWriter[recorder.Request](io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				meta := recorder.RunMeta{RunID: "bench"}
				interval := time.Duration(float64(time.Second) / mode.rate)
				lags := make([]time.Duration, 0, b.N)
				failed := 0
				b.ReportAllocs()
				b.ResetTimer()
				t0 := time.Now()
				loop := OpenLoop{Client: c, URL: url, Pacer: ConstantPacer{Interval: interval, Duration: time.Duration(b.N) * interval},
					Start: t0, RunID: "bench", Metrics: NewMetrics(prometheus.NewRegistry()), DiscardResults: true,
					OnResult: func(r Result) {
						lags = append(lags, r.ScheduleLag)
						if r.Err != nil {
							failed++
						}
						if err := w.Write(RequestRow(meta, t0, r)); err != nil {
							b.Error(err)
						}
					}}
				loop.Run(context.Background())
				b.StopTimer()
				reportLags(b, lags)
				b.ReportMetric(float64(failed), "failed")
			})
		}
	}
}

// reportLags reports nearest-rank percentiles of the lags in ms and the
// percentage started more than 1 ms late.
func reportLags(b *testing.B, lags []time.Duration) {
	if len(lags) == 0 {
		b.Error(errors.New("no results"))
		return
	}
	slices.Sort(lags)
	at := func(p float64) float64 {
		i := int(p/100*float64(len(lags))+0.999999) - 1
		return float64(lags[max(0, min(i, len(lags)-1))]) / 1e6
	}
	late := len(lags) - slices.IndexFunc(lags, func(d time.Duration) bool { return d > time.Millisecond })
	if late > len(lags) {
		late = 0
	}
	b.ReportMetric(at(50), "lag-p50-ms")
	b.ReportMetric(at(99), "lag-p99-ms")
	b.ReportMetric(at(100), "lag-max-ms")
	b.ReportMetric(100*float64(late)/float64(len(lags)), "%late")
}

// BenchmarkOpenLoopHeap runs b.N requests as `slowlab loadgen` does
// (results streamed into a Summary and requests.csv rows, none kept) with
// keep-alive at 4,000 req/s, and reports the live heap after a GC at the
// end: run it with -benchtime 20000x and 40000x; the two should match, as
// nothing the loop keeps may grow with its requests.
//
//	go test -run '^$' -bench OpenLoopHeap -benchtime 20000x ./loadgen
func BenchmarkOpenLoopHeap(b *testing.B) {
	url := rawServer(b)
	c := NewClient(ClientOptions{KeepAlive: true, Lean: true, Timeout: 10 * time.Second})
	defer c.Close()
	w, err := recorder.NewWriter[recorder.Request](io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	meta := recorder.RunMeta{RunID: "heap"}
	sum := NewSummary()
	t0 := time.Now()
	const interval = 250 * time.Microsecond
	loop := OpenLoop{Client: c, URL: url, Pacer: ConstantPacer{Interval: interval, Duration: time.Duration(b.N) * interval},
		Start: t0, RunID: "heap", Metrics: NewMetrics(prometheus.NewRegistry()), DiscardResults: true,
		OnResult: func(r Result) {
			sum.Add(r)
			if err := w.Write(RequestRow(meta, t0, r)); err != nil {
				b.Error(err)
			}
		}}
	loop.Run(context.Background())
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(sum.OK), "ok")
}

// BenchmarkLeanGet sends b.N requests one after another to rawServer,
// with net/http and with ClientOptions.Lean, keep-alive and a new
// connection each: the client's own allocations per request, without the
// open loop's concurrency (which varies with the machine's load).
//
//	go test -run '^$' -bench LeanGet -benchmem ./loadgen
func BenchmarkLeanGet(b *testing.B) {
	url := rawServer(b)
	for _, keepAlive := range []bool{true, false} {
		for _, lean := range []bool{false, true} {
			name := map[bool]string{false: "nethttp", true: "lean"}[lean] + map[bool]string{true: "/keepalive", false: "/new"}[keepAlive]
			b.Run(name, func(b *testing.B) {
				c := NewClient(ClientOptions{KeepAlive: keepAlive, Timeout: 10 * time.Second, Lean: lean})
				defer c.Close()
				b.ReportAllocs()
				for b.Loop() {
					var r Result
					c.Get(context.Background(), url, &r)
					if r.Err != nil || r.Status != 200 {
						b.Fatalf("status %d, err %v", r.Status, r.Err)
					}
				}
			})
		}
	}
}
