package recorder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/schema"
)

func session(experiment string, started time.Time) Environment {
	return Environment{Experiment: experiment, Stack: "embedded", StartedAt: started, Kernel: "6.1.0", Arch: "amd64",
		CPUs: 4, Go: "go1.26.0", SlowlabSHA256: "ab12", CgroupVersion: "v2", Limits: "none", Swap: "not limited",
		Versions: map[string]string{"python3": "Python 3.11.2"}}
}

// Appending keeps every earlier session, in order, and the file is
// readable by all like the results files.
func TestAppendEnvironmentKeepsSessions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	first := session("slow-client", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
	first.Net = &NetSettings{Namespace: "host", TCPRmem: "4096 131072 33554432", TCPWmem: "4096 16384 4194304",
		TCPNotsentLowat: "4294967295", RmemMax: "4194304", WmemMax: "", TCPModerateRcvbuf: "1", LoMTU: 65536}
	second := session("slow-client", time.Date(2026, 1, 3, 9, 0, 0, 500, time.UTC))
	second.Versions = nil
	for _, s := range []Environment{first, second} {
		if err := AppendEnvironment(dir, s); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadEnvironment(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Environment{first, second}; !reflect.DeepEqual(got, want) {
		t.Errorf("sessions\n got %+v\nwant %+v", got, want)
	}
	path := filepath.Join(dir, EnvironmentFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("environment.json has mode %v, want 0644", st.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), "{\n  \"schema_version\": \"1.0\",\n  \"sessions\": [\n    {\n      \"experiment\": \"slow-client\",") {
		t.Errorf("layout:\n%s", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	// The net settings are one object under "net" with the sysctls' own
	// names; a session without them has no "net" key at all.
	wantNet := `"net": {
        "namespace": "host",
        "tcp_rmem": "4096 131072 33554432",
        "tcp_wmem": "4096 16384 4194304",
        "tcp_notsent_lowat": "4294967295",
        "rmem_max": "4194304",
        "wmem_max": "",
        "tcp_moderate_rcvbuf": "1",
        "lo_mtu": 65536
      }`
	if n := strings.Count(string(b), `"net"`); n != 1 || !strings.Contains(string(b), wantNet) {
		t.Errorf("want one net object, the first session's, spelled\n%s\ngot:\n%s", wantNet, b)
	}
}

// The layout before sessions, a single object as lab wrote it, reads as
// one session, and appending to it keeps that session.
func TestReadEnvironmentOldFormat(t *testing.T) {
	dir := t.TempDir()
	old := `{
  "experiment": "latency-gap",
  "stack": "embedded",
  "started_at": "2025-06-01T10:00:00.123456789Z",
  "kernel": "6.1.0-old",
  "arch": "arm64",
  "cpus": 2,
  "go": "go1.24.0",
  "slowlab_sha256": "cd34",
  "cgroup_version": "v1",
  "limits": "none: the embedded stack ran without cgroup limits",
  "versions": {"nginx": "nginx version: nginx/1.22.1"},
  "unknown_field": true
}
`
	if err := os.WriteFile(filepath.Join(dir, EnvironmentFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEnvironment(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Environment{Experiment: "latency-gap", Stack: "embedded",
		StartedAt: time.Date(2025, 6, 1, 10, 0, 0, 123456789, time.UTC), Kernel: "6.1.0-old", Arch: "arm64", CPUs: 2,
		Go: "go1.24.0", SlowlabSHA256: "cd34", CgroupVersion: "v1", Limits: "none: the embedded stack ran without cgroup limits",
		Versions: map[string]string{"nginx": "nginx version: nginx/1.22.1"}}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("sessions %+v, want one: %+v", got, want)
	}
	next := session("latency-gap", time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC))
	if err := AppendEnvironment(dir, next); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadEnvironment(dir); err != nil || len(got) != 2 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("after appending: %+v, %v; want the old session first", got, err)
	}
}

func TestReadEnvironmentMissing(t *testing.T) {
	if _, err := ReadEnvironment(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v, want fs.ErrNotExist", err)
	}
}

// A file that does not parse is an error naming it, and appending leaves
// it as it is rather than dropping what it held.
func TestEnvironmentCorrupt(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"truncated", `{"sessions": [{"experiment": "slow-client"`, "unexpected end of JSON input"},
		{"wrong type", `{"cpus": "four"}`, "cpus"},
		{"wrong type in a session", `{"sessions": [{"cpus": "four"}]}`, "sessions: json: cannot unmarshal"},
		{"no sessions", `{"sessions": []}`, "sessions: the list is empty"},
		{"null", `null`, "want a JSON object"},
		{"array", `[{"experiment": "slow-client"}]`, "cannot unmarshal array"},
		{"empty", ``, "unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, EnvironmentFile)
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadEnvironment(dir)
			if err == nil || !strings.HasPrefix(err.Error(), "read "+path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadEnvironment error %v, want it to name %s and say %q", err, path, tc.want)
			}
			err = AppendEnvironment(dir, session("slow-client", time.Now()))
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("AppendEnvironment error %v, want it to name %s", err, path)
			}
			if b, _ := os.ReadFile(path); string(b) != tc.data {
				t.Errorf("AppendEnvironment changed the corrupt file to %q", b)
			}
		})
	}
}

