package recorder

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/slowlab/slowlab/internal/buildinfo"
	"github.com/slowlab/slowlab/internal/schema"
)

// ManifestFile is the results file saying what wrote a results directory
// and which files it holds, each with its format's version.
const ManifestFile = "manifest.json"

// ManifestVersion is the version of manifest.json's format this slowlab
// writes.
const ManifestVersion = "1.0"

// Manifest is manifest.json.
type Manifest struct {
	SchemaVersion string `json:"schema_version"`
	// WrittenBy is "slowlab", Version the version of the slowlab that
	// wrote the directory last (internal/buildinfo).
	WrittenBy string `json:"written_by"`
	Version   string `json:"version"`
	// Command is the slowlab command that wrote it ("run", "reproduce",
	// "assess", "assess --combine", "loadgen", "merge"), Experiment
	// what its results are, as environment.json and the report name them
	// (the experiment; "assess"; "loadgen" for the load generator's).
	Command    string `json:"command"`
	Experiment string `json:"experiment"`
	// Files are the results files at the top of the directory, by name.
	Files []ManifestEntry `json:"files"`
}

// ManifestEntry is one results file.
type ManifestEntry struct {
	Name string `json:"name"`
	// Format is "json", "yaml" or "csv". A JSON or YAML file has the
	// SchemaVersion it says (1.0 when it says none); a CSV file none: its
	// header is its schema, its columns checked by name when read.
	Format        string `json:"format"`
	SchemaVersion string `json:"schema_version,omitempty"`
}

// manifestFormats are the results files' formats, by name ending.
var manifestFormats = map[string]string{".json": "json", ".yaml": "yaml", ".csv": "csv"}

// WriteManifest writes dir/manifest.json for command and experiment
// (Manifest), listing the results files at the top of dir as they are
// now (os.ReadDir's order: by name), replaced atomically.
func WriteManifest(dir, command, experiment string) error {
	m := Manifest{SchemaVersion: ManifestVersion, WrittenBy: "slowlab", Version: buildinfo.Version(), Command: command,
		Experiment: experiment, Files: []ManifestEntry{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", ManifestFile, err)
	}
	for _, e := range entries {
		name := e.Name()
		format := manifestFormats[filepath.Ext(name)]
		if !e.Type().IsRegular() || format == "" || name == ManifestFile || strings.HasPrefix(name, ".") {
			continue
		}
		entry := ManifestEntry{Name: name, Format: format}
		if format != "csv" {
			entry.SchemaVersion = fileVersion(filepath.Join(dir, name), format)
		}
		m.Files = append(m.Files, entry)
	}
	return replaceJSON(dir, ManifestFile, m)
}

// replaceJSON replaces dir/name (ReplaceFile), creating dir if needed,
// with v as indented JSON and a final newline; the error names the file.
func replaceJSON(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = ReplaceFile(dir, name, func(w io.Writer) error {
			_, err := w.Write(append(b, '\n'))
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// fileVersion is the schema_version the JSON or YAML file at path says,
// schema.Before when it says none; "" when it cannot be read or parsed.
func fileVersion(path, format string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var v string
	if format == "json" {
		if !json.Valid(b) {
			return ""
		}
		v, err = schema.Of(b)
	} else {
		var head struct {
			V string `yaml:"schema_version"`
		}
		err = yaml.Unmarshal(b, &head)
		v = head.V
	}
	if _, perr := schema.Parse(v); err != nil || perr != nil {
		return ""
	}
	if v == "" {
		return schema.Before
	}
	return v
}

// ReadManifest reads dir/manifest.json (internal/schema's rule: strictly
// at its version or an older one). A missing file is an error wrapping
// fs.ErrNotExist.
func ReadManifest(dir string) (Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Manifest{}, fmt.Errorf("read manifest: %w", err)
	}
	var m Manifest
	if err := schema.DecodeJSON(path, b, ManifestVersion, &m); err != nil {
		return Manifest{}, err
	}
	if m.WrittenBy == "" || m.Files == nil {
		return Manifest{}, fmt.Errorf("%s: written_by %q, files %v: want both", path, m.WrittenBy, m.Files)
	}
	return m, nil
}
