package main

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/latencygap"
	"github.com/slowlab/slowlab/lab/longpoll"
	"github.com/slowlab/slowlab/lab/slowclient"
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
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/", "--read-rate", "512"}, "slowlab loadgen: --read-rate 512: allowed 1k to 1g bytes/s"},
		{[]string{"loadgen", "--target", "http://127.0.0.1:1/", "--read-size", "17m"}, "slowlab loadgen: --read-size 17m: allowed 1 byte to 16m"},
		{[]string{"loadgen", "--bogus"}, "slowlab loadgen: flag provided but not defined: -bogus (see --help)"},
		{[]string{"reproduce", "slow-client", "--reps", "0"}, "slowlab reproduce: --reps 0: allowed 1 to 1000"},
		{[]string{"reproduce", "fast-client"}, `slowlab reproduce: unknown experiment "fast-client": allowed slow-client, long-poll, latency-gap, buffer-sweep`},
		{[]string{"reproduce"}, "slowlab reproduce: which experiment? allowed: slow-client, long-poll, latency-gap, buffer-sweep"},
		{[]string{"reproduce", "slow-client", "--stack", "docker"}, `slowlab reproduce: --stack "docker": allowed auto, embedded, real, gunicorn-nginx, external, APP+PROXY`},
		{[]string{"reproduce", "slow-client", "--stack", "external"}, "slowlab reproduce: stack external: no external: block; give the deployment's URLs (fast_url, large_url, longpoll_url), route, server and groups"},
		{[]string{"reproduce", "slow-client", "--stack", "embedded", "--allow-remote"}, "slowlab reproduce: --allow-remote: only for stack: external (the embedded stack serves on loopback)"},
		{[]string{"reproduce", "slow-client", "--reps", "x"}, `slowlab reproduce: invalid value "x" for flag -reps: "x": want a whole number (see --help)`},
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
		{[]string{"reproduce", "latency-gap", "--delay", "soon"}, `slowlab reproduce: invalid value "soon" for flag -delay: "soon": want durations, comma-separated, e.g. 0,25ms (see --help)`},
		{[]string{"reproduce", "latency-gap", "--delay", "0,2s"}, `slowlab reproduce: delays[1] 2s: allowed 0 to 1s each way`},
		{[]string{"reproduce", "latency-gap", "--sizes", "x"}, `slowlab reproduce: invalid value "x" for flag -sizes: "x": want sizes, comma-separated, e.g. 1k,100k (see --help)`},
		{[]string{"reproduce", "latency-gap", "--sizes", "1k,65m"}, `slowlab reproduce: sizes[1] 68157440: allowed 0 to 67108864 bytes`},
		{[]string{"reproduce", "long-poll", "--condition", "gthread-2x16:20"}, `slowlab reproduce: invalid value "gthread-2x16:20" for flag -condition: "gthread-2x16:20": want SERVER:HOLD:PROBES, e.g. gthread-2x16:20:8 (see --help)`},
		{[]string{"reproduce", "long-poll", "--condition", "gthread-2x16:20:0"}, `slowlab reproduce: invalid value "gthread-2x16:20:0" for flag -condition: "gthread-2x16:20:0": probes "0": want 1 to 10000 (see --help)`},
		{[]string{"reproduce", "long-poll", "--accept-when-free"}, "slowlab reproduce: accept_when_free: only the embedded stack has it (use --stack embedded); Gunicorn always accepts"},
		{[]string{"reproduce", "long-poll", "--seconds", "-1"}, "slowlab reproduce: seconds -1s: allowed more than 0 up to 24h"},
		{[]string{"reproduce", "slow-client", "--condition", "sync-2:1:1"}, "slowlab reproduce: flag provided but not defined: -condition (see --help)"},
		{[]string{"reproduce", "latency-gap", "--stack", "embedded"}, "slowlab reproduce: --stack: latency-gap does not take it; buffer-sweep, h2-slow-client, idle-connections, long-poll, slow-client, slow-upload, sse, stalled-reader, temp-cliff, temp-disk-full, websocket do"},
		{[]string{"run", "../../lab/testdata/scenarios/valid-latency-gap.yml", "--stack", "real"}, "slowlab run: --stack: latency-gap does not take it; buffer-sweep, h2-slow-client, idle-connections, long-poll, slow-client, slow-upload, sse, stalled-reader, temp-cliff, temp-disk-full, websocket do"},
		{[]string{"target", "--model", "sync", "--accept-when-free"}, "slowlab target: --accept policy: only the gthread model has one (model sync)"},
		{[]string{"reproduce", "slow-client", "--prometheus-targets", "/no-such-dir-of-slowlab/targets.json", "--print-scenario"},
			"slowlab reproduce: --prometheus-targets /no-such-dir-of-slowlab/targets.json: no directory /no-such-dir-of-slowlab to write it in"},
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

