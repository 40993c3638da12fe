package assess

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/buildinfo"
	"github.com/slowlab/slowlab/internal/schema"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// assessmentFixture is testdata/assessment.json, read whole.
func assessmentFixture(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", File))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An assessment written is read back the same; the fixture's values
// arrive where its fields say.
func TestAssessmentRoundTrip(t *testing.T) {
	slowlabtest.Timing(t)
	a, err := parseAssessment(File, assessmentFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	sr := a.Verdicts[0]
	if a.Server != "sync-2" || len(a.Verdicts) != 3 || sr.ClientsToDegrade == nil || *sr.ClientsToDegrade != 2 ||
		sr.Absorbs == nil || sr.Absorbs.PredictedBytes != 2637824 || len(sr.Levels) != 2 || sr.LastLevel().Clients != 2 ||
		a.Verdicts[1].ClientsToDegrade != nil || *a.Verdicts[1].Levels[0].HeldMaxS != 1.1 ||
		*a.Verdicts[2].Levels[0].FastBackS != 27.6 || a.Verdicts[2].Levels[0].FastTimeoutMS != 1004.6 || sr.Levels[0].FastTimeoutMS != 0 {
		t.Fatalf("parsed %+v", a)
	}
	dir := t.TempDir()
	if err := WriteAssessment(dir, a); err != nil {
		t.Fatal(err)
	}
	back, err := ReadAssessment(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, a) {
		t.Errorf("read back %+v\nwant %+v", back, a)
	}
	if _, err := ReadAssessment(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// Each corruption of the fixture is refused, naming what is wrong.
func TestAssessmentRefusesCorrupt(t *testing.T) {
	slowlabtest.Timing(t)
	good := string(assessmentFixture(t))
	for _, c := range []struct{ name, from, to, want string }{
		{"unknown field", `"took_s": 41.2,`, `"took_s": 41.2, "verdict": "fine",`, `unknown field "verdict"`},
		{"no probes", `"probes": [`, `"probe_list": [`, `unknown field "probe_list"`},
		{"nameless probe", `"probe": "idle"`, `"probe": ""`, `probes[1] (""): probe: empty`},
		{"threshold over tried", `"clients_to_degrade": 2,`, `"clients_to_degrade": 3,`, "clients_to_degrade 3: want 1 up to clients_tried 2"},
		{"levels out of order", `"start_s": 4.0,`, `"start_s": 0.5,`, "levels[1]: started at 0.5 s, before levels[0] at 1.2 s"},
		{"a level over tried", `{"clients": 2, "clients_in_place": true, "start_s": 4.0`, `{"clients": 3, "clients_in_place": true, "start_s": 4.0`, "levels[1]: 3 clients, over clients_tried 2"},
		{"more outcomes than requests", `"fast_sent": 25, "fast_ok": 25, "fast_failed": 0, "fast_p50_ms": 2.1`, `"fast_sent": 25, "fast_ok": 25, "fast_failed": 3, "fast_p50_ms": 2.1`, "/fast 25 ok and 3 failed of 25 sent"},
		{"negative timeout", `"fast_timeout_ms": 1004.6,`, `"fast_timeout_ms": -1,`, "levels[0]: fast_timeout_ms -1: want 0 (not recorded) or more"},
		{"an unknown path verdict", `"verdict": "holds"`, `"verdict": "maybe"`, `path_absorbs: verdict "maybe"`},
		{"fits with another verdict", `"fits": false, "predicted_most_bytes"`, `"fits": true, "predicted_most_bytes"`, "path_absorbs: fits true with verdict holds"},
		{"the most under the prediction", `"predicted_most_bytes": 2637824`, `"predicted_most_bytes": 1`, "predicted_most_bytes 1 under predicted_bytes 2637824"},
		{"a negative margin", `"margin_under": 0.25`, `"margin_under": -0.25`, "path_absorbs: margin_under -0.25"},
		{"a string for a number", `"clients_tried": 4,`, `"clients_tried": "4",`, "clients_tried"},
		{"two values", "\n}\n", "\n}\n{}\n", "more than one JSON value"},
	} {
		bad := strings.Replace(good, c.from, c.to, 1)
		if bad == good {
			t.Fatalf("%s: the fixture has no %q", c.name, c.from)
		}
		_, err := parseAssessment(File, []byte(bad))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, err := parseAssessment(File, []byte(`{"stack": "real"}`)); err == nil || !strings.Contains(err.Error(), "probes: missing") {
		t.Errorf("no probes: %v", err)
	}
}

// assessment.json is written at SchemaVersion, its first field; the
// fixture, without one (an older slowlab's), reads as 1.0. Written by this
// build then edited: an unknown field is refused at 1.0, ignored with a
// note at 1.3, and 2.0 is refused by name.
func TestAssessmentVersions(t *testing.T) {
	a, err := parseAssessment(File, assessmentFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteAssessment(dir, a); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, File)
	written, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(written), "{\n  \"schema_version\": \"1.0\",\n  \"stack\": \"real\",") {
		t.Fatalf("written:\n%.200s", written)
	}
	var notes bytes.Buffer
	defer schema.SetNotes(&notes)()
	edit := func(from, to string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.Replace(string(written), from, to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit(`"schema_version": "1.0",`, `"schema_version": "1.0", "verdicts_by_shard": {},`)
	if _, err := ReadAssessment(dir); err == nil || !strings.Contains(err.Error(), `unknown field "verdicts_by_shard"`) {
		t.Errorf("an unknown field at 1.0: %v", err)
	}
	edit(`"schema_version": "1.0",`, `"schema_version": "1.3", "verdicts_by_shard": {},`)
	if back, err := ReadAssessment(dir); err != nil || !reflect.DeepEqual(back, a) {
		t.Errorf("1.3 with an unknown field: %v; read %+v", err, back)
	}
	if want := path + ": schema 1.3 is newer than this slowlab's 1.0; fields it does not know were ignored\n"; notes.String() != want {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
	edit(`"schema_version": "1.0",`, `"schema_version": "2.0",`)
	want := path + ": schema 2.0: this slowlab (" + buildinfo.Version() + ") reads 1.x; use a newer slowlab"
	if _, err := ReadAssessment(dir); err == nil || err.Error() != want {
		t.Errorf("2.0: %v, want %q", err, want)
	}
}

// FuzzParseAssessment: any input is parsed or refused, never a panic,
// and what parses writes and reads back the same.
func FuzzParseAssessment(f *testing.F) {
	slowlabtest.Timing(f)
	f.Add(assessmentFixture(f))
	f.Add([]byte(`{"probes": []}`))
	f.Add([]byte(`{"schema_version": "1.0", "probes": []}`))
	f.Add([]byte(`{"schema_version": "1.2", "probes": [], "new": 1}`))
	defer schema.SetNotes(io.Discard)()
	f.Add([]byte(`{"probes": [{"probe": "idle", "clients_to_degrade": 1, "clients_tried": 1, "levels": [{"clients": 1}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseAssessment(File, b)
		if err != nil {
			return
		}
		dir := t.TempDir()
		if err := WriteAssessment(dir, a); err != nil {
			t.Fatal(err)
		}
		back, err := ReadAssessment(dir)
		if err != nil {
			t.Fatalf("wrote what does not read back: %v", err)
		}
		if !reflect.DeepEqual(back, a) {
			t.Fatalf("read back %+v, want %+v", back, a)
		}
	})
}
