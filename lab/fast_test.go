package lab

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// FastSpec.Run sends its planned schedule to a loopback server, writes
// each request's row with the run's meta, tells OnRequest once a request,
// and returns them all.
func TestFastRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	dir := t.TempDir()
	w, err := recorder.CreateFile[recorder.Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	env := &Env{OnRequest: func(id string) {
		if id == "fast.rep1" {
			done++
		}
	}}
	spec := FastSpec{Path: "/fast", Rate: 40, Duration: Duration(250 * time.Millisecond), Timeout: Duration(10 * time.Second)}
	meta := recorder.RunMeta{RunID: "fast.rep1", Route: "direct", Server: "sync-2", SlowClients: 3, Rep: 1}
	got := spec.Run(context.Background(), env, srv.URL+spec.Path, false, meta, time.Now(), w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got.Planned < 1 || len(got.Reqs) != got.Planned || done != got.Planned || got.WriteErr != nil {
		t.Fatalf("planned %d, %d rows, %d done, write error %v", got.Planned, len(got.Reqs), done, got.WriteErr)
	}
	rows, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, recorder.FileName[recorder.Request]()))
	if err != nil || len(rows) != got.Planned {
		t.Fatalf("requests.csv: %d rows (%v), want %d", len(rows), err, got.Planned)
	}
	for _, r := range rows {
		if r.RunID != meta.RunID || r.SlowClients != 3 || r.Status != http.StatusOK {
			t.Errorf("row %+v", r)
		}
	}
	// A closed writer: the first write error is returned, every request
	// still accounted.
	got = spec.Run(context.Background(), env, srv.URL+spec.Path, false, meta, time.Now(), w)
	if got.WriteErr == nil || len(got.Reqs) != got.Planned {
		t.Errorf("closed writer: %d of %d rows, write error %v", len(got.Reqs), got.Planned, got.WriteErr)
	}
}

func TestStatusText(t *testing.T) {
	if got := StatusText(recorder.RunOK, ""); got != "ok" {
		t.Errorf("ok: %q", got)
	}
	if got := StatusText(recorder.RunFailed, "start stack: x"); got != "failed: start stack: x" {
		t.Errorf("failed: %q", got)
	}
}
