package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// mixedSummary is a run of every kind of request: ok ones of spread
// latencies, 503s, refused and timed-out ones, a skipped one and one
// never sent; and two slow readers, one incomplete.
func mixedSummary() (*loadgen.Summary, []loadgen.Download) {
	sum := loadgen.NewSummary()
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for i := range 40 {
		r := loadgen.Result{Seq: i, Scheduled: true, ScheduledAt: t0.Add(time.Duration(i) * 25 * time.Millisecond),
			ScheduleLag: time.Duration(50+i*37) * time.Microsecond, Latency: time.Duration(1+i*i) * time.Millisecond / 3, Status: 200}
		r.Start = r.ScheduledAt.Add(r.ScheduleLag)
		switch {
		case i == 38:
			r.Skipped, r.Err, r.Status = true, loadgen.ErrLate, 0
		case i == 39:
			r = loadgen.Result{Seq: i, NotSent: true, Err: loadgen.ErrNotSent}
		case i%9 == 4:
			r.Status = 503
		case i%11 == 5:
			r.Status, r.Err = 0, fmt.Errorf("dial tcp 127.0.0.1:9: connect: %w", syscall.ECONNREFUSED)
		case i%13 == 6:
			r.Status, r.Err = 0, fmt.Errorf("read tcp 127.0.0.1:9: %w", errTimeout{})
		}
		sum.Add(r)
	}
	return sum, []loadgen.Download{{Client: 0, Status: 200, Bytes: 1 << 20, Receive: 1500 * time.Millisecond, Complete: true},
		{Client: 1, Status: 200, Bytes: 4096, Receive: 250 * time.Millisecond, Err: loadgen.ErrIncomplete}}
}

type errTimeout struct{}

func (errTimeout) Error() string   { return "i/o timeout" }
func (errTimeout) Timeout() bool   { return true }
func (errTimeout) Temporary() bool { return true }

// `slowlab loadgen --json` prints the figures the text summary prints,
// from the one struct: every number of the text, read back, is the JSON's
// (to the text's decimals), and every figure of the JSON is in the text.
func TestLoadgenJSONAgreesWithText(t *testing.T) {
	sum, downloads := mixedSummary()
	var text, js bytes.Buffer
	if err := (&loadgenRun{f: &loadgenFlags{}}).printSummary(&text, sum, downloads); err != nil {
		t.Fatal(err)
	}
	if err := (&loadgenRun{f: &loadgenFlags{json: true}}).printSummary(&js, sum, downloads); err != nil {
		t.Fatal(err)
	}
	var got loadgenSummary
	dec := json.NewDecoder(&js)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil || dec.More() {
		t.Fatalf("--json: %v (more: %v)", err, dec.More())
	}
	if got.SchemaVersion != "1.0" || got.LatencyMS == nil || got.ScheduleLagMS == nil || got.OnSchedulePct == nil || got.StartedPerS == nil {
		t.Fatalf("--json: %+v", got)
	}
	fromText := textFigures(t, text.String())
	want := map[string]float64{"requests": float64(got.Requests), "ok": float64(got.OK), "failed": float64(got.Failed), "not_sent": float64(got.NotSent),
		"latency_ms.p50": got.LatencyMS.P50, "latency_ms.p95": got.LatencyMS.P95, "latency_ms.p99": got.LatencyMS.P99, "latency_ms.max": got.LatencyMS.Max,
		"schedule_lag_ms.p50": got.ScheduleLagMS.P50, "schedule_lag_ms.p99": got.ScheduleLagMS.P99, "schedule_lag_ms.max": got.ScheduleLagMS.Max,
		"on_schedule_pct": *got.OnSchedulePct, "late_after_ms": got.LateAfterMS, "late": float64(got.Late), "started": float64(got.Started),
		"skipped": float64(got.Skipped), "started_per_s": *got.StartedPerS}
	for _, s := range got.Status {
		want[fmt.Sprintf("status.%d", s.Code)] = float64(s.Count)
	}
	for _, e := range got.Errors {
		want["errors."+e.Reason] = float64(e.Count)
		if !strings.Contains(text.String(), "  "+e.Reason+": "+e.Example+"\n") {
			t.Errorf("the text lacks error %s's example %q", e.Reason, e.Example)
		}
	}
	for _, d := range got.SlowReaders {
		p := fmt.Sprintf("slow_readers.%d.", d.Client)
		want[p+"status"], want[p+"bytes"], want[p+"receive_s"] = float64(d.Status), float64(d.Bytes), d.ReceiveS
		want[p+"complete"] = map[bool]float64{true: 1}[d.Complete]
	}
	for name, w := range want {
		tv, ok := fromText[name]
		if !ok {
			t.Errorf("%s: %v in the JSON, not in the text", name, w)
			continue
		}
		if math.Abs(tv.v-w) > 0.5*math.Pow(10, -float64(tv.decimals))+1e-9 {
			t.Errorf("%s: text %v, JSON %v", name, tv.v, w)
		}
	}
	for name := range fromText {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: in the text, not in the JSON", name)
		}
	}
	if len(got.Status) != 2 || len(got.Errors) != 3 || got.Errors[0].Reason != "refused" || got.NotSent != 1 || got.Skipped != 1 || len(got.SlowReaders) != 2 {
		t.Errorf("the mixed run's figures: %+v", got)
	}
}

