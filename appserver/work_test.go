package appserver

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/slowlab/slowlab/loadgen"
)

// TestWork: /fast and /bytes spend the ?work= asked for, asleep or on
// the CPU, inside the time their Server-Timing reports; a bad value is a
// 400 naming it.
func TestWork(t *testing.T) {
	o := DefaultOptions()
	o.Model = ModelAsync
	_, base, _ := startServer(t, o)
	for _, path := range []string{"/fast?work=30ms", "/fast?work=30ms&work_kind=cpu", "/bytes?n=100&work=30ms&work_kind=sleep"} {
		start := time.Now()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		st, ok := loadgen.ParseServerTiming(resp.Header.Get("Server-Timing"), "app")
		if resp.StatusCode != 200 || !ok || st < 30*time.Millisecond || took < 30*time.Millisecond {
			t.Errorf("%s: status %d, Server-Timing %s (%v), took %s: want 200 and at least 30 ms in both", path, resp.StatusCode, st, ok, took)
		}
	}
	wantBadRequests(t, http.DefaultClient, base, map[string]string{
		"/fast?work=soon":             `work "soon": want a duration from 0 to 10s`,
		"/fast?work=-1ms":             `work "-1ms": want a duration from 0 to 10s`,
		"/bytes?n=1&work=1m":          `work "1m": want a duration from 0 to 10s`,
		"/fast?work=1ms&work_kind=io": `work_kind "io": want sleep or cpu`,
	})
}