func TestTCPMem(t *testing.T) {
	net := NetSettings{TCPRmem: "4096 131072 33554432", TCPWmem: "4096\t16384\t4194304"}
	if got, err := net.TCPMem("tcp_rmem"); err != nil || got != (TCPMem{4096, 131072, 33554432}) {
		t.Errorf("tcp_rmem = %+v, %v", got, err)
	}
	if got, err := net.TCPMem("tcp_wmem"); err != nil || got != (TCPMem{4096, 16384, 4194304}) {
		t.Errorf("tcp_wmem = %+v, %v", got, err)
	}
	if _, err := net.TCPMem("rmem_max"); err == nil || err.Error() != `net setting "rmem_max": want tcp_rmem or tcp_wmem` {
		t.Errorf("TCPMem(rmem_max) error %v", err)
	}
	for _, tc := range []struct {
		text string
		want TCPMem
		err  string // the whole error message; "" when it parses
	}{
		{"4096 16384 4194304", TCPMem{4096, 16384, 4194304}, ""},
		{"4096\t16384\t4194304\n", TCPMem{4096, 16384, 4194304}, ""},
		{"  1   1   1  ", TCPMem{1, 1, 1}, ""},
		{"0 0 0", TCPMem{}, ""},
		{"8192 4096 1024", TCPMem{8192, 4096, 1024}, ""}, // the kernel does not order them either
		{"9223372036854775807 1 1", TCPMem{1<<63 - 1, 1, 1}, ""},
		{"", TCPMem{}, `tcp_wmem "": not recorded`},
		{" \t\n", TCPMem{}, `tcp_wmem " \t\n": not recorded`},
		{"4096 16384", TCPMem{}, `tcp_wmem "4096 16384": want three sizes "min default max", got 2 fields`},
		{"4096 16384 4194304 1", TCPMem{}, `tcp_wmem "4096 16384 4194304 1": want three sizes "min default max", got 4 fields`},
		{"4096 x 4194304", TCPMem{}, `tcp_wmem "4096 x 4194304": default "x": want a byte count: invalid syntax`},
		{"4096 16384 4M", TCPMem{}, `tcp_wmem "4096 16384 4M": max "4M": want a byte count: invalid syntax`},
		{"-1 16384 4194304", TCPMem{}, `tcp_wmem "-1 16384 4194304": min "-1": want a byte count: negative`},
		{"4096 16384 9223372036854775808", TCPMem{},
			`tcp_wmem "4096 16384 9223372036854775808": max "9223372036854775808": want a byte count: value out of range`},
		{"4096 16384.5 4194304", TCPMem{}, `tcp_wmem "4096 16384.5 4194304": default "16384.5": want a byte count: invalid syntax`},
		{"0x1000 16384 4194304", TCPMem{}, `tcp_wmem "0x1000 16384 4194304": min "0x1000": want a byte count: invalid syntax`},
	} {
		got, err := NetSettings{TCPWmem: tc.text}.TCPMem("tcp_wmem")
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: got %+v, %v; want %+v", tc.text, got, err, tc.want)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%q: error\n got: %v\nwant: %s", tc.text, err, tc.err)
		}
	}
}

