package recorder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/buildinfo"
	"github.com/slowlab/slowlab/internal/schema"
)

// The manifest names slowlab, its version, the command and experiment,
// and the results files at the top of the directory with the versions
// they say: a JSON or YAML file without one is 1.0, a CSV has none. It
// leaves out itself, subdirectories, hidden files and other files.
func TestWriteManifest(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"assessment.json": `{"schema_version": "1.2", "probes": []}`,
		"loadgen.json":    `{"run_id": "r"}`,
		"scenario.yaml":   "schema_version: \"1.0\"\nexperiment: assess\n",
		"requests.csv":    "run_id\n",
		"report.html":     "<html>",
		".runs.csv.tmp-1": "",
		"broken.json":     "{",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "figures.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(dir, "assess", "assess"); err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Manifest{SchemaVersion: "1.0", WrittenBy: "slowlab", Version: buildinfo.Version(), Command: "assess", Experiment: "assess",
		Files: []ManifestEntry{{"assessment.json", "json", "1.2"}, {"broken.json", "json", ""}, {"loadgen.json", "json", "1.0"},
			{"requests.csv", "csv", ""}, {"scenario.yaml", "yaml", "1.0"}}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("manifest\n got %+v\nwant %+v", m, want)
	}
	// Written again, it lists itself no more than before.
	if err := WriteManifest(dir, "assess", "assess"); err != nil {
		t.Fatal(err)
	}
	if again, _ := ReadManifest(dir); !reflect.DeepEqual(again, want) {
		t.Errorf("written again: %+v", again)
	}
	if _, err := ReadManifest(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want fs.ErrNotExist", err)
	}
}

// ReadManifest: an unknown field is refused at 1.0, ignored with a note at
// 1.1; 2.0 is refused by name; a manifest without written_by or files is
// refused.
func TestReadManifestVersions(t *testing.T) {
	dir := t.TempDir()
	if err := WriteManifest(dir, "loadgen", "loadgen"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ManifestFile)
	written, _ := os.ReadFile(path)
	var notes strings.Builder
	defer schema.SetNotes(&notes)()
	for _, c := range []struct{ from, to, err string }{
		{`"schema_version": "1.0",`, `"schema_version": "1.0", "host": "a",`, `json: unknown field "host"`},
		{`"schema_version": "1.0",`, `"schema_version": "1.1", "host": "a",`, ""},
		{`"schema_version": "1.0",`, `"schema_version": "2.0",`, path + ": schema 2.0: this slowlab (" + buildinfo.Version() + ") reads 1.x; use a newer slowlab"},
		{`"written_by": "slowlab",`, `"written_by": "",`, `written_by "", files []: want both`},
		{`"files": []`, `"files": null`, `written_by "slowlab", files []: want both`},
	} {
		b := strings.Replace(string(written), c.from, c.to, 1)
		if b == string(written) {
			t.Fatalf("no %s in\n%s", c.from, written)
		}
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ReadManifest(dir)
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %+v, %v; want %q", c.to, m, err, c.err)
		}
	}
	if want := path + ": schema 1.1 is newer than this slowlab's 1.0; fields it does not know were ignored\n"; notes.String() != want {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
}
