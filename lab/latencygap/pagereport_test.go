package latencygap

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/recorder"
)

// TestReportPages reports testdata's gap.csv with the page loads of
// testdata/gap-pages.csv and three loads' requests in
// gap-page-requests.csv (a 10-resource page over HTTP/1.1, TLS 1.3, 50 ms
// RTT): the waterfall draws the load of median time (load 2), a bar per
// request in each phase it had (a TCP connect and a TLS handshake per
// new connection, a first byte for each), and the table a row per page
// condition and mode.
func TestReportPages(t *testing.T) {
	rep := labtest.Report(t, Section, gapFile, pageFile, fetchFile)
	f := labtest.Figure(t, rep, "latency-gap-waterfall")
	fetches, err := recorder.ReadFile[Fetch](filepath.Join("testdata", fetchFile))
	if err != nil {
		t.Fatal(err)
	}
	var requests, conns int
	for _, r := range fetches {
		if r.Load == 2 {
			requests++
			if r.NewConn {
				conns++
			}
		}
	}
	if requests != 11 || conns < 2 {
		t.Fatalf("testdata: load 2 has %d requests, %d new connections", requests, conns)
	}
	if !strings.Contains(f.Title, "page 10, http/1.1") {
		t.Fatalf("waterfall %q", f.Title)
	}
	// A series per phase some request of load 2 had, in phase order.
	var want []int
	for _, ph := range waterfallPhases {
		n := 0
		for i := range fetches {
			if fetches[i].Load == 2 && ph.get(&fetches[i]) > 0 {
				n++
			}
		}
		if n > 0 {
			want = append(want, n)
		}
		switch ph.name {
		case "TCP connect", "TLS handshake":
			if n != conns {
				t.Errorf("%s: %d requests, want one per new connection (%d)", ph.name, n, conns)
			}
		case "request to first byte":
			if n != requests {
				t.Errorf("%s: %d requests, want every one (%d)", ph.name, n, requests)
			}
		}
	}
	if !slices.Equal(f.Points, want) {
		t.Errorf("waterfall points %v, want %v (load 2's phases)", f.Points, want)
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	for _, want := range []string{"page 10, http/1.1", "page 10, h2", "visible_%", "bound_ms"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if slices.Contains(rep.Notes, "Page-load waterfall left out") {
		t.Errorf("notes %v", rep.Notes)
	}
}

// TestReportPagesWithoutRequests: gap-pages.csv alone gives the table
// and a note that the waterfall was left out.
func TestReportPagesWithoutRequests(t *testing.T) {
	rep := labtest.Report(t, Section, gapFile, pageFile)
	if slices.Contains(labtest.FigureNames(rep), "latency-gap-waterfall") {
		t.Error("a waterfall without gap-page-requests.csv")
	}
	if notes := strings.Join(rep.Notes, " "); !strings.Contains(notes, "Page-load waterfall left out: no ok load in "+fetchFile) {
		t.Errorf("notes %q", rep.Notes)
	}
}

// TestWaterfallLoadPicks: the waterfall draws the first page condition
// kept alive that has loads (else the first condition with loads), its
// ok load of median time (a failed load left out, whatever its time),
// its requests in hop order and no other condition's.
func TestWaterfallLoadPicks(t *testing.T) {
	redirect := LoadKey{RunID: "r1", Kind: KindRedirect, Mode: ModeKeepAlive, Redirects: 2}
	pageNew := LoadKey{RunID: "r2", Kind: KindPage, Mode: ModeNew, Resources: 4}
	pageAlive := LoadKey{RunID: "r3", Kind: KindPage, Mode: ModeKeepAlive, Resources: 4}
	fetch := func(k LoadKey, load, hop int, endMS float64, err string) Fetch {
		return Fetch{LoadKey: k, Load: load, Hop: hop, EndMS: endMS, Error: err}
	}
	fetches := []Fetch{
		fetch(pageAlive, 0, 0, 30, ""),
		fetch(pageAlive, 1, 0, 10, ""),
		fetch(pageAlive, 2, 1, 20, ""), fetch(pageAlive, 2, 0, 5, ""),
		fetch(pageAlive, 3, 0, 5, "reset"), // failed: the median of four would be load 1's
		fetch(pageNew, 2, 0, 99, ""),
		fetch(redirect, 0, 0, 7, ""), fetch(redirect, 1, 0, 8, ""),
	}
	page := func(k LoadKey, loads int) Page { return Page{LoadKey: k, Loads: loads} }
	loadOf := func(fs []Fetch) string {
		var out []string
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s/%d/%d", f.RunID, f.Load, f.Hop))
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		name  string
		pages []Page
		want  string
	}{
		{"page kept alive first", []Page{page(redirect, 2), page(pageNew, 1), page(pageAlive, 3)}, "r3/2/0 r3/2/1"},
		{"else the first with loads", []Page{page(pageAlive, 0), page(pageNew, 1), page(redirect, 2)}, "r2/2/0"},
		{"none with loads", []Page{page(pageAlive, 0), page(redirect, 0)}, ""},
	} {
		if got := loadOf(waterfallLoad(c.pages, fetches)); got != c.want {
			t.Errorf("%s: drew %q, want %q", c.name, got, c.want)
		}
	}
}