// FuzzTCPMem: whatever the text, TCPMem does not panic; an error names the
// key and quotes the text; what parses is three non-negative sizes that
// parse back the same when printed and do not depend on how the text was
// spaced.
//
//	go test ./recorder -run '^$' -fuzz FuzzTCPMem -fuzztime 30s
func FuzzTCPMem(f *testing.F) {
	for _, s := range []string{"4096\t16384\t4194304\n", "4096 131072 33554432", "0 0 0", "", "4096 16384",
		"4096 x 4194304", "-1 1 1", "1 1 9223372036854775808", "+1 1 1", "1\u00a01 1"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, rmem bool) {
		key, n := "tcp_wmem", NetSettings{TCPWmem: s}
		if rmem {
			key, n = "tcp_rmem", NetSettings{TCPRmem: s}
		}
		got, err := n.TCPMem(key)
		if err != nil {
			if prefix := key + " " + strconv.Quote(s) + ": "; !strings.HasPrefix(err.Error(), prefix) {
				t.Fatalf("error %q does not start with %q", err, prefix)
			}
			return
		}
		if got.Min < 0 || got.Default < 0 || got.Max < 0 {
			t.Fatalf("%q parsed to %+v", s, got)
		}
		printed := strconv.FormatInt(got.Min, 10) + " " + strconv.FormatInt(got.Default, 10) + " " + strconv.FormatInt(got.Max, 10)
		for _, again := range []string{printed, strings.Join(strings.Fields(s), " ")} {
			if back, err := (NetSettings{TCPWmem: again, TCPRmem: again}).TCPMem(key); err != nil || back != got {
				t.Fatalf("%q parsed to %+v, but %q to %+v, %v", s, got, again, back, err)
			}
		}
	})
}

// environment.json written by this build says schema_version 1.0; one of
// a newer minor version reads with a note (its unknown fields ignored, as
// at every version) but gets no session added, which would drop what
// this slowlab does not know; a newer major version is refused by name.
func TestEnvironmentVersions(t *testing.T) {
	dir := t.TempDir()
	s := session("slow-client", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
	if err := AppendEnvironment(dir, s); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, EnvironmentFile)
	written, _ := os.ReadFile(path)
	var notes strings.Builder
	defer schema.SetNotes(&notes)()
	edit := func(to string) {
		t.Helper()
		b := strings.Replace(string(written), `"schema_version": "1.0",`, to, 1)
		if b == string(written) {
			t.Fatalf("no schema_version in\n%s", written)
		}
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit(`"schema_version": "1.4", "hosts": ["a"],`)
	if got, err := ReadEnvironment(dir); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], s) {
		t.Errorf("1.4: %+v, %v", got, err)
	}
	if want := path + ": schema 1.4 is newer than this slowlab's 1.0; fields it does not know were ignored\n"; notes.String() != want {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
	err := AppendEnvironment(dir, s)
	if err == nil || !strings.Contains(err.Error(), "schema 1.4 is newer than this slowlab's 1.0: what it does not know would be lost") {
		t.Errorf("appending to 1.4: %v", err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"hosts"`) {
		t.Error("the refused append rewrote the file")
	}
	edit(`"schema_version": "2.0",`)
	for _, err := range []error{second(ReadEnvironment(dir)), AppendEnvironment(dir, s)} {
		if err == nil || !strings.Contains(err.Error(), path+": schema 2.0: this slowlab (") || !strings.Contains(err.Error(), ") reads 1.x; use a newer slowlab") {
			t.Errorf("2.0: %v", err)
		}
	}
	edit(`"schema_version": 1,`)
	if _, err := ReadEnvironment(dir); err == nil || !strings.Contains(err.Error(), `schema_version 1: want a string such as "1.0"`) {
		t.Errorf("a number: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }
