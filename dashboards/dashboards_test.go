package dashboards

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// committed reads the dashboard JSON files as committed beside this file.
func committed(t *testing.T) map[string][]byte {
	t.Helper()
	out := make(map[string][]byte)
	for _, d := range All() {
		b, err := os.ReadFile(d.File)
		if err != nil {
			t.Fatalf("%v (run go generate ./dashboards)", err)
		}
		out[d.File] = b
	}
	return out
}

// TestCommittedJSONUpToDate fails when a committed dashboard differs from
// what the Go code generates, like `go generate && git diff --exit-code`.
func TestCommittedJSONUpToDate(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range committed(t) {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output (run go generate ./dashboards and commit it): %s", name, firstDiff(want, got))
		}
	}
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range All() {
		want = append(want, d.File)
	}
	slices.Sort(want)
	if !slices.Equal(files, want) {
		t.Errorf("dashboard JSON files %v, want exactly the generated %v", files, want)
	}
}

func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < min(len(al), len(bl)); i++ {
		if al[i] != bl[i] {
			return "line " + strconv.Itoa(i+1) + ":\n  committed: " + al[i] + "\n  generated: " + bl[i]
		}
	}
	return "line " + strconv.Itoa(min(len(al), len(bl))+1) + " (one file is longer)"
}

// TestUIDsAndTitles pins what links, provisioning and bookmarks rely on.
func TestUIDsAndTitles(t *testing.T) {
	want := map[string][2]string{
		"slowlab-experiment.json": {ExperimentUID, "slowlab / Experiment"},
		"slowlab-production.json": {ProductionUID, "slowlab / Production"},
	}
	for name, b := range committed(t) {
		var d struct{ UID, Title string }
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		if w := want[name]; d.UID != w[0] || d.Title != w[1] {
			t.Errorf("%s: uid %q title %q, want %q %q", name, d.UID, d.Title, w[0], w[1])
		}
	}
}

// TestProvisioning checks the provisioning files: one Prometheus data
// source, and a file provider whose path holds the dashboards.
func TestProvisioning(t *testing.T) {
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, Type, Access, URL, UID string
			JSONData                     struct {
				ExemplarTraceIDDestinations []struct {
					Name          string `yaml:"name"`
					DatasourceUID string `yaml:"datasourceUid"`
				} `yaml:"exemplarTraceIdDestinations"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, "provisioning/datasource.yml", &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 2 {
		t.Fatalf("datasource.yml: apiVersion %d, %d data sources; want 1 and 2 (Prometheus, traces)", ds.APIVersion, len(ds.Datasources))
	}
	prom, traces := ds.Datasources[0], ds.Datasources[1]
	if prom.Type != "prometheus" || prom.URL == "" || prom.UID == "" || prom.Access != "proxy" {
		t.Errorf("datasource.yml: %+v, want a prometheus data source with a uid, a URL and access proxy", prom)
	}
	if traces.Type != "jaeger" || traces.URL == "" || traces.UID == "" || traces.Access != "proxy" {
		t.Errorf("datasource.yml: %+v, want a jaeger data source with a uid, a URL and access proxy", traces)
	}
	// The exemplars' trace_id label (loadgen's) links to the traces' uid.
	if d := prom.JSONData.ExemplarTraceIDDestinations; len(d) != 1 || d[0].Name != "trace_id" || d[0].DatasourceUID != traces.UID {
		t.Errorf("datasource.yml: exemplar destinations %+v, want trace_id -> %q", d, traces.UID)
	}

	var dp struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Type, Folder string
			Options            struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "provisioning/dashboards.yml", &dp)
	if dp.APIVersion != 1 || len(dp.Providers) != 1 {
		t.Fatalf("dashboards.yml: apiVersion %d, %d providers; want 1 and 1", dp.APIVersion, len(dp.Providers))
	}
	if p := dp.Providers[0]; p.Type != "file" || p.Options.Path == "" || p.Folder == "" {
		t.Errorf("dashboards.yml: %+v, want a file provider with a folder and options.path", p)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestLatencyPanelsAskForExemplars: every panel that plots the loadgen's
// request latency asks Prometheus for its exemplars, which carry the
// trace IDs datasource.yml links to the tracing data source.
func TestLatencyPanelsAskForExemplars(t *testing.T) {
	for _, d := range All() {
		b, err := os.ReadFile(d.File)
		if err != nil {
			t.Fatal(err)
		}
		var dash struct {
			Panels []struct {
				Title   string `json:"title"`
				Type    string `json:"type"`
				Targets []struct {
					Expr     string `json:"expr"`
					Exemplar bool   `json:"exemplar"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(b, &dash); err != nil {
			t.Fatalf("%s: %v", d.File, err)
		}
		latency := 0
		for _, p := range dash.Panels {
			reads, asks := false, false
			for _, q := range p.Targets {
				reads = reads || strings.Contains(q.Expr, "histogram_quantile") && strings.Contains(q.Expr, "slowlab_loadgen_request_duration_seconds")
				asks = asks || q.Exemplar
			}
			if reads && p.Type == "timeseries" {
				latency++
				if !asks {
					t.Errorf("%s: panel %q plots request latency but asks for no exemplars", d.File, p.Title)
				}
			}
		}
		if d.File == "slowlab-experiment.json" && latency < 2 {
			t.Errorf("%s: %d latency panels seen, want at least 2", d.File, latency)
		}
	}
}
