package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestAssessRefusesBeforeLoad: each bad input is refused with its reason
// before any slow client is started (no level was run: no requests.csv
// rows of a level).
func TestAssessRefusesBeforeLoad(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }
	mux := http.NewServeMux()
	mux.HandleFunc("/fast", ok)
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 100<<10)) })
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	self := "pid:" + strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unreachable", []string{"--fast-url", "http://127.0.0.1:1/fast", "--app", self, "--probes", "idle"}, 1,
			"refused before any load: fast URL http://127.0.0.1:1/fast"},
		{"baseline not 2xx", []string{"--fast-url", srv.URL + "/broken", "--app", self, "--probes", "idle"}, 1,
			"status 503, want 2xx"},
		{"large under 1 MiB", []string{"--fast-url", srv.URL + "/fast", "--large-url", srv.URL + "/small", "--app", self, "--probes", "slow-readers"}, 1,
			"102400 bytes, the slow-reader probe wants at least 1 MiB: the kernel's socket buffers absorb"},
		{"no large URL", []string{"--fast-url", srv.URL + "/fast", "--app", self, "--probes", "slow-readers"}, 1,
			"external.large_url: assess sends these requests; give their URL"},
		{"selector selects nothing", []string{"--fast-url", srv.URL + "/fast", "--app", "comm:^no-such-process-xyz$", "--probes", "idle"}, 1,
			"comm:^no-such-process-xyz$"},
		{"remote", []string{"--fast-url", "http://192.0.2.1/fast", "--app", self, "--probes", "idle"}, 1, "loopback"},
		{"proxy without app", []string{"--fast-url", srv.URL + "/fast", "--route", "proxy-buffering-on", "--proxy", self, "--probes", "idle"}, 2, "external.groups.app: no selectors"},
		{"external flags without --fast-url", []string{"--large-url", srv.URL + "/small"}, 2, "give --fast-url too"},
		{"--stack external alone", []string{"--stack", "external"}, 2, "--stack external: give the stack's URLs"},
		{"bad fail-on", []string{"--stack", "embedded", "--fail-on", "idle<0"}, 2, "fail_on"},
		{"bad probe", []string{"--probes", "slow"}, 2, "probes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			code, _, stderr := runCmd(t, append([]string{"assess", "--out", out}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, tc.code, tc.want)
			}
			if b, err := os.ReadFile(filepath.Join(out, "requests.csv")); err == nil && strings.Count(string(b), "\n") > 1 {
				t.Errorf("requests.csv has rows: load was sent\n%s", b)
			}
		})
	}
}

// TestAssessFailOn: a threshold under its bound exits 1 naming it, with
// the verdicts printed and written, and report.html drawn with them.
func TestAssessFailOn(t *testing.T) {
	slowlabtest.NothingLeft(t)
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "assess", "--stack", "embedded", "--no-limits", "--server", "sync-2", "--probes", "idle",
		"--max-clients", "2", "--window", "1s", "--idle-max", "1s", "--fail-on", "idle<4", "--out", out)
	if code != 1 || !strings.Contains(stderr, "--fail-on: 1 bound(s) broken") || !strings.Contains(stdout, "fail-on: idle<4: degraded with 2") {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s\nwant exit 1 and idle<4 broken", code, stdout, stderr)
	}
	var got struct {
		Probes []struct {
			Probe            string `json:"probe"`
			ClientsToDegrade *int   `json:"clients_to_degrade"`
		} `json:"probes"`
	}
	b, err := os.ReadFile(filepath.Join(out, "assessment.json"))
	if err != nil || json.Unmarshal(b, &got) != nil || len(got.Probes) != 1 || got.Probes[0].ClientsToDegrade == nil || *got.Probes[0].ClientsToDegrade != 2 {
		t.Errorf("assessment.json (%v):\n%s", err, b)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || !strings.Contains(string(page), "assess: sync-2 direct on the embedded stack") || !strings.Contains(stdout, "report: ") {
		t.Errorf("report.html (%v) lacks the assessment's section, or stdout does not name it:\n%s", err, stdout)
	}
}
