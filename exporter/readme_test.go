package exporter

import (
	"bytes"
	"os"
	"regexp"
	"testing"
)

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestReadmeConfigsLoad: every exporter config README.md shows (a YAML
// block with groups:) loads as --config loads it: the production example,
// the dynamic groups and the reverse proxies' groups.
func TestReadmeConfigsLoad(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range yamlBlock.FindAllSubmatch(b, -1) {
		if !bytes.HasPrefix(m[1], []byte("groups:")) && !bytes.Contains(m[1], []byte("\ngroups:")) {
			continue
		}
		n++
		if _, err := parseConfig(m[1]); err != nil {
			t.Errorf("README.md config %d does not load: %v\n%s", n, err, m[1])
		}
	}
	if n < 3 {
		t.Errorf("%d configs in README.md, want at least 3 (production, dynamic groups, reverse proxies)", n)
	}
}
