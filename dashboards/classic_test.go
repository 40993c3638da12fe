package dashboards

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestClassicHistogramsSettingVersions: README.md's advice for keeping the
// classic buckets (which the heatmap needs) beside native histograms names
// the 2.x release from which Prometheus has scrape_classic_histograms, and
// the installed promtool agrees: its `check config` takes the setting from
// that release on and refuses it before (Debian 12 ships 2.42). Prometheus
// 3 takes always_scrape_classic_histograms.
func TestClassicHistogramsSettingVersions(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`\s+`).ReplaceAllString(string(b), " ")
	m := regexp.MustCompile("`scrape_classic_histograms: true` from 2\\.(\\d+) on").FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README.md does not say from which 2.x release `scrape_classic_histograms: true` exists (\"from 2.N on\")")
	}
	since, _ := strconv.Atoi(m[1])
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool not found with CI=true: %v", err)
		}
		t.Skipf("promtool not found (apt-get install prometheus): %v", err)
	}
	out, err := exec.Command(promtool, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool --version: %v\n%s", err, out)
	}
	v := regexp.MustCompile(`version (\d+)\.(\d+)\.`).FindSubmatch(out)
	if v == nil {
		t.Fatalf("promtool --version: no version in %q", out)
	}
	major, _ := strconv.Atoi(string(v[1]))
	minor, _ := strconv.Atoi(string(v[2]))
	setting, want := "scrape_classic_histograms", minor >= since
	if major >= 3 {
		setting, want = "always_scrape_classic_histograms", true
	}
	cfg := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("scrape_configs:\n  - job_name: slowlab-loadgen\n    "+setting+": true\n    static_configs:\n      - targets: [\"127.0.0.1:9101\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(promtool, "check", "config", cfg).CombinedOutput()
	if got := err == nil; got != want {
		t.Errorf("promtool %d.%d check config with %s: accepted %t, README.md says %t (from 2.%d on)\n%s",
			major, minor, setting, got, want, since, strings.TrimSpace(string(out)))
	}
}
