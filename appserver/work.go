package appserver

import (
	"fmt"
	"net/http"
	"time"
)

// MaxWork bounds /fast?work= and /bytes?work=.
const MaxWork = 10 * time.Second

// Kinds of work a request can ask for (?work_kind=).
const (
	WorkSleep = "sleep" // waits, as a handler waiting on a database does
	WorkCPU   = "cpu"   // spins on the CPU, as a handler computing does
)

// work spends the processing time a request asks for with ?work=DURATION
// (and ?work_kind=sleep or cpu, sleep when absent) before the handler
// answers, inside the time its Server-Timing reports: the latency-gap
// experiment sweeps it to see how blind the server's own timing is
// against how long it works. On a bad value it answers 400 and returns
// false.
func (s *Server) work(w http.ResponseWriter, r *http.Request, endpoint string, start time.Time) bool {
	q := r.URL.Query()
	v, kind := q.Get("work"), q.Get("work_kind")
	if v == "" && kind == "" {
		return true
	}
	d, err := time.ParseDuration(v)
	if v == "" {
		d, err = 0, nil
	}
	switch {
	case err != nil || d < 0 || d > MaxWork:
		http.Error(w, fmt.Sprintf("work %q: want a duration from 0 to %s", v, MaxWork), http.StatusBadRequest)
	case kind != "" && kind != WorkSleep && kind != WorkCPU:
		http.Error(w, fmt.Sprintf("work_kind %q: want %s or %s", kind, WorkSleep, WorkCPU), http.StatusBadRequest)
	default:
		spend(d, kind)
		return true
	}
	s.done(endpoint, http.StatusBadRequest, start)
	return false
}

// spend spends d: asleep, or spinning on the CPU for kind cpu.
func spend(d time.Duration, kind string) {
	if d <= 0 {
		return
	}
	if kind != WorkCPU {
		time.Sleep(d)
		return
	}
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

// sink keeps the spin loop's result alive.
var sink uint64
