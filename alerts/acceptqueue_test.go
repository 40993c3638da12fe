package alerts

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
)

// The accept queue as the exporter publishes it, on real Gunicorn sync-2
// reached directly: 0 with no client; with 2 slow readers holding both
// workers, a /fast request waits in it (the queue is 1 while /fast waits);
// and 0 again once the readers are gone and /fast was answered.
func TestAcceptQueueWhileSlowReadersHoldWorkers(t *testing.T) {
	r, port, metricsURL := watchedSync2(t, "acceptq", 64<<20)
	series := regexp.MustCompile(`(?m)^slowlab_socket_accept_queue\{group="app",port="` + port + `"\} (\S+)$`)
	queue := func() float64 {
		resp, err := http.Get(metricsURL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := series.FindSubmatch(b)
		if m == nil {
			t.Fatalf("no accept queue series for port %s", port)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	if q := queue(); q != 0 {
		t.Errorf("accept queue with no client: %v, want 0", q)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	large, _ := url.Parse("http://" + r.AppAddr() + "/large")
	readers := make(chan loadgen.Download, 2)
	for i := range 2 {
		sr := loadgen.SlowReader{URL: large, RcvBuf: 8 << 10, ReadSize: 16 << 10, Rate: 256 << 10, Timeout: 10 * time.Minute,
			Header: http.Header{appserver.RequestIDHeader: {"acceptq-" + strconv.Itoa(i)}}}
		go func() { readers <- sr.Run(ctx, i) }()
	}
	// Both workers have taken a reader once the app's send log has both
	// bodies begun; /fast then has no worker.
	slowlabtest.WaitFor(t, "both workers writing to a slow reader", func() bool {
		served, _, err := r.AppServed(context.Background())
		return err == nil && len(served) == 2
	})
	fast := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 10 * time.Minute}).Get("http://" + r.AppAddr() + "/fast")
		if err == nil {
			resp.Body.Close()
		}
		fast <- err
	}()
	slowlabtest.WaitFor(t, "/fast waiting in the accept queue", func() bool { return queue() == 1 },
		func() string { return fmt.Sprintf("accept queue %v", queue()) })
	cancel()
	for range 2 {
		<-readers
	}
	if err := <-fast; err != nil {
		t.Errorf("/fast once the readers left: %v", err)
	}
	slowlabtest.WaitFor(t, "the accept queue empty again", func() bool { return queue() == 0 },
		func() string { return fmt.Sprintf("accept queue %v", queue()) })
}
