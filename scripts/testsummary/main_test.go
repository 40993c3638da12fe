package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"example/a","Test":"TestReal"}`,
		`{"Action":"output","Package":"example/a","Test":"TestReal","Output":"=== RUN   TestReal\n"}`,
		`{"Action":"output","Package":"example/a","Test":"TestReal","Output":"    real_test.go:12: needs root (cgroups)\n"}`,
		`{"Action":"output","Package":"example/a","Test":"TestReal","Output":"--- SKIP: TestReal (0.00s)\n"}`,
		`{"Action":"skip","Package":"example/a","Test":"TestReal","Elapsed":0}`,
		`{"Action":"output","Package":"example/a","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}`,
		`{"Action":"pass","Package":"example/a","Test":"TestOK","Elapsed":0}`,
		`{"Action":"output","Package":"example/a","Output":"ok  \texample/a\t0.01s\n"}`,
		`{"Action":"pass","Package":"example/a","Elapsed":0.01}`,
	}, "\n")
	var out bytes.Buffer
	if code := run(strings.NewReader(in), &out); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	want := "ok  \texample/a\t0.01s\n\nskipped tests (1): these parts did not run\n  example/a TestReal: real_test.go:12: needs root (cgroups)\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}

	fail := `{"Action":"output","Package":"example/b","Test":"TestX","Output":"    x_test.go:3: boom\n"}
{"Action":"output","Package":"example/b","Test":"TestX","Output":"--- FAIL: TestX (0.00s)\n"}
{"Action":"fail","Package":"example/b","Test":"TestX"}
{"Action":"fail","Package":"example/b"}`
	out.Reset()
	if code := run(strings.NewReader(fail), &out); code != 1 {
		t.Errorf("exit %d after a failure, want 1", code)
	}
	if !strings.Contains(out.String(), "x_test.go:3: boom") || !strings.Contains(out.String(), "skipped tests: none") {
		t.Errorf("failure output:\n%s", out.String())
	}
}

func TestSlowest(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"pass","Package":"github.com/slowlab/slowlab/lab","Test":"TestFast","Elapsed":1}`,
		`{"Action":"pass","Package":"github.com/slowlab/slowlab/lab","Test":"TestSlow/sub","Elapsed":8}`,
		`{"Action":"pass","Package":"github.com/slowlab/slowlab/lab","Test":"TestSlow","Elapsed":9}`,
		`{"Action":"fail","Package":"github.com/slowlab/slowlab/proxy","Test":"TestMid","Elapsed":3}`,
		`{"Action":"fail","Package":"github.com/slowlab/slowlab/proxy","Elapsed":3}`,
	}, "\n")
	var out bytes.Buffer
	run(strings.NewReader(in), &out)
	want := "\nslowest tests (2 of 13 s in all tests, 92%):\n     9.0 s  lab TestSlow\n     3.0 s  proxy TestMid\n"
	var got bytes.Buffer
	printSlowest(&got, []timing{{"github.com/slowlab/slowlab/lab", "TestFast", 1}, {"github.com/slowlab/slowlab/lab", "TestSlow", 9},
		{"github.com/slowlab/slowlab/proxy", "TestMid", 3}}, 2)
	if got.String() != want {
		t.Errorf("printSlowest:\n%q\nwant\n%q", got.String(), want)
	}
	if !strings.Contains(out.String(), "slowest tests (3 of 13 s") || strings.Contains(out.String(), "TestSlow/sub") {
		t.Errorf("run lists subtests or misses tests:\n%s", out.String())
	}
}

// A timed-out test binary (captured from `go test -json -timeout 1s` on
// a test blocked in a helper) gives the running test no fail action: its
// output, the panic and the goroutine dump, is printed anyway, and the
// summary's last section names it with the stacks through its test file
// and none of the testing package's own.
func TestTimedOutTestIsNamed(t *testing.T) {
	in, err := os.ReadFile("testdata/timeout.json")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run(bytes.NewReader(in), &out); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	s := out.String()
	tail := s[strings.Index(s, "skipped tests"):]
	for _, want := range []string{"failed tests (1):", "to TestHang: never ended", "TestHang (1s)", "to.waitForever(...)", "a_test.go:12"} {
		if !strings.Contains(tail, want) {
			t.Errorf("the summary misses %q:\n%s", want, tail)
		}
	}
	if strings.Contains(tail, "testing.(*M).startAlarm") || strings.Contains(tail, "TestOK") {
		t.Errorf("the summary shows stacks or tests that are not the hung test's:\n%s", tail)
	}
	if !strings.Contains(s[:strings.Index(s, "skipped tests")], "a_test.go:13: waiting") {
		t.Errorf("the hung test's own log is not printed:\n%s", s)
	}
}

// The timeline: a 0-10 s, b 0-4 s, c 4-12 s (starting as b ends) and d
// never ending: 12 s in all, two at once for 10 s, one for 2 s, the last
// to end first; d is left to the failure summary.
func TestTimeline(t *testing.T) {
	ev := func(s int, action, pkg, test string) string {
		return fmt.Sprintf(`{"Time":"2026-12-07T04:00:%02d.5Z","Action":%q,"Package":%q,"Test":%q}`, s, action, pkg, test)
	}
	in := strings.Join([]string{
		ev(0, "start", "github.com/slowlab/slowlab/a", ""),
		ev(0, "start", "github.com/slowlab/slowlab/b", ""),
		ev(1, "run", "github.com/slowlab/slowlab/a", "TestA"),
		ev(3, "start", "github.com/slowlab/slowlab/d", ""),
		ev(4, "pass", "github.com/slowlab/slowlab/b", ""),
		ev(4, "start", "github.com/slowlab/slowlab/c", ""),
		ev(9, "pass", "github.com/slowlab/slowlab/a", "TestA"),
		ev(10, "pass", "github.com/slowlab/slowlab/a", ""),
		ev(12, "skip", "github.com/slowlab/slowlab/c", ""),
	}, "\n")
	var out bytes.Buffer
	run(strings.NewReader(in), &out)
	want := "\npackages' tests ran 12 s, first start to last end: 2 at once 10 s, 1 at once 2 s\n" +
		"  ended at    12 s, ran     8 s  c\n" +
		"  ended at    10 s, ran    10 s  a\n" +
		"  ended at     4 s, ran     4 s  b\n"
	if got := out.String(); !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant it to hold\n%s", got, want)
	}
}
