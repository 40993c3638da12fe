package exporter

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestLoadConfigInvalid loads every testdata/config/invalid-*.yml and
// expects exactly the error its first line ("# want: ...") names.
func TestLoadConfigInvalid(t *testing.T) {
	files, err := filepath.Glob("testdata/config/invalid-*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid configs: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := wantLine(t, file)
			_, err := LoadConfig(file)
			if err == nil {
				t.Fatalf("LoadConfig(%s) = nil error, want %q", file, want)
			}
			if got := strings.TrimPrefix(err.Error(), "config "+file+": "); got != want {
				t.Errorf("LoadConfig(%s):\n got: %s\nwant: %s", file, got, want)
			}
		})
	}
}

func wantLine(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	want, ok := strings.CutPrefix(sc.Text(), "# want: ")
	if !ok {
		t.Fatalf("%s: first line must be \"# want: ERROR\"", file)
	}
	return want
}

func TestLoadConfigValid(t *testing.T) {
	cfg, err := LoadConfig("testdata/config/valid.yml")
	if err != nil {
		t.Fatal(err)
	}
	groups, err := cfg.compile()
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		name, cgroup string
		kinds        []string
		ports        []int
		tempDirs     []string
		errorLogs    []string
	}
	var got []summary
	for _, g := range groups {
		s := summary{name: g.name, cgroup: g.cgroup, ports: g.ports, tempDirs: g.tempDirs, errorLogs: g.errorLogs}
		for _, sel := range g.selectors {
			s.kinds = append(s.kinds, sel.kind)
		}
		got = append(got, s)
	}
	want := []summary{
		{name: "app", cgroup: "slowlab/app", kinds: []string{"cgroup", "tree"}, tempDirs: []string{"/tmp/slowlab-proxy"}},
		{name: "proxy", kinds: []string{"comm", "port"}, ports: []int{8080}, tempDirs: []string{"/var/lib/nginx/proxy"},
			errorLogs: []string{"/var/log/nginx/error.log"}},
		{name: "loadgen", kinds: []string{"cmdline", "pid"}, tempDirs: []string{"/tmp/slowlab-proxy"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compiled groups:\n got %+v\nwant %+v", got, want)
	}
}

func TestDefaultTempDirsApplied(t *testing.T) {
	groups, err := Config{Groups: []Group{{Name: "proxy", Selectors: []string{"comm:nginx"}}}}.compile()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := groups[0].tempDirs, DefaultTempDirs(); !reflect.DeepEqual(got, want) {
		t.Errorf("temp dirs %v, want defaults %v", got, want)
	}
	if want := filepath.Join(os.TempDir(), "slowlab-proxy"); groups[0].tempDirs[len(groups[0].tempDirs)-1] != want {
		t.Errorf("embedded proxy temp dir %q, want %q last", groups[0].tempDirs, want)
	}
}

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in      string
		kind    string
		path    string
		n       int
		matches []string // for regex kinds
		misses  []string
		err     string
	}{
		{in: "cgroup:slowlab/app", kind: "cgroup", path: "slowlab/app"},
		{in: "cgroup:/slowlab//app/", kind: "cgroup", path: "slowlab/app"},
		{in: "cgroup:system.slice/nginx.service", kind: "cgroup", path: "system.slice/nginx.service"},
		{in: "comm:nginx", kind: "comm", matches: []string{"nginx"}, misses: []string{"nginx-helper", "xnginx"}},
		{in: "comm:gunicorn|python3", kind: "comm", matches: []string{"gunicorn", "python3"}, misses: []string{"gunicorn2"}},
		{in: "cmdline:.*gunicorn.*app:app", kind: "cmdline", matches: []string{"/usr/bin/python3 /usr/bin/gunicorn -w 2 app:app"}, misses: []string{"gunicorn app:other"}},
		{in: "pid:123", kind: "pid", n: 123},
		{in: "tree:1", kind: "tree", n: 1},
		{in: "port:8080", kind: "port", n: 8080},
		{in: "pid:0", err: `selector "pid:0": want an integer from 1 to 4194303`},
		{in: "pid:abc", err: `selector "pid:abc": want an integer from 1 to 4194303`},
		{in: "tree:99999999", err: `selector "tree:99999999": want an integer from 1 to 4194303`},
		{in: "port:0", err: `selector "port:0": want an integer from 1 to 65535`},
		{in: "cgroup:a/../../b", err: `selector "cgroup:a/../../b": cgroup path must not contain ".."`},
		{in: "cgroup://", err: `selector "cgroup://": cgroup path must name a cgroup below the root`},
		{in: "comm:[", err: "selector \"comm:[\": bad regex: error parsing regexp: missing closing ]: `[`"},
		{in: "nothing", err: `selector "nothing": want KIND:VALUE with KIND one of cgroup, cgroup-re, comm, cmdline, pid, tree, port`},
		{in: "uid:0", err: `selector "uid:0": unknown kind "uid" (allowed: cgroup, cgroup-re, comm, cmdline, pid, tree, port)`},
		{in: "comm:", err: `selector "comm:": empty value`},
	}
	for _, tt := range tests {
		s, err := parseSelector(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("parseSelector(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseSelector(%q): %v", tt.in, err)
			continue
		}
		if s.kind != tt.kind || s.path != tt.path || s.n != tt.n {
			t.Errorf("parseSelector(%q) = {%s %q %d}, want {%s %q %d}", tt.in, s.kind, s.path, s.n, tt.kind, tt.path, tt.n)
		}
		for _, m := range tt.matches {
			if !s.re.MatchString(m) {
				t.Errorf("parseSelector(%q) does not match %q", tt.in, m)
			}
		}
		for _, m := range tt.misses {
			if s.re.MatchString(m) {
				t.Errorf("parseSelector(%q) matches %q (regexes match the whole string)", tt.in, m)
			}
		}
	}
}

