package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// tracesExporterEnv names the exporter: otlp, console or none. Unset, it
// is otlp when an OTLP endpoint is given (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, as the OpenTelemetry Operator's
// injection sets alone), following the specification's default of otlp;
// with no endpoint either, tracing is off, so a plain run never tries to
// reach a collector that is not there.
const tracesExporterEnv = "OTEL_TRACES_EXPORTER"

// tracesExporter is the exporter the environment asks for: "" for none.
func tracesExporter() string {
	switch kind := os.Getenv(tracesExporterEnv); {
	case kind == "none":
		return ""
	case kind != "":
		return kind
	case os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		return "otlp"
	}
	return ""
}

// tracingFlags are the tracing flags shared by loadgen and target; the
// exporter itself is configured by the standard OTEL_* variables.
type tracingFlags struct {
	fs    *flag.FlagSet
	ratio *float64
}

func addTracingFlags(fs *flag.FlagSet) tracingFlags {
	return tracingFlags{fs: fs, ratio: fs.Float64("trace-sample-ratio", 1,
		"fraction of traces to sample, 0 to 1, parent-based (a request follows its caller's decision); "+
			"default: OTEL_TRACES_SAMPLER, else 1. Tracing is on when "+tracesExporterEnv+" is otlp or console, "+
			"or unset with OTEL_EXPORTER_OTLP_ENDPOINT given (OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf|grpc, ...); "+
			tracesExporterEnv+"=none turns it off; console spans go to stderr")}
}

// validate checks the flag and the exporter variable before anything starts.
func (f tracingFlags) validate() error {
	if r := *f.ratio; !(r >= 0 && r <= 1) {
		return usagef("--trace-sample-ratio %v: allowed 0 to 1", r)
	}
	switch v := os.Getenv(tracesExporterEnv); v {
	case "", "none", "otlp", "console":
	default:
		return usagef("%s=%q: allowed otlp, console, none (or unset: otlp if an OTLP endpoint is given, else no tracing)", tracesExporterEnv, v)
	}
	return nil
}

// start builds the TracerProvider the environment asks for, for service
// (the default service.name; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// override). It returns a nil provider when tracing is off
// (tracesExporter), so nothing is built and requests carry no spans. stop flushes and
// shuts the provider down; call it once everything traced has ended.
func (f tracingFlags) start(ctx context.Context, service string, stderr io.Writer) (tp trace.TracerProvider, stop func(), err error) {
	if err := f.validate(); err != nil {
		return nil, nil, err
	}
	kind := tracesExporter()
	ratioSet := false
	f.fs.Visit(func(fl *flag.Flag) { ratioSet = ratioSet || fl.Name == "trace-sample-ratio" })
	if kind == "" || strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		if ratioSet {
			fmt.Fprintf(stderr, "note: --trace-sample-ratio has no effect: tracing is off (%s none, or unset with no OTLP endpoint, or OTEL_SDK_DISABLED=true)\n", tracesExporterEnv)
		}
		return nil, func() {}, nil
	}
	var exp sdktrace.SpanExporter
	if kind == "console" {
		// Console spans go to stderr: stdout carries the lines other tools
		// parse (target's "ready ..." line, loadgen's summary).
		exp, err = stdouttrace.New(stdouttrace.WithWriter(stderr))
	} else {
		exp, err = autoexport.NewSpanExporter(ctx)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s=%s: %w", tracesExporterEnv, kind, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(service)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
		resource.WithProcessPID(),
	)
	if err != nil {
		exp.Shutdown(ctx)
		return nil, nil, fmt.Errorf("trace resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if ratioSet || os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*f.ratio))))
	}
	provider := sdktrace.NewTracerProvider(opts...)
	return provider, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := provider.Shutdown(sctx); err != nil {
			fmt.Fprintf(stderr, "traces: flush on exit: %v\n", strings.TrimSpace(err.Error()))
		}
	}, nil
}
