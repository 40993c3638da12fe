package recorder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
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
	if !strings.HasPrefix(string(b), "{\n  \"sessions\": [\n    {\n      \"experiment\": \"slow-client\",") {
		t.Errorf("layout:\n%s", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
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
