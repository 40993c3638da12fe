package appserver

import (
	"fmt"
	"net/http"
	"testing"
)

// BenchmarkGthreadFast measures /fast on a new connection per request
// through a 2x16 gthread server, with each accept policy: Gunicorn's
// (the dispatcher hands every connection to a drawn worker) and
// AcceptWhenFree (workers accept on the shared socket). 8 x GOMAXPROCS
// clients in parallel.
func BenchmarkGthreadFast(b *testing.B) {
	for _, whenFree := range []bool{false, true} {
		b.Run(fmt.Sprintf("AcceptWhenFree=%v", whenFree), func(b *testing.B) {
			_, base, _ := startServer(b, Options{Model: ModelGthread, Workers: 2, Threads: 16, LargeSize: 10, BlockSize: 4, AcceptWhenFree: whenFree})
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			b.SetParallelism(8)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := c.Get(base + "/fast")
					if err != nil {
						b.Error(err)
						return
					}
					resp.Body.Close()
				}
			})
		})
	}
}