// Every experiment's printed scenario, with the flags given, reads back
// as the configuration those flags make.
func TestPrintScenario(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want func() lab.Config
	}{
		{[]string{"slow-client", "--reps", "2", "--stack", "embedded"}, func() lab.Config {
			c := slowclient.Published()
			c.Reps, c.StackSpec.Stack = 2, "embedded"
			return c
		}},
		{[]string{"long-poll", "--quick", "--seconds", "40", "--condition", "gthread-2x16:31:8"}, func() lab.Config {
			c := longpoll.Published()
			c.Reps, c.Seconds, c.Conditions = 1, lab.Duration(40*time.Second), []longpoll.Condition{{Server: "gthread-2x16", Hold: 31, Probes: 8}}
			return c
		}},
		{[]string{"latency-gap", "--runs", "5", "--delay", "10ms", "--sizes", "2k"}, func() lab.Config {
			c := latencygap.Published()
			c.Runs, c.Delays, c.Sizes = 5, []lab.Duration{lab.Duration(10 * time.Millisecond)}, []lab.Size{2048}
			return c
		}},
	} {
		code, stdout, stderr := runCmd(t, append(append([]string{"reproduce"}, tc.args...), "--print-scenario")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		got, err := lab.ParseScenario([]byte(stdout))
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, stdout)
		}
		if want := tc.want(); !reflect.DeepEqual(got, want) {
			t.Errorf("%v: printed scenario reads back as %+v, want %+v", tc.args, got, want)
		}
	}
}

// Each experiment's --help shows its own flags and the shared ones it
// takes, and nothing else.
func TestReproduceHelpPerExperiment(t *testing.T) {
	for exp, tc := range map[string]struct{ has, hasNot []string }{
		"slow-client": {[]string{"-stack", "-resume", "-max-host-cpu", "-reps", "-prometheus-targets"}, []string{"-sizes", "-delay", "-condition", "-seconds"}},
		"long-poll":   {[]string{"-stack", "-condition", "-seconds", "-wait", "-keepalive", "-prometheus-targets", "-reps", "-resume", "-max-host-cpu"}, []string{"-sizes", "-delay", "-runs"}},
		"latency-gap": {[]string{"-runs", "-delay", "-sizes", "-metrics-addr", "-trace-sample-ratio", "-reps", "-quick", "-tls", "-loss", "-rate", "-work", "-delay-up", "-resume", "-max-host-cpu"}, []string{"-stack", "-condition", "-seconds", "-no-limits"}},
	} {
		code, stdout, _ := runCmd(t, "reproduce", exp, "--help")
		if code != 0 || !strings.Contains(stdout, "Usage: slowlab reproduce "+exp) {
			t.Errorf("%s --help: exit %d\n%s", exp, code, stdout)
		}
		for _, f := range tc.has {
			if !strings.Contains(stdout, "  "+f+" ") && !strings.Contains(stdout, "  "+f+"\n") {
				t.Errorf("%s --help lacks %s:\n%s", exp, f, stdout)
			}
		}
		for _, f := range tc.hasNot {
			if strings.Contains(stdout, "  "+f+" ") || strings.Contains(stdout, "  "+f+"\n") {
				t.Errorf("%s --help shows %s:\n%s", exp, f, stdout)
			}
		}
	}
}

// Every shared flag either works in an experiment that takes it, or is a
// usage error naming the experiments that do.
func TestSharedFlagsPerExperiment(t *testing.T) {
	values := map[string]string{"stack": "embedded", "no-limits": "", "reps": "1", "quick": "", "resume": "x",
		"max-host-cpu": "50", "metrics-addr": "127.0.0.1:0", "trace-sample-ratio": "0.5", "prometheus-targets": "x"}
	for _, e := range lab.Experiments() {
		for name, v := range values {
			args := []string{"reproduce", e.Name, "--" + name}
			if v != "" {
				args = append(args, v)
			}
			code, _, stderr := runCmd(t, append(args, "--print-scenario")...)
			if !lab.IsShared(name) {
				t.Fatalf("%s is not a shared flag", name)
			}
			if e.Takes(name) && code != 0 || !e.Takes(name) && (code != 2 || stderr != "slowlab reproduce: "+lab.WhoHas(name, e.Name)+"\n") {
				t.Errorf("%v: exit %d, stderr %q (takes it: %t)", args, code, stderr, e.Takes(name))
			}
		}
	}
}

// Every registered experiment runs through the one run loop and takes its
// flags: --resume and --max-host-cpu, shown in its --help and accepted.
func TestEveryExperimentResumesAndGuards(t *testing.T) {
	slowlabtest.Timing(t)
	for _, e := range lab.Experiments() {
		code, stdout, _ := runCmd(t, "reproduce", e.Name, "--help")
		for _, name := range []string{"resume", "max-host-cpu"} {
			if !e.Takes(name) || code != 0 || !strings.Contains(stdout, "  -"+name+" ") {
				t.Errorf("%s does not take --%s (registered: %t; --help exit %d)", e.Name, name, e.Takes(name), code)
			}
		}
		if code, _, stderr := runCmd(t, "reproduce", e.Name, "--resume", t.TempDir(), "--max-host-cpu", "50", "--print-scenario"); code != 0 {
			t.Errorf("%s --resume DIR --max-host-cpu 50: exit %d: %s", e.Name, code, stderr)
		}
	}
}
