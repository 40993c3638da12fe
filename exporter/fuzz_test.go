package exporter

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

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

// FuzzNewFDLink: what the fd walk keeps of a link text agrees with
// parseFDTarget, the one parser the collectors apply to it.
func FuzzNewFDLink(f *testing.F) {
	links, _ := filepath.Glob("testdata/fixtures/proc/*/fd/*")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil {
			f.Add(target)
		}
	}
	f.Add("socket:[18446744073709551615]")
	f.Add("socket:[0]")
	f.Fuzz(func(t *testing.T, link string) {
		l := newFDLink("/proc/1/fd", 3, []byte(link))
		ft := parseFDTarget("/proc/1/fd/3", link)
		if l.socket != ft.socket && ft.socket < 1<<62 {
			t.Fatalf("newFDLink(%q) socket %d, parseFDTarget %d", link, l.socket, ft.socket)
		}
		if ft.path != "" && (l.target != link || l.path != "/proc/1/fd/3") {
			t.Fatalf("newFDLink(%q) = %+v, want the link kept (parseFDTarget path %q)", link, l, ft.path)
		}
		if l.num != 3 {
			t.Fatalf("newFDLink(%q) num %d", link, l.num)
		}
	})
}

// FuzzParseDirents: the in-place getdents64 parser never reads past its
// buffer and, on the kernel's own records (the seeds: real fd
// directories), finds exactly the numeric names unix.ParseDirent finds.
func FuzzParseDirents(f *testing.F) {
	for _, dir := range append([]string{"/proc/self/fd"}, mustGlob(f, "testdata/fixtures/proc/*/fd")...) {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			f.Fatal(err)
		}
		buf := make([]byte, 4096)
		n, err := unix.Getdents(fd, buf)
		unix.Close(fd)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(buf[:n])
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		var got []int
		err := parseDirents(buf, func(n int) { got = append(got, n) })
		if err != nil {
			return
		}
		_, _, names := unix.ParseDirent(buf, -1, nil)
		var want []int
		for _, name := range names {
			if n, ok := atoiNUL([]byte(name)); ok && n < 1<<31 {
				want = append(want, n)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("parseDirents found %v, unix.ParseDirent %v", got, want)
		}
	})
}

func mustGlob(f *testing.F, pattern string) []string {
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		f.Fatalf("glob %s: %v, %d matches", pattern, err, len(m))
	}
	return m
}

func FuzzParseSyscall(f *testing.F) {
	slowlabtest.SeedFiles(f, "*.syscall")
	f.Fuzz(func(t *testing.T, s string) {
		nr, fd, ok := parseSyscall(strings.NewReader(s))
		if ok && (nr < 0 || fd < 0) {
			t.Fatalf("parseSyscall(%q) = %d, %d, true: want no negative number", s, nr, fd)
		}
		if !ok && (nr != 0 || fd != 0) {
			t.Fatalf("parseSyscall(%q) = %d, %d, false: want zeros", s, nr, fd)
		}
	})
}
