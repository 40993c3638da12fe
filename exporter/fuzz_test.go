package exporter

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func FuzzParseFDTarget(f *testing.F) {
	links, _ := filepath.Glob("testdata/fixtures/proc/*/fd/*")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil {
			f.Add(target)
		}
	}
	f.Add("/tmp/slowlab-proxy/proxy-temp-7 (deleted)")
	f.Fuzz(func(t *testing.T, link string) {
		ft := parseFDTarget("/proc/1/fd/3", link)
		if ft.path != "" && !filepath.IsAbs(ft.path) {
			t.Fatalf("parseFDTarget(%q) path %q is not absolute", link, ft.path)
		}
		if ft.socket != 0 && ft.path != "" {
			t.Fatalf("parseFDTarget(%q) is both a socket and a path", link)
		}
	})
}

func FuzzParseStack(f *testing.F) {
	slowlabtest.SeedFiles(f, "stack")
	f.Fuzz(func(t *testing.T, s string) {
		frames, err := parseStack(strings.NewReader(s))
		for _, fn := range frames {
			if err == nil && (fn == "" || strings.Contains(fn, "+")) {
				t.Fatalf("bad frame %q from %q", fn, s)
			}
		}
	})
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"cgroup:slowlab/app", "comm:nginx", "cmdline:.*gunicorn.*", "pid:1", "tree:42", "port:8080", "cgroup:../x", "comm:(",
		`cgroup-re:system\.slice/(?P<unit>[^/]+)\.service`, "cgroup-re:(?P<1x>a)", "cgroup-re:[^/]+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := parseSelector(s)
		if err != nil {
			return
		}
		if sel.kind == "cgroup" && (sel.path == "" || strings.HasPrefix(sel.path, "/") || strings.Contains("/"+sel.path+"/", "/../")) {
			t.Fatalf("parseSelector(%q) accepted cgroup path %q", s, sel.path)
		}
		if g, err := ParseGroupFlag("g=" + s); err == nil && len(g.Selectors) == 0 {
			t.Fatalf("ParseGroupFlag(g=%q) has no selectors", s)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob("testdata/config/*.yml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseConfig(data)
		if err != nil {
			if bytes.Contains([]byte(err.Error()), []byte("\n")) {
				t.Fatalf("multi-line config error: %q", err)
			}
			return
		}
		groups, err := cfg.compile()
		if err != nil {
			t.Fatalf("parsed config does not compile: %v", err)
		}
		seen := map[string]bool{}
		for _, g := range groups {
			if seen[g.name] || len(g.selectors) == 0 || len(g.tempDirs) == 0 {
				t.Fatalf("bad group %+v", g)
			}
			seen[g.name] = true
		}
	})
}
