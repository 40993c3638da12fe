package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startExporter runs `slowlab exporter ARGS...` in-process until the test
// ends and returns the address from its ready line.
func startExporter(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"exporter"}, args...), pw, &stderr)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		go io.Copy(io.Discard, pr)
		if c := <-code; c != 0 {
			t.Errorf("exporter exited %d: %s", c, stderr.String())
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (stderr: %s)", err, stderr.String())
	}
	m := regexp.MustCompile(`^ready listen=(127\.0\.0\.1:\d+)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("ready line %q, want \"ready listen=IP:PORT\"", line)
	}
	go io.Copy(io.Discard, pr) // nothing else may be printed, but never block the exporter
	return m[1]
}

func get(t *testing.T, url string, user, pass string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestExporterServes(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	addr := startExporter(t,
		"--group", "self=pid:"+pid,
		"--group", "tests=tree:"+pid+",comm:nothing-matches",
		"--web.listen-address", "127.0.0.1:0",
		"--path.cgroupfs", "../../exporter/testdata/fixtures/cgroup-v2",
		"--no-collector.sockets", "--collector.tempfiles=false", "--collector.process.wchan-top", "3",
		"--log.level", "error")
	status, body := get(t, "http://"+addr+"/metrics", "", "")
	if status != 200 {
		t.Fatalf("GET /metrics: %d", status)
	}
	for _, want := range []string{
		`slowlab_process_resident_memory_bytes{group="self"}`,
		`slowlab_process_resident_memory_bytes{group="tests"}`,
		`slowlab_exporter_collector_success{collector="process"} 1`,
		`slowlab_exporter_collector_success{collector="cgroup"} 1`,
		"go_goroutines", // the Go runtime collector rides along
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, absent := range []string{`collector="sockets"`, `collector="tempfiles"`} {
		if strings.Contains(body, absent) {
			t.Errorf("/metrics has %s although the collector was disabled", absent)
		}
	}
	if status, body := get(t, "http://"+addr+"/", "", ""); status != 200 || !strings.Contains(body, "slowlab exporter") {
		t.Errorf("landing page: %d", status)
	}
}

// TestExporterBasicAuth checks the exporter-toolkit web config is applied.
func TestExporterBasicAuth(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "web.yml")
	// bcrypt of "slowlab" (cost 4, test only).
	web := "basic_auth_users:\n  prom: $2a$04$IrvQnIiBS32Qt8Js5/p76u5FX1714n7tKxGHERXLVAVsna9ezCw8.\n"
	if err := os.WriteFile(cfg, []byte(web), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startExporter(t, "--group", "self=pid:"+strconv.Itoa(os.Getpid()),
		"--web.listen-address", "127.0.0.1:0", "--web.config.file", cfg, "--log.level", "error")
	if status, _ := get(t, "http://"+addr+"/metrics", "", ""); status != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", status)
	}
	if status, body := get(t, "http://"+addr+"/metrics", "prom", "slowlab"); status != 200 || !strings.Contains(body, "slowlab_processes") {
		t.Errorf("with credentials: %d", status)
	}
}

func TestExporterUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{}, `no groups: give at least one`},
		{[]string{"--group", "app"}, `--group: group "app": want NAME=SELECTOR[,SELECTOR...]`},
		{[]string{"--group", "app=process:1"}, `unknown kind "process"`},
		{[]string{"--group", "app=pid:1", "--group", "app=pid:2"}, `group "app": defined twice`},
		{[]string{"--group", "app=pid:1", "--no-collector.disk"}, `flag provided but not defined: -no-collector.disk`},
		{[]string{"--group", "app=pid:1", "--log.level", "loud"}, `invalid value "loud" for flag -log.level: want debug, info, warn or error`},
		{[]string{"--group", "app=pid:1", "--log.format", "xml"}, `invalid value "xml" for flag -log.format: want logfmt or json`},
		{[]string{"--group", "app=pid:1", "--collector.process.wchan-top", "-1"}, `want 0 or more`},
		{[]string{"--group", "app=pid:1", "--collector.process.wchan-top", "many"}, `want a whole number`},
		{[]string{"--group", "app=pid:1", "--collector.errorlog.file", "proxy=/var/log/nginx/error.log"}, `--collector.errorlog.file "proxy=/var/log/nginx/error.log": want GROUP=FILE with GROUP a configured group`},
		{[]string{"--group", "app=pid:1", "--collector.errorlog.file", "app=relative.log"}, `error_logs`},
		{[]string{"--group", "app=pid:1", "--max-dynamic-groups", "0"}, `--max-dynamic-groups 0: want at least 1`},
		{[]string{"--group", `units=cgroup-re:system\.slice/[^/]+`}, `no named capture such as (?P<unit>[^/]+)`},
		{[]string{"--group", "app=pid:1", "--collector.tempfiles.dir", "relative/dir"}, `temp_dirs: "relative/dir": must be an absolute path`},
		{[]string{"--group", "app=pid:1", "--web.config.file", "/nonexistent/web.yml"}, `--web.config.file /nonexistent/web.yml:`},
		{[]string{"--config", "../../exporter/testdata/config/invalid-two-cgroups.yml"}, `at most one cgroup selector per group`},
		{[]string{"--group", "app=pid:1", "extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"exporter"}, tt.args...), &stdout, &stderr)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
			t.Errorf("exporter %v: exit %d, stderr %q; want exit 2 and one line containing %q", tt.args, code, stderr.String(), tt.want)
		}
		// main.go's FlagSet prints the full usage to stdout on an undefined
		// flag (flag calls Usage); every other mistake prints nothing there.
		if stdout.Len() > 0 && !strings.Contains(tt.want, "flag provided but not defined") {
			t.Errorf("exporter %v printed to stdout: %q", tt.args, stdout.String())
		}
	}
}

func TestExporterHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"exporter", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"-collector.cgroup", "-no-collector.sockets", "-web.listen-address", "-path.procfs", "tree:N"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("--help lacks %s", want)
		}
	}
}
