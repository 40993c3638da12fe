package instrument

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/recorder"
)

// A run's resource scrape may outlast the sampling interval: an exporter
// that takes 400 ms to answer, sampled every 200 ms, still gives rows
// with its values (the ticks the scrape overlaps are skipped). With the
// scrape cut at the interval, every tick was an error row.
func TestSamplingKeepsSlowScrapes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond)
		w.Write([]byte("# TYPE slowlab_process_resident_memory_bytes gauge\nslowlab_process_resident_memory_bytes{group=\"app\"} 1048576\n"))
	}))
	defer srv.Close()
	w, err := recorder.CreateFile[recorder.ResourceSample](t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := startSampling([]string{srv.URL}, "slow", time.Now(), 200*time.Millisecond, w)
	good := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := 0
		for _, r := range s.samples {
			if r.Component == "app" && r.Error == "" && r.RSSBytes.Valid {
				n++
			}
		}
		return n
	}
	slowlabtest.WaitFor(t, "two ticks with the slow exporter's values", func() bool { return good() >= 2 })
	rows, _, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Error != "" && !strings.HasPrefix(r.Error, recorder.ErrTickSkipped.Error()) {
			t.Errorf("row %+v: want values or a skipped tick, not a failed scrape", r)
		}
	}
}
