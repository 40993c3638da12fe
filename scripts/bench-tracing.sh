#!/usr/bin/env bash
# bench-tracing.sh [RATES...]: what tracing costs slowlab loadgen. At each
# rate, the open-loop schedule lag and latency with tracing off and with every
# request traced (--trace-sample-ratio 1), against an untraced
# `slowlab target --model async` on loopback, a new connection per request:
#   off      OTEL_TRACES_EXPORTER unset (no provider is built)
#   otlp     OTLP/gRPC to a receiver on loopback (the cmd/slowlab test binary's
#            TestOTLPSink, which counts what it receives)
#   console  JSON spans to stderr, sent to /dev/null
# The highest rate whose p99 schedule lag stays under 1 ms is the figure to
# compare (as in bench-openloop.sh). MODES="off otlp" picks modes.
set -euo pipefail
cd "$(dirname "$0")/.."
rates=${*:-"500 1000 2000 4000"}
duration=${DURATION:-5s}
modes=${MODES:-"off otlp console"}
work=$(mktemp -d)
go build -o "$work/slowlab" ./cmd/slowlab
go test -c -o "$work/slowlab.test" ./cmd/slowlab

"$work/slowlab" target --model async --listen 127.0.0.1:0 --admin 127.0.0.1:0 >"$work/target.out" 2>&1 &
tpid=$!
SLOWLAB_OTLP_SINK=127.0.0.1:0 "$work/slowlab.test" -test.run '^TestOTLPSink$' -test.count=1 >"$work/sink.out" 2>&1 &
spid=$!
trap 'kill $tpid $spid 2>/dev/null; wait $tpid $spid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q '^ready' "$work/target.out" && grep -q '^sink ready' "$work/sink.out" && break; sleep 0.1; done
addr=$(sed -n 's/^ready listen=\([^ ]*\).*/\1/p' "$work/target.out")
sink=$(sed -n 's/^sink ready \(.*\)/\1/p' "$work/sink.out")
url="http://$addr/fast"

otlp_requests=0
printf "%-8s %-9s %12s %12s %12s %12s %12s\n" rate tracing lag_p50_ms lag_p99_ms lag_max_ms ok lat_p99_ms
for rate in $rates; do
  for mode in $modes; do
    case $mode in
      off) out=$(env -u OTEL_TRACES_EXPORTER "$work/slowlab" loadgen --target "$url" --rate "$rate" --duration "$duration") ;;
      otlp) out=$(OTEL_TRACES_EXPORTER=otlp OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT="http://$sink" OTEL_EXPORTER_OTLP_INSECURE=true \
        "$work/slowlab" loadgen --target "$url" --rate "$rate" --duration "$duration" --trace-sample-ratio 1) ;;
      console) out=$(OTEL_TRACES_EXPORTER=console "$work/slowlab" loadgen --target "$url" --rate "$rate" --duration "$duration" --trace-sample-ratio 1 2>/dev/null) ;;
      *) echo "unknown mode $mode (allowed off, otlp, console)" >&2; exit 2 ;;
    esac
    lag=$(sed -n 's/^schedule lag ms: p50 \([^ ]*\)  p99 \([^ ]*\)  max \([^ ]*\)/\1 \2 \3/p' <<<"$out")
    ok=$(sed -n 's/^requests \([0-9]*\), ok \([0-9]*\).*/\2\/\1/p' <<<"$out")
    p99=$(sed -n 's/^latency ms: .*p99 \([^ ]*\) .*/\1/p' <<<"$out")
    read -r l50 l99 lmax <<<"$lag"
    [ "$mode" = otlp ] && otlp_requests=$((otlp_requests + ${ok#*/}))
    printf "%-8s %-9s %12s %12s %12s %12s %12s\n" "$rate" "$mode" "$l50" "$l99" "$lmax" "$ok" "$p99"
  done
done
kill -TERM $spid
wait $spid 2>/dev/null || true
received=$(sed -n 's/^sink received \([0-9]*\) spans/\1/p' "$work/sink.out")
case " $modes " in *" otlp "*) echo "otlp: the receiver got ${received:-?} spans for $otlp_requests traced requests (the rest were dropped by the batch span processor's queue, OTEL_BSP_MAX_QUEUE_SIZE)" ;; esac
