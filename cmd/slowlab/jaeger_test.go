package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// jaeger is a Jaeger all-in-one (github.com/jaegertracing/jaeger/cmd/jaeger,
// the tool of the module tools/jaeger, in-memory storage) this test
// started on loopback ports of its own.
type jaeger struct {
	grpc, http, query string // OTLP/gRPC, OTLP/HTTP and query API addresses
}

// startJaeger builds Jaeger with go tool in tools/jaeger (the build cache
// keeps it, and make deps builds it before the suite) and starts it with
// a configuration that listens on free loopback ports only.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	build := exec.Command("go", "tool", "-n", "jaeger")
	build.Dir = filepath.Join(moduleRoot(t), "tools", "jaeger")
	out, err := build.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go tool -n jaeger in %s: %v\n%s", build.Dir, err, stderr)
	}
	bin := strings.TrimSpace(string(out))
	j := &jaeger{grpc: freeAddr(t), http: freeAddr(t), query: freeAddr(t)}
	health := freeAddr(t)
	config := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %q
    grpc:
      endpoint: %q
  healthcheckv2:
    use_v2: true
    http:
      endpoint: %q
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %q
      http:
        endpoint: %q
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, j.query, freeAddr(t), health, j.grpc, j.http)
	dir := t.TempDir()
	path := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "jaeger.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--config", path)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	slowlabtest.WaitFor(t, "jaeger healthy", func() bool {
		select {
		case <-done:
			return true // reported below
		default:
		}
		resp, err := http.Get("http://" + health + "/status")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { b, _ := os.ReadFile(logPath); return string(b) })
	select {
	case <-done:
		b, _ := os.ReadFile(logPath)
		t.Fatalf("jaeger exited:\n%s", b)
	default:
	}
	return j
}

// jaegerTrace is the part of Jaeger's /api/traces/ID answer the test reads.
type jaegerTrace struct {
	Data []struct {
		TraceID string `json:"traceID"`
		Spans   []struct {
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			ProcessID     string `json:"processID"`
			References    []struct {
				RefType string `json:"refType"`
				SpanID  string `json:"spanID"`
			} `json:"references"`
			Tags []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"tags"`
		} `json:"spans"`
		Processes map[string]struct {
			ServiceName string `json:"serviceName"`
		} `json:"processes"`
	} `json:"data"`
}

// trace asks Jaeger's query API for one trace; nil while it has none.
func (j *jaeger) trace(t *testing.T, id string) *jaegerTrace {
	resp, err := http.Get("http://" + j.query + "/api/traces/" + id)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	var tr jaegerTrace
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		t.Fatalf("jaeger trace %s: %v", id, err)
	}
	if len(tr.Data) == 0 {
		return nil
	}
	return &tr
}

// slowExemplar is the trace ID of the slowest request /metrics holds an
// exemplar for: the exemplar of the highest request-duration bucket that
// has one (a slow reader's /large, read at 256 KiB/s).
var exemplarLine = regexp.MustCompile(`(?m)^slowlab_loadgen_request_duration_seconds_bucket\{[^}]*\} \d+ # \{trace_id="([0-9a-f]{32})"\} ([0-9.e+-]+)`)

func slowExemplar(t *testing.T, metrics string) (id string, seconds float64) {
	t.Helper()
	for _, m := range exemplarLine.FindAllStringSubmatch(metrics, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err == nil && v > seconds {
			id, seconds = m[1], v
		}
	}
	if id == "" {
		t.Fatalf("no exemplar on slowlab_loadgen_request_duration_seconds:\n%s", metrics)
	}
	return id, seconds
}

// TestTracesInJaeger sends a loadgen run through the embedded target to a
// real Jaeger, over OTLP/HTTP (http/protobuf) and over OTLP/gRPC, with
// only OTEL_EXPORTER_OTLP_ENDPOINT and the protocol set (no
// OTEL_TRACES_EXPORTER: the endpoint alone turns tracing on, as the
// specification's default of otlp does), takes the slowest request's trace
// ID from the exemplar /metrics gave, and finds that trace through
// Jaeger's query API: the load generator's client span and, under it,
// the target's server span.
func TestTracesInJaeger(t *testing.T) {
	slowlabtest.EndToEnd(t, "it builds and starts Jaeger")
	j := startJaeger(t)
	for _, tc := range []struct{ protocol, endpoint string }{
		{"http/protobuf", "http://" + j.http},
		{"grpc", "http://" + j.grpc},
	} {
		t.Run(strings.ReplaceAll(tc.protocol, "/", "-"), func(t *testing.T) {
			env := []string{tracesExporterEnv + "=", "OTEL_EXPORTER_OTLP_ENDPOINT=" + tc.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=" + tc.protocol,
				"OTEL_EXPORTER_OTLP_INSECURE=true", "OTEL_BSP_SCHEDULE_DELAY=100"}
			tgt, listen := startTarget(t, env)
			metricsAddr := freeAddr(t)
			runID := "jaeger-" + strings.ReplaceAll(tc.protocol, "/", "-")
			lg := startChild(t, env, "loadgen", "--target", "http://"+listen+"/fast", "--rate", "20", "--duration", "500ms",
				"--slow", "1", "--read-rate", "256k", "--run-id", runID, "--metrics-addr", metricsAddr, "--linger", "2m")
			select {
			case <-lg.stdout.first:
			case <-lg.done:
				t.Fatalf("loadgen exited early: %v; stderr:\n%s", lg.err, lg.stderr.String())
			case <-time.After(90 * time.Second):
				t.Fatalf("loadgen not done after 90 s; stderr:\n%s", lg.stderr.String())
			}
			id, seconds := slowExemplar(t, openMetrics(t, "http://"+metricsAddr+"/metrics"))
			lg.cmd.Process.Signal(os.Interrupt) // end the linger; the spans are flushed on exit
			lg.wait(t, 60*time.Second)
			tgt.stop(t)

			var tr *jaegerTrace
			slowlabtest.WaitFor(t, "trace "+id+" in jaeger", func() bool {
				tr = j.trace(t, id)
				return tr != nil && len(tr.Data[0].Spans) >= 2
			})
			d := tr.Data[0]
			service := func(processID string) string { return d.Processes[processID].ServiceName }
			clients := map[string]string{} // client span ID -> its run id tag
			for _, s := range d.Spans {
				if service(s.ProcessID) != "slowlab-loadgen" {
					continue
				}
				for _, tag := range s.Tags {
					if tag.Key == "slowlab.run_id" {
						clients[s.SpanID] = fmt.Sprint(tag.Value)
					}
				}
			}
			nested := false
			for _, s := range d.Spans {
				if service(s.ProcessID) != "slowlab-target" {
					continue
				}
				for _, r := range s.References {
					if r.RefType == "CHILD_OF" && clients[r.SpanID] == runID {
						nested = s.OperationName == "GET /large"
					}
				}
			}
			if !nested {
				t.Errorf("trace %s (the exemplar of a %.2f s request): want the target's GET /large span under a loadgen client span of run %s; got %+v",
					id, seconds, runID, d)
			}
		})
	}
}
