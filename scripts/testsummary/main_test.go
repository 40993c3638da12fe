package main

import (
	"bytes"
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