// textValue is a figure read from the text and its decimals.
type textValue struct {
	v        float64
	decimals int
}

// textFigures reads every figure of the text summary, by the JSON name
// of the figure it prints.
func textFigures(t *testing.T, text string) map[string]textValue {
	t.Helper()
	got := map[string]textValue{}
	put := func(names []string, values []string) {
		for i, name := range names {
			v, err := strconv.ParseFloat(values[i], 64)
			if err != nil {
				t.Fatalf("%s: %q", name, values[i])
			}
			_, frac, _ := strings.Cut(values[i], ".")
			got[name] = textValue{v, len(frac)}
		}
	}
	lines := []struct {
		re    *regexp.Regexp
		names func(m []string) []string
	}{
		{regexp.MustCompile(`^requests (\d+): ok (\d+), failed (\d+), not sent (\d+)$`), fixed("requests", "ok", "failed", "not_sent")},
		{regexp.MustCompile(`^status (\d+): (\d+)$`), func(m []string) []string { return []string{"", "status." + m[1]} }},
		{regexp.MustCompile(`^latency ms: +p50 (\S+)  p95 (\S+)  p99 (\S+)  max (\S+)$`), fixed("latency_ms.p50", "latency_ms.p95", "latency_ms.p99", "latency_ms.max")},
		{regexp.MustCompile(`^schedule lag ms: p50 (\S+)  p99 (\S+)  max (\S+)$`), fixed("schedule_lag_ms.p50", "schedule_lag_ms.p99", "schedule_lag_ms.max")},
		{regexp.MustCompile(`^on schedule: (\S+)% started within (\d+)ms \(late (\d+) of (\d+) started, skipped (\d+)\), (\S+) req/s started$`),
			fixed("on_schedule_pct", "late_after_ms", "late", "started", "skipped", "started_per_s")},
		{regexp.MustCompile(`^slow reader (\d+): status (\d+), (\d+) bytes in (\S+) s \((complete|incomplete: .*)\)$`), func(m []string) []string {
			p := "slow_readers." + m[1] + "."
			return []string{"", p + "status", p + "bytes", p + "receive_s", p + "complete"}
		}},
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if rest, ok := strings.CutPrefix(line, "errors: "); ok {
			for _, part := range strings.Split(rest, ", ") {
				reason, n, _ := strings.Cut(part, " ")
				put([]string{"errors." + reason}, []string{n})
			}
			continue
		}
		for _, l := range lines {
			m := l.re.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			names := l.names(m)
			if strings.HasPrefix(line, "slow reader") {
				m[5] = map[bool]string{true: "1", false: "0"}[m[5] == "complete"]
			}
			for i, name := range names {
				if name != "" {
					put([]string{name}, []string{m[i+1]})
				}
			}
		}
	}
	return got
}

func fixed(names ...string) func([]string) []string { return func([]string) []string { return names } }

// A real run with --json and --out: stdout is one JSON object, whose
// counts are requests.csv's, and no text.
func TestLoadgenJSONRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer srv.Close()
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "loadgen", "--target", srv.URL+"/fast", "--rate", "100", "--duration", "100ms", "--json", "--out", out)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var got loadgenSummary
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON object (%v):\n%s", err, stdout)
	}
	rows := readRows[recorder.Request](t, out)
	if got.Requests != 10 || got.OK != 10 || len(rows) != 10 || len(got.Status) != 1 || got.Status[0] != (loadgen.StatusCount{Code: 200, Count: 10}) ||
		got.SlowReaders == nil || len(got.Errors) != 0 {
		t.Errorf("--json %+v; requests.csv has %d rows", got, len(rows))
	}
	if !strings.HasPrefix(stdout, "{\n  \"schema_version\": \"1.0\",\n  \"requests\": 10,") {
		t.Errorf("stdout:\n%s", stdout)
	}
}
