package lab

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// served is a loopback server as a run's load sees it.
type served struct {
	url    string
	remote bool
}

func (s served) URL() string       { return s.url }
func (s served) AllowRemote() bool { return s.remote }

// RunClients runs every client against the checked target beside the
// /fast schedule: each client's row lands at its number, in the items
// file only when asked, and every /fast request in requests.csv.
func TestRunClients(t *testing.T) {
	var mu sync.Mutex
	var items []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/item" {
			mu.Lock()
			items = append(items, r.URL.Query().Get("client"))
			mu.Unlock()
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	fast := FastSpec{Path: "/fast", Rate: 40, Duration: Duration(200 * time.Millisecond), Timeout: Duration(10 * time.Second)}
	meta := recorder.RunMeta{RunID: "beside.rep1", Route: "direct", Server: "sync-2", SlowClients: 3, Rep: 1}
	client := func(i int, target *url.URL) recorder.LargeResponse {
		u := *target
		u.RawQuery = url.Values{"client": {strconv.Itoa(i)}}.Encode()
		row := recorder.LargeResponse{RunID: meta.RunID, Client: i}
		resp, err := http.Get(u.String())
		if err != nil {
			row.Error = err.Error()
			return row
		}
		resp.Body.Close()
		row.Status = resp.StatusCode
		return row
	}
	for _, write := range []bool{true, false} {
		dir := t.TempDir()
		f, err := OpenRunFiles[recorder.LargeResponse, recorder.Run](dir)
		if err != nil {
			t.Fatal(err)
		}
		items = nil
		got := RunClients(context.Background(), &Env{}, fast, served{url: srv.URL}, meta, time.Now(), f, "/item", write, client)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got.WriteErr != nil || got.Planned < 1 || len(got.Reqs) != got.Planned || len(got.Rows) != 3 {
			t.Fatalf("write %v: error %v, planned %d, %d requests, %d rows", write, got.WriteErr, got.Planned, len(got.Reqs), len(got.Rows))
		}
		for i, r := range got.Rows {
			if r.Client != i || r.Status != http.StatusOK {
				t.Errorf("write %v: row %d is client %d with status %d (%s)", write, i, r.Client, r.Status, r.Error)
			}
		}
		slices.Sort(items)
		if !slices.Equal(items, []string{"0", "1", "2"}) {
			t.Errorf("write %v: the server saw clients %v", write, items)
		}
		written, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(dir, recorder.FileName[recorder.LargeResponse]()))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 3, false: 0}[write]; len(written) != want {
			t.Errorf("write %v: %d rows in the items file, want %d", write, len(written), want)
		}
		reqs, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, recorder.FileName[recorder.Request]()))
		if err != nil || len(reqs) != got.Planned {
			t.Errorf("write %v: %d rows in requests.csv (%v), want %d", write, len(reqs), err, got.Planned)
		}
	}
}

// A target off loopback, where the stack does not allow it, runs nothing.
func TestRunClientsRefusesTarget(t *testing.T) {
	f, err := OpenRunFiles[recorder.LargeResponse, recorder.Run](t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ran := false
	got := RunClients(context.Background(), &Env{}, PublishedFast(), served{url: "http://192.0.2.1:8000"},
		recorder.RunMeta{RunID: "x.rep1", SlowClients: 2}, time.Now(), f, "/item", true,
		func(int, *url.URL) recorder.LargeResponse { ran = true; return recorder.LargeResponse{} })
	if got.WriteErr == nil || ran || len(got.Rows) != 0 || got.Planned != 0 {
		t.Errorf("error %v, client ran %v, %d rows, %d planned", got.WriteErr, ran, len(got.Rows), got.Planned)
	}
}

// PrintConditions prints the table, then each condition skipped.
func TestPrintConditions(t *testing.T) {
	table := report.Table[string]{Cols: []report.Column[string]{report.Col("route", func(s *string) report.Cell { return report.Text(*s) })}}
	var b bytes.Buffer
	PrintConditions(&b, &table, []string{"direct"}, []string{"direct.async-1: no event-loop server"})
	var want bytes.Buffer
	table.WriteText(&want, []string{"direct"})
	want.WriteString("skipped: direct.async-1: no event-loop server\n")
	if b.String() != want.String() || !strings.Contains(b.String(), "direct") {
		t.Errorf("printed\n%s\nwant\n%s", b.String(), want.String())
	}
}
