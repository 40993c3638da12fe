package lab

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
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
		f, err := openRunFiles[recorder.LargeResponse, recorder.Run](dir, false)
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
	f, err := openRunFiles[recorder.LargeResponse, recorder.Run](t.TempDir(), false)
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

// PrintResult prints the result's table, then each condition skipped.
func TestPrintResult(t *testing.T) {
	res := &printed{MatrixResult[recorder.Run]{Skipped: []string{"direct.async-1: no event-loop server"}}}
	var b bytes.Buffer
	PrintResult(&b, res)
	if want := "the table\nskipped: direct.async-1: no event-loop server\n"; b.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", b.String(), want)
	}
}

// printed is a Result whose table is one line.
type printed struct{ MatrixResult[recorder.Run] }

func (*printed) Print(w io.Writer) { io.WriteString(w, "the table\n") }

// cell is a condition of a Beside matrix.
type cell struct {
	route  stack.Route
	server string
}

func (c cell) RouteName() stack.Route { return c.route }
func (c cell) ServerName() string     { return c.server }

// Beside's Servers are the servers its conditions name, as ParsedServers
// parses them (a name that does not parse left out for Validate, and
// "async", the stack's own event-loop server, which the stack resolves),
// and its Routes every condition's route in order.
func TestBesideServersAndRoutes(t *testing.T) {
	b := Beside[cell]{Conditions: []cell{{stack.RouteDirect, "sync-2"}, {stack.RouteBufferingOn, "sync-0x"},
		{stack.RouteDirect, stack.AsyncServer}, {stack.RouteDirect, "gthread-1x4"}}}
	var servers []string
	for _, s := range b.Servers() {
		servers = append(servers, s.Name())
	}
	if want := []string{"sync-2", "gthread-1x4"}; !slices.Equal(servers, want) {
		t.Errorf("servers %q, want %q", servers, want)
	}
	if got, want := b.Routes(), []stack.Route{stack.RouteDirect, stack.RouteBufferingOn, stack.RouteDirect, stack.RouteDirect}; !slices.Equal(got, want) {
		t.Errorf("routes %q, want %q", got, want)
	}
}

// A run's key is its /fast requests' RunMeta, its clients the slow ones;
// the shared column values: a setting's seconds (none where unset), bytes
// as MiB (none stays none), and a server's workers and slots (no slots
// for an event loop).
func TestSharedColumns(t *testing.T) {
	k := RunKey{RunID: "direct.sync-2.u2.rep3", Route: "direct", Server: "sync-2", Clients: 2, Rep: 3}
	if got, want := k.Meta(), (recorder.RunMeta{RunID: k.RunID, Route: "direct", Server: "sync-2", SlowClients: 2, Rep: 3}); got != want {
		t.Errorf("meta %+v, want %+v", got, want)
	}
	if got := SetSeconds(Duration(1500 * time.Millisecond)); got != recorder.Some(1.5) {
		t.Errorf("1.5 s set: %v", got)
	}
	if got := SetSeconds(0); got.Valid {
		t.Errorf("unset: %v, want none", got)
	}
	if got := MiB(recorder.Some(3 << 20)); got != recorder.Some(3) {
		t.Errorf("3 MiB of bytes: %v", got)
	}
	if got := MiB(recorder.Maybe{}); got.Valid {
		t.Errorf("no bytes: %v, want none", got)
	}
	for _, tc := range []struct {
		server         string
		workers, slots recorder.Maybe
	}{
		{"sync-2", recorder.Some(2), recorder.Some(2)},
		{"gthread-2x4", recorder.Some(2), recorder.Some(8)},
		{"uvicorn-2", recorder.Some(2), recorder.Maybe{}},
	} {
		s, err := stack.ParseServer(tc.server)
		if err != nil {
			t.Fatal(err)
		}
		if w, sl := Capacity(s); w != tc.workers || sl != tc.slots {
			t.Errorf("%s: workers %v slots %v, want %v and %v", tc.server, w, sl, tc.workers, tc.slots)
		}
	}
}
