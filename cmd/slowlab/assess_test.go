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

// TestAssessRefusesBeforeLoad: each bad input is refused with its reason,
// a value given by a flag named by that flag, before any slow client is
// started (no level was run: no requests.csv rows of a level).
func TestAssessRefusesBeforeLoad(t *testing.T) {
	slowlabtest.Timing(t)
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
		{"unreachable", []string{"--fast-url", "http://127.0.0.1:1/fast", "--app", self, "--probes", "idle"}, 3,
			"the stack cannot be assessed: it does not answer: fast URL http://127.0.0.1:1/fast"},
		{"baseline not 2xx", []string{"--fast-url", srv.URL + "/broken", "--app", self, "--probes", "idle"}, 3,
			"status 503, want 2xx"},
		{"large under 1 MiB", []string{"--fast-url", srv.URL + "/fast", "--large-url", srv.URL + "/small", "--app", self, "--probes", "slow-readers"}, 2,
			"102400 bytes, the slow-reader probe wants at least 1 MiB: the kernel's socket buffers absorb"},
		{"stream answers at once", []string{"--fast-url", srv.URL + "/fast", "--stream-url", srv.URL + "/fast", "--app", self, "--probes", "held-streams"}, 2,
			"refused before any load: stream URL " + srv.URL + "/fast?wait=2s: answered whole in"},
		{"stream not 2xx", []string{"--fast-url", srv.URL + "/fast", "--stream-url", srv.URL + "/broken", "--app", self, "--probes", "held-streams"}, 2,
			"/broken?wait=2s: status 503, want 2xx"},
		{"no large URL", []string{"--fast-url", srv.URL + "/fast", "--app", self, "--probes", "slow-readers"}, 2,
			"slowlab assess: --large-url: assess sends these requests; give their URL"},
		{"selector selects nothing", []string{"--fast-url", srv.URL + "/fast", "--app", "comm:^no-such-process-xyz$", "--probes", "idle"}, 2,
			"comm:^no-such-process-xyz$"},
		{"remote", []string{"--fast-url", "http://192.0.2.1/fast", "--app", self, "--probes", "idle"}, 2, "loopback"},
		{"bound on a probe not run", []string{"--stack", "embedded", "--probes", "idle", "--fail-on", "slowloris<4"}, 2,
			"slowlab assess: --fail-on: slowloris<4: probe slowloris is not among the probes run (idle)"},
		{"bound over max clients", []string{"--stack", "embedded", "--probes", "idle", "--max-clients", "8", "--fail-on", "idle<16"}, 2,
			"slowlab assess: --fail-on: idle<16: over max_clients 8"},
		{"max clients 0", []string{"--stack", "embedded", "--max-clients", "0"}, 2, "slowlab assess: --max-clients 0: allowed 1 to 1024"},
		{"window too short", []string{"--stack", "embedded", "--window", "10ms"}, 2, "slowlab assess: --window 10ms: allowed 500ms to 1m"},
		{"proxy without app", []string{"--fast-url", srv.URL + "/fast", "--route", "proxy-buffering-on", "--proxy", self, "--probes", "idle"}, 2, "slowlab assess: --app: no selectors"},
		{"external flags without --fast-url", []string{"--large-url", srv.URL + "/small"}, 2, "give --fast-url too"},
		{"--stack external alone", []string{"--stack", "external"}, 2, "--stack external: give the stack's URLs"},
		{"bad fail-on", []string{"--stack", "embedded", "--fail-on", "idle<0"}, 2, "slowlab assess: --fail-on: "},
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

// TestAssessFailOn: gthread-1x3 degrades with exactly 3 idle connections
// (the search bisects between the powers of two 2 and 4, and confirms
// both sides); a bound of 3 passes (exit 0), one of 4 is broken (exit 1,
// named), with the verdict and the report written either way.
func TestAssessFailOn(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.NothingLeft(t)
	assess := func(bound string) (int, string, string, string) {
		out := t.TempDir()
		code, stdout, stderr := runCmd(t, "assess", "--stack", "embedded", "--no-limits", "--server", "gthread-1x3", "--probes", "idle",
			"--max-clients", "4", "--window", "1s", "--idle-max", "1s", "--max-host-cpu", "0", "--fail-on", bound, "--out", out)
		return code, stdout, stderr, out
	}
	if code, stdout, stderr, _ := assess("idle<3"); code != 0 || strings.Contains(stdout, "fail-on:") {
		t.Errorf("idle<3: exit %d; stdout:\n%s\nstderr:\n%s\nwant exit 0, the bound held", code, stdout, stderr)
	}
	code, stdout, stderr, out := assess("idle<4")
	if code != 1 || !strings.Contains(stderr, "--fail-on: 1 bound(s) broken") || !strings.Contains(stdout, "fail-on: broken: idle<4: degraded with 3 (confirmed, 4 windows)") {
		t.Errorf("idle<4: exit %d; stdout:\n%s\nstderr:\n%s\nwant exit 1 and idle<4 broken at 3", code, stdout, stderr)
	}
	var got struct {
		Probes []struct {
			Probe            string `json:"probe"`
			ClientsToDegrade *int   `json:"clients_to_degrade"`
		} `json:"probes"`
	}
	b, err := os.ReadFile(filepath.Join(out, "assessment.json"))
	if err != nil || json.Unmarshal(b, &got) != nil || len(got.Probes) != 1 || got.Probes[0].ClientsToDegrade == nil || *got.Probes[0].ClientsToDegrade != 3 {
		t.Errorf("assessment.json (%v):\n%s", err, b)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || !strings.Contains(string(page), "assess: gthread-1x3 direct on the embedded stack") || !strings.Contains(stdout, "report: ") {
		t.Errorf("report.html (%v) lacks the assessment's section, or stdout does not name it:\n%s", err, stdout)
	}
}

// TestAssessCombineRefuses: --combine (first or after the other flags)
// wants --out and shards' results directories; anything else is refused by
// name with exit 2.
func TestAssessCombineRefuses(t *testing.T) {
	slowlabtest.Timing(t)
	notShard := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--combine", notShard}, "--combine: --out is required"},
		{[]string{"--combine", "--out", t.TempDir()}, "--combine: no shard directories"},
		{[]string{"--combine", "--out", t.TempDir(), notShard}, "read assessment"},
		{[]string{"--out", t.TempDir(), "--combine", notShard}, "read assessment"},
		{[]string{"--fail-on", "idle<100", "--out", t.TempDir(), "-combine", notShard}, "read assessment"},
	} {
		code, _, stderr := runCmd(t, append([]string{"assess"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestReportDrawsAssessment: `slowlab report DIR` on a directory holding
// an assessment.json alone draws its section, the level figure with it:
// lab/assess adds the section to lab's (lab.RegisterSection), and this
// command imports lab/assess.
func TestReportDrawsAssessment(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../lab/assess/testdata/report/assessment.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "assessment.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "report", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<section id="assess">`, "assess: sync-2 direct on the real stack", "figures/assess-levels.svg"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q; stdout:\n%s", want, stdout)
		}
	}
}
