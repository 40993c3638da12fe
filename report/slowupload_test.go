package report

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestWriteSlowUpload reports a --quick slow-upload run on the embedded
// stack (testdata/slowupload): its section alone, both figures with a
// point per drawable condition, and the reset upload of the timeout
// condition in the table of uploads that did not end ok.
func TestWriteSlowUpload(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{uploadRunsFile, uploadsFile} {
		b, err := os.ReadFile(filepath.Join("testdata", "slowupload", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep := writeOnly(t, dir, "slow-upload")
	// Six conditions have /fast latencies; the timeout condition's only
	// upload was reset, so five have upload times.
	if f := figureByName(t, rep, "upload-fast-p95"); f.Series != 2 || !slices.Equal(f.Points, []int{6, 6}) {
		t.Errorf("upload-fast-p95: %d series, points %v; want p95 and p50 with 6 each", f.Series, f.Points)
	}
	if f := figureByName(t, rep, "upload-times"); f.Series != 2 || !slices.Equal(f.Points, []int{5, 5}) {
		t.Errorf("upload-times: %d series, points %v; want send and read with 5 each", f.Series, f.Points)
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	for _, want := range []string{"direct.sync-2.up1.10m.timeout10s.rep1", ">reset</td>", "unexpected EOF", "proxy-request-buffering-on"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestWriteSlowUploadWithoutUploads: without uploads.csv the section
// still has its figures and says what it left out.
func TestWriteSlowUploadWithoutUploads(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "slowupload", uploadRunsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, uploadRunsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Figures) != 2 || len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, " "), uploadsFile) {
		t.Errorf("figures %d, notes %q: want 2 figures and a note naming %s", len(rep.Figures), rep.Notes, uploadsFile)
	}
}
