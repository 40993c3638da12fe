// Command testsummary reads `go test -json` on stdin, prints the test output
// as `go test` would, and ends with a summary of every skipped test and why
// it was skipped, so that a run without root or without a real component
// says which parts did not run. It exits 1 when a test or package failed
// (or the input ended early), so `go test -json ... | testsummary` keeps
// the suite's verdict. Before the skips it lists the slowest top-level
// tests and how long the packages ran, how many at once (a run with -p 2
// that ends with one long package alone leaves a core idle), so that a
// suite drifting toward its time budget says where the time goes.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
	Time    time.Time
}

// skip is a skipped test and the lines it logged.
type skip struct {
	pkg, test string
	reason    []string
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	logs := map[string][]string{} // package/test -> output lines
	var skips []skip
	var timed []timing
	var failures []failure
	failed := 0
	tl := newTimeline()
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not JSON: a build error or a line printed outside a test.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		tl.add(e)
		key := e.Package + "/" + e.Test
		switch e.Action {
		case "output":
			if e.Test == "" {
				if e.Output != "PASS\n" { // the test binary's own line: ok follows
					fmt.Fprint(out, e.Output) // package lines: ok, FAIL, coverage
				}
			} else {
				logs[key] = append(logs[key], e.Output)
				if strings.HasPrefix(strings.TrimSpace(e.Output), "--- FAIL") {
					fmt.Fprint(out, strings.Join(logs[key], ""))
				}
			}
		case "skip":
			if e.Test != "" {
				skips = append(skips, skip{e.Package, e.Test, reasons(logs[key])})
			}
			delete(logs, key)
		case "fail":
			failed++
			if e.Test == "" {
				failures = append(failures, unended(out, logs, e.Package)...)
			} else if !strings.Contains(e.Test, "/") {
				failures = append(failures, failure{pkg: e.Package, test: e.Test})
			}
			delete(logs, key)
		case "pass":
			delete(logs, key)
		}
		if (e.Action == "pass" || e.Action == "fail") && e.Test != "" && !strings.Contains(e.Test, "/") {
			timed = append(timed, timing{e.Package, e.Test, e.Elapsed})
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(out, "testsummary: reading go test -json: %v\n", err)
		failed++
	}
	printSlowest(out, timed, slowest)
	tl.print(out)
	printSkips(out, skips)
	printFailures(out, failures)
	if failed > 0 {
		return 1
	}
	return 0
}

// timing is a top-level test's wall time.
type timing struct {
	pkg, test string
	seconds   float64
}

// slowest is how many tests printSlowest lists.
const slowest = 40

// printSlowest lists the n slowest tests, slowest first, and their share
// of the time all tests took.
func printSlowest(out io.Writer, timed []timing, n int) {
	var total float64
	for _, t := range timed {
		total += t.seconds
	}
	if total == 0 {
		return
	}
	sort.SliceStable(timed, func(i, j int) bool { return timed[i].seconds > timed[j].seconds })
	timed = timed[:min(n, len(timed))]
	var top float64
	for _, t := range timed {
		top += t.seconds
	}
	fmt.Fprintf(out, "\nslowest tests (%d of %.0f s in all tests, %.0f%%):\n", len(timed), total, 100*top/total)
	for _, t := range timed {
		fmt.Fprintf(out, "  %6.1f s  %s %s\n", t.seconds, strings.TrimPrefix(t.pkg, "github.com/slowlab/slowlab/"), t.test)
	}
}

// reasons keeps the lines a skipped test logged, without the framing lines
// `go test` adds (=== RUN, --- SKIP).
func reasons(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		out = append(out, t)
	}
	return out
}

func printSkips(out io.Writer, skips []skip) {
	if len(skips) == 0 {
		fmt.Fprintln(out, "\nskipped tests: none")
		return
	}
	sort.Slice(skips, func(i, j int) bool {
		if skips[i].pkg != skips[j].pkg {
			return skips[i].pkg < skips[j].pkg
		}
		return skips[i].test < skips[j].test
	})
	fmt.Fprintf(out, "\nskipped tests (%d): these parts did not run\n", len(skips))
	for _, s := range skips {
		why := "(no reason given)"
		if len(s.reason) > 0 {
			why = strings.Join(s.reason, " / ")
		}
		fmt.Fprintf(out, "  %s %s: %s\n", strings.TrimPrefix(s.pkg, "github.com/slowlab/slowlab/"), s.test, why)
	}
}

// failure is a top-level test that failed, or that had not ended when its
// package failed (a timeout, a crash): then hung holds where it was.
type failure struct {
	pkg, test string
	unended   bool
	hung      []string
}

// unended prints the output of pkg's tests that never ended (a timed-out
// or crashed test binary gives them no fail action, so their output,
// the panic and the goroutine dump included, would be lost) and returns
// them, each with the stacks that pass through a test file.
func unended(out io.Writer, logs map[string][]string, pkg string) []failure {
	var keys []string
	for k := range logs {
		if strings.HasPrefix(k, pkg+"/") && k != pkg+"/" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var fs []failure
	for _, k := range keys {
		fmt.Fprint(out, strings.Join(logs[k], ""))
		test := strings.TrimPrefix(k, pkg+"/")
		if !strings.Contains(test, "/") {
			fs = append(fs, failure{pkg: pkg, test: test, unended: true, hung: testStacks(logs[k], hungStacks)})
		}
		delete(logs, k)
	}
	return fs
}

// hungStacks is how many goroutine stacks printFailures shows per test.
const hungStacks = 6

// testStacks returns the first n goroutine stacks in lines (a panic's
// dump: blocks split by blank lines) that pass through a _test.go file,
// and the "running tests" block when there is one.
func testStacks(lines []string, n int) []string {
	var out, block []string
	flush := func() {
		b := strings.Join(block, "")
		if strings.Contains(b, "running tests:") || (strings.Contains(b, "_test.go:") && !strings.Contains(b, "testing.(*M).") && len(out) < n+1) {
			out = append(out, strings.TrimRight(b, "\n"))
		}
		block = block[:0]
	}
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		block = append(block, l)
	}
	flush()
	return out
}

// printFailures ends the summary with the failed tests, so that the tail
// of a long run names them; a test that never ended gets where it hung.
func printFailures(out io.Writer, fs []failure) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(out, "\nfailed tests (%d):\n", len(fs))
	for _, f := range fs {
		name := strings.TrimPrefix(f.pkg, "github.com/slowlab/slowlab/") + " " + f.test
		if !f.unended {
			fmt.Fprintf(out, "  %s\n", name)
			continue
		}
		fmt.Fprintf(out, "  %s: never ended (its package timed out or crashed); where it was:\n", name)
		for _, b := range f.hung {
			fmt.Fprintf(out, "%s\n\n", indent(b))
		}
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
