package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/buildinfo"
	"github.com/slowlab/slowlab/internal/schema"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/loadgendir"
	"github.com/slowlab/slowlab/recorder"
)

// edit replaces the first from in dir's file name with to, returning
// the file as it was.
func edit(t *testing.T, dir, name, from, to string) (was []byte) {
	t.Helper()
	path := filepath.Join(dir, name)
	was, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b := strings.Replace(string(was), from, to, 1)
	if b == string(was) {
		t.Fatalf("%s has no %q:\n%s", name, from, was)
	}
	if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	return was
}

// sections are the ids of report.html's sections, the environment's aside.
func sections(t *testing.T, dir string) []string {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range regexp.MustCompile(`<section id="([^"]+)">`).FindAllStringSubmatch(string(page), -1) {
		if m[1] != "environment" {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// checkManifest checks dir's manifest.json: written by this slowlab's
// command for experiment, listing files (name:format:version) exactly.
func checkManifest(t *testing.T, dir, command, experiment string, files ...string) {
	t.Helper()
	m, err := recorder.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range m.Files {
		got = append(got, f.Name+":"+f.Format+":"+f.SchemaVersion)
	}
	if m.WrittenBy != "slowlab" || m.Version != buildinfo.Version() || m.Command != command || m.Experiment != experiment || !slices.Equal(got, files) {
		t.Errorf("%s: manifest %+v\nfiles %v, want %s %s %v", dir, m, got, command, experiment, files)
	}
}

// `slowlab loadgen --out` against `slowlab target`, and two shards of it
// merged: each directory has its manifest, and `slowlab report` draws
// it with the load generator's section alone (not slow-client's, whose
// runs.csv a merged directory has too), titled for the load generator.
// Edited by the test: loadgen.json and manifest.json of a newer minor
// version, with fields this slowlab does not know, are read with a note
// each; of a newer major version, refused by name.
func TestLoadgenDirectoryReport(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs slowlab target as a process")
	_, listen := startTarget(t, nil)
	target := "http://" + listen + "/fast"
	dir := filepath.Join(t.TempDir(), "one")
	if code, _, errs := runCmd(t, "loadgen", "--target", target, "--rate", "20", "--duration", "1s", "--slow", "1", "--read-rate", "1m",
		"--out", dir, "--run-id", "lg"); code != 0 {
		t.Fatalf("loadgen: exit %d: %s", code, errs)
	}
	checkManifest(t, dir, "loadgen", loadgendir.Name, "large-responses.csv:csv:", "loadgen.json:json:1.0", "requests.csv:csv:")
	code, stdout, errs := runCmd(t, "report", dir)
	if code != 0 || !strings.Contains(stdout, "  loadgen-latency: Request latency over the run (2 series)") && !strings.Contains(stdout, "  loadgen-latency: Request latency over the run (1 series)") {
		t.Fatalf("report: exit %d: %s%s", code, stdout, errs)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if ids := sections(t, dir); !slices.Equal(ids, []string{loadgendir.Name}) || !strings.Contains(string(page), "<title>slowlab report: slowlab loadgen: "+target) ||
		!strings.Contains(string(page), "<td>requests</td><td>20: ok 20, failed 0, not sent 0</td>") {
		t.Errorf("report of %s: sections %v; page:\n%s", dir, ids, page)
	}

	var notes bytes.Buffer
	defer schema.SetNotes(&notes)()
	const v10 = `"schema_version": "1.0",`
	record := edit(t, dir, loadgendir.File, v10, `"schema_version": "1.3", "region": "eu",`)
	manifest := edit(t, dir, recorder.ManifestFile, v10, `"schema_version": "1.2", "host": "lab-1",`)
	if code, _, errs := runCmd(t, "report", dir); code != 0 {
		t.Errorf("report of newer minor versions: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		filepath.Join(dir, loadgendir.File) + ": schema 1.3 is newer than this slowlab's 1.0; fields it does not know were ignored\n",
		filepath.Join(dir, recorder.ManifestFile) + ": schema 1.2 is newer than this slowlab's 1.0; fields it does not know were ignored\n",
	} {
		if strings.Count(notes.String(), want) != 1 {
			t.Errorf("notes:\n%s\nwant once: %s", notes.String(), want)
		}
	}
	for _, name := range []string{loadgendir.File, recorder.ManifestFile} {
		os.WriteFile(filepath.Join(dir, loadgendir.File), record, 0o644)
		os.WriteFile(filepath.Join(dir, recorder.ManifestFile), manifest, 0o644)
		edit(t, dir, name, v10, `"schema_version": "2.0",`)
		want := "slowlab report: " + filepath.Join(dir, name) + ": schema 2.0: this slowlab (" + buildinfo.Version() + ") reads 1.x; use a newer slowlab\n"
		if code, _, errs := runCmd(t, "report", dir); code != 1 || errs != want {
			t.Errorf("%s at 2.0: exit %d: %q, want %q", name, code, errs, want)
		}
	}

	start := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	shards := []string{filepath.Join(t.TempDir(), "s0"), filepath.Join(t.TempDir(), "s1")}
	var wg sync.WaitGroup
	for i, out := range shards {
		wg.Go(func() {
			if code, _, errs := runCmd(t, "loadgen", "--target", target, "--rate", "20", "--duration", "1s", "--shard", fmt.Sprintf("%d/2", i),
				"--start-at", start, "--out", out, "--run-id", "lg"); code != 0 {
				t.Errorf("shard %d: exit %d: %s", i, code, errs)
			}
		})
	}
	wg.Wait()
	merged := filepath.Join(t.TempDir(), "merged")
	if code, _, errs := runCmd(t, append([]string{"merge", "--out", merged}, shards...)...); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errs)
	}
	checkManifest(t, merged, "merge", loadgendir.Name, "loadgen.json:json:1.0", "requests.csv:csv:", "runs.csv:csv:")
	code, stdout, errs = runCmd(t, "report", merged)
	if code != 0 || !strings.Contains(stdout, "  loadgen-latency: ") || strings.Contains(stdout, "fast-p95") {
		t.Fatalf("report of the merged directory: exit %d: %s%s", code, stdout, errs)
	}
	page, _ = os.ReadFile(filepath.Join(merged, "report.html"))
	if ids := sections(t, merged); !slices.Equal(ids, []string{loadgendir.Name}) || !strings.Contains(string(page), "merged from 2 shards") ||
		!strings.Contains(string(page), "<title>slowlab report: slowlab loadgen: "+target) {
		t.Errorf("merged report: sections %v; page:\n%s", ids, page)
	}
}

// A session of an experiment on the embedded stack writes scenario.yaml
// and environment.json at schema_version 1.0 and a manifest.json listing
// them and its CSV files. Edited by the test: at a newer minor version
// with a field this slowlab does not know, `slowlab report` reads
// environment.json and manifest.json, and scenario.yaml loads, each with
// a note (the resume of the directory is refused, naming the field it
// cannot keep); at a newer major version each is refused by name.
func TestSessionFilesVersioned(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs an experiment on the embedded stack")
	dir := filepath.Join(t.TempDir(), "results")
	slowlab(t, nil, "reproduce", "long-poll", "--stack", "embedded", "--seconds", "2", "--wait", "1s", "--condition", "sync-2:1:2",
		"--out", dir, "--max-host-cpu", "0")
	checkManifest(t, dir, "reproduce", "long-poll", "environment.json:json:1.0", "groups.csv:csv:", "longpoll-runs.csv:csv:",
		"probes.csv:csv:", "resource-samples.csv:csv:", "scenario.yaml:yaml:1.0")
	scenario := filepath.Join(dir, lab.ScenarioFile)
	if b, _ := os.ReadFile(scenario); !strings.HasPrefix(string(b), "schema_version: \"1.0\"\nexperiment: long-poll\n") {
		t.Errorf("scenario.yaml:\n%s", b)
	}

	var notes bytes.Buffer
	defer schema.SetNotes(&notes)()
	env := edit(t, dir, recorder.EnvironmentFile, `"schema_version": "1.0",`, `"schema_version": "1.1", "hosts": ["lab-1"],`)
	manifest := edit(t, dir, recorder.ManifestFile, `"schema_version": "1.0",`, `"schema_version": "1.1", "signed": false,`)
	sc := edit(t, dir, lab.ScenarioFile, "schema_version: \"1.0\"\n", "schema_version: \"1.1\"\nwarmup: 2s\n")
	if code, _, errs := runCmd(t, "report", dir); code != 0 {
		t.Errorf("report: exit %d: %s", code, errs)
	}
	if _, err := lab.LoadScenario(scenario, nil); err != nil {
		t.Errorf("scenario.yaml at 1.1: %v", err)
	}
	for _, name := range []string{recorder.EnvironmentFile, recorder.ManifestFile, lab.ScenarioFile} {
		want := filepath.Join(dir, name) + ": schema 1.1 is newer than this slowlab's 1.0; fields it does not know were ignored\n"
		if strings.Count(notes.String(), want) != 1 {
			t.Errorf("notes:\n%s\nwant once: %s", notes.String(), want)
		}
	}
	if code, _, errs := runCmd(t, "run", scenario, "--resume", dir, "--max-host-cpu", "0"); code == 0 || !strings.Contains(errs, "it was run with other settings: warmup: 2s -> (none)") {
		t.Errorf("resume of a 1.1 scenario.yaml: exit %d: %s", code, errs)
	}

	restore := func() {
		for name, b := range map[string][]byte{recorder.EnvironmentFile: env, recorder.ManifestFile: manifest, lab.ScenarioFile: sc} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	major := "2.0: this slowlab (" + buildinfo.Version() + ") reads 1.x; use a newer slowlab\n"
	restore()
	edit(t, dir, recorder.EnvironmentFile, `"schema_version": "1.0",`, `"schema_version": "2.0",`)
	if code, _, errs := runCmd(t, "report", dir); code != 1 || errs != "slowlab report: "+filepath.Join(dir, recorder.EnvironmentFile)+": schema "+major {
		t.Errorf("environment.json at 2.0: exit %d: %q", code, errs)
	}
	restore()
	edit(t, dir, recorder.ManifestFile, `"schema_version": "1.0",`, `"schema_version": "2.0",`)
	if code, _, errs := runCmd(t, "report", dir); code != 1 || errs != "slowlab report: "+filepath.Join(dir, recorder.ManifestFile)+": schema "+major {
		t.Errorf("manifest.json at 2.0: exit %d: %q", code, errs)
	}
	restore()
	edit(t, dir, lab.ScenarioFile, "schema_version: \"1.0\"", "schema_version: \"2.0\"")
	if code, _, errs := runCmd(t, "run", scenario); code != 2 || errs != "slowlab run: "+scenario+": schema "+major {
		t.Errorf("scenario.yaml at 2.0: exit %d: %q", code, errs)
	}
}
