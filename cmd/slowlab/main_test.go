package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
)

// TestMain lets the test binary stand in for the slowlab binary: the lab
// starts `slowlab target` and `slowlab proxy` as children of os.Executable,
// which under `go test` is this binary, so it runs the real command when
// asked to.
func TestMain(m *testing.M) {
	if os.Getenv("SLOWLAB_TEST_AS_MAIN") == "1" {
		main()
		return
	}
	os.Setenv("SLOWLAB_TEST_AS_MAIN", "1")
	os.Exit(m.Run())
}

// runCmd runs one command line in process.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the one line on stderr
	}{
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/fast", "--rate", "0"}, "slowlab loadgen: --rate 0: want more than 0 and at most 1e6 requests/s"},
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/fast", "--rate", "-5"}, "slowlab loadgen: --rate -5: want more than 0 and at most 1e6 requests/s"},
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/fast", "--rate", "fast"}, `slowlab loadgen: invalid value "fast" for flag -rate: parse error (see --help)`},
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/fast", "--duration", "0s"}, "slowlab loadgen: --duration 0s: must be more than 0"},
		{[]string{"loadgen", "--target", "ftp://127.0.0.1/x"}, `slowlab loadgen: --target "ftp://127.0.0.1/x": scheme "ftp" not supported (want http://HOST:PORT/PATH)`},
		{[]string{"loadgen", "--target", "http://%zz"}, `slowlab loadgen: --target "http://%zz": not a URL: parse "http://%zz": invalid URL escape "%zz"`},
		{[]string{"loadgen", "--target", "http://10.1.2.3:80/fast"}, `slowlab loadgen: --target "http://10.1.2.3:80/fast": 10.1.2.3 is not a loopback address (127.0.0.0/8, ::1, localhost); pass --allow-remote to load another host`},
		{[]string{"loadgen"}, "slowlab loadgen: --target is required, e.g. --target http://127.0.0.1:8000/fast"},
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/", "--read-rate", "fast"}, `slowlab loadgen: --read-rate "fast": want bytes as N, Nk, Nm or Ng (KiB, MiB, GiB)`},
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/", "--slow", "-1"}, "slowlab loadgen: --slow -1: allowed 0 to 10000"},
		{[]string{"loadgen", "--bogus"}, "slowlab loadgen: flag provided but not defined: -bogus (see --help)"},
		{[]string{"reproduce", "slow-client", "--reps", "0"}, "slowlab reproduce: --reps 0: allowed 1 to 1000"},
		{[]string{"reproduce", "fast-client"}, `slowlab reproduce: unknown experiment "fast-client": allowed slow-client, long-poll, latency-gap`},
		{[]string{"reproduce"}, "slowlab reproduce: which experiment? allowed: slow-client, long-poll, latency-gap"},
		{[]string{"reproduce", "slow-client", "--stack", "docker"}, `slowlab reproduce: --stack "docker": allowed auto, embedded, gunicorn-nginx`},
		{[]string{"reproduce", "slow-client", "--quick", "extra"}, `slowlab reproduce: unexpected argument "extra" (see --help)`},
		{[]string{"target", "--model", "prefork"}, `slowlab target: --model "prefork": allowed sync, gthread, async`},
		{[]string{"target", "--workers", "0"}, "slowlab target: --workers 0: must be at least 1"},
		{[]string{"target", "--model", "gthread", "--threads", "-1"}, "slowlab target: --threads -1: must be at least 1"},
		{[]string{"target", "--large-size", "huge"}, `slowlab target: --large-size "huge": want bytes as N, Nk, Nm or Ng (KiB, MiB, GiB)`},
		{[]string{"target", "--listen", "nonsense"}, `slowlab target: --listen "nonsense": listen tcp: address nonsense: missing port in address`},
		{[]string{"proxy", "--buffering", "maybe", "--upstream", "127.0.0.1:1"}, `slowlab proxy: --buffering "maybe": allowed on, off`},
		{[]string{"run"}, "slowlab run: which scenario file? e.g. slowlab run examples/own-workers.yaml"},
		{[]string{"run", "testdata/none.yaml"}, "slowlab run: open testdata/none.yaml: no such file or directory"},
		{[]string{"run", "../../lab/testdata/scenarios/invalid-rate.yml"}, "slowlab run: ../../lab/testdata/scenarios/invalid-rate.yml: fast.rate 0: allowed more than 0 up to 10000 requests/s"},
		{[]string{"reproduce", "slow-client", "--max-host-cpu", "150"}, "slowlab reproduce: --max-host-cpu 150: allowed 0 (off) to 100 percent"},
		{[]string{"reproduce", "latency-gap", "--delay", "soon"}, `slowlab reproduce: --delay "soon": want durations from 0 to 5s, comma-separated, e.g. 0,25ms`},
		{[]string{"reproduce", "latency-gap", "--sizes", "0"}, `slowlab reproduce: --sizes "0": want sizes from 1 byte to 64m, comma-separated, e.g. 1k,100k`},
		{[]string{"reproduce", "long-poll", "--condition", "gthread-2x16:20"}, `slowlab reproduce: invalid value "gthread-2x16:20" for flag -condition: "gthread-2x16:20": want SERVER:HOLD:PROBES, e.g. gthread-2x16:20:8 (see --help)`},
		{[]string{"reproduce", "long-poll", "--condition", "gthread-2x16:20:0"}, `slowlab reproduce: invalid value "gthread-2x16:20:0" for flag -condition: "gthread-2x16:20:0": probes "0": want 1 to 10000 (see --help)`},
		{[]string{"reproduce", "long-poll", "--accept-when-free"}, "slowlab reproduce: --accept-when-free: only the embedded stack has it (use --stack embedded); Gunicorn always accepts"},
		{[]string{"reproduce", "slow-client", "--condition", "sync-2:1:1"}, "slowlab reproduce: --condition and --accept-when-free: long-poll only"},
		{[]string{"target", "--model", "sync", "--accept-when-free"}, "slowlab target: --accept policy: only the gthread model has one (model sync)"},
		{[]string{"frobnicate"}, `slowlab: unknown command "frobnicate" (allowed: `},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
				t.Errorf("stderr:\n%s\nwant one line starting %q", stderr, tc.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, cmd := range []string{"loadgen", "target", "reproduce", "proxy"} {
		code, stdout, stderr := runCmd(t, cmd, "--help")
		if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage: slowlab "+cmd) {
			t.Errorf("%s --help: exit %d, stderr %q, stdout %q", cmd, code, stderr, stdout)
		}
	}
	code, stdout, _ := runCmd(t, "--help")
	if code != 0 || !strings.Contains(stdout, "reproduce") {
		t.Errorf("slowlab --help: exit %d: %s", code, stdout)
	}
}

// The printed preset, run as a scenario, is the same experiment.
func TestPrintScenarioRunsTheSameMatrix(t *testing.T) {
	code, stdout, stderr := runCmd(t, "reproduce", "slow-client", "--print-scenario", "--reps", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	path := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(path, []byte(stdout), 0o644)
	sc, err := lab.LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	want := lab.DefaultSlowClient()
	want.Reps = 2
	if !reflect.DeepEqual(sc.SlowClient(), want) {
		t.Errorf("printed scenario runs %+v, want %+v", sc.SlowClient(), want)
	}
	for _, ex := range []string{"../../examples/own-workers.yaml", "../../examples/published-slow-client.yaml"} {
		if _, err := lab.LoadScenario(ex); err != nil {
			t.Errorf("example: %v", err)
		}
	}
}