func TestParseGroupFlag(t *testing.T) {
	tests := []struct {
		in   string
		want Group
		err  string
	}{
		{in: "app=pid:123", want: Group{Name: "app", Selectors: []string{"pid:123"}}},
		{in: "app=cgroup:slowlab/app,tree:42", want: Group{Name: "app", Selectors: []string{"cgroup:slowlab/app", "tree:42"}}},
		{in: "proxy=comm:nginx,port:8080", want: Group{Name: "proxy", Selectors: []string{"comm:nginx", "port:8080"}}},
		{in: "app", err: `group "app": want NAME=SELECTOR[,SELECTOR...]`},
		{in: "=pid:1", err: `group "=pid:1": want NAME=SELECTOR[,SELECTOR...]`},
		{in: "app=", err: `group "app=": want NAME=SELECTOR[,SELECTOR...]`},
		{in: "app=pid:1,", err: `group "app": selector "": want KIND:VALUE with KIND one of cgroup, cgroup-re, comm, cmdline, pid, tree, port`},
		// Commas split selectors: a regex with a comma belongs in the config file.
		{in: "app=comm:a{1,2}", err: `group "app": selector "2}": want KIND:VALUE with KIND one of cgroup, cgroup-re, comm, cmdline, pid, tree, port`},
	}
	for _, tt := range tests {
		g, err := ParseGroupFlag(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseGroupFlag(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(g, tt.want) {
			t.Errorf("ParseGroupFlag(%q) = %+v, %v; want %+v", tt.in, g, err, tt.want)
		}
	}
}

func TestNewRejectsUnknownCollector(t *testing.T) {
	cfg := Config{Groups: []Group{{Name: "app", Selectors: []string{"pid:1"}}}}
	_, err := New(cfg, Options{ProcFS: "testdata/fixtures/proc", Collectors: map[string]bool{"disk": true}}, nil)
	want := `unknown collector "disk" (allowed: cgroup, errorlog, process, sockets, tempfiles)`
	if err == nil || err.Error() != want {
		t.Errorf("New with unknown collector: %v, want %q", err, want)
	}
}
