#!/usr/bin/env bash
# bench-openloop.sh [RATES...]: the highest open-loop rate at which
# slowlab loadgen keeps p99 schedule lag under 1 ms, against
# `slowlab target --model async` on loopback, with a new connection per
# request and with keep-alive; vegeta (a benchmark peer, not a dependency)
# attacks at the same rates in the same run for comparison.
#   go install github.com/tsenart/vegeta/v12@v12.13.0   # once
set -euo pipefail
cd "$(dirname "$0")/.."
rates=${*:-"100 500 1000 2000 4000 8000"}
duration=${DURATION:-5s}
work=$(mktemp -d)
go build -o "$work/slowlab" ./cmd/slowlab
vegeta=$(command -v vegeta || echo "$(go env GOPATH)/bin/vegeta")

"$work/slowlab" target --model async --listen 127.0.0.1:0 --admin 127.0.0.1:0 >"$work/target.out" 2>&1 &
tpid=$!
trap 'kill $tpid 2>/dev/null; wait $tpid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do grep -q '^ready' "$work/target.out" && break; sleep 0.1; done
addr=$(sed -n 's/^ready listen=\([^ ]*\).*/\1/p' "$work/target.out")
url="http://$addr/fast"

printf "%-8s %-10s %12s %12s %12s %10s %12s\n" rate client lag_p50_ms lag_p99_ms lag_max_ms ok lat_p99_ms
for rate in $rates; do
  for mode in new keepalive; do
    flags=""; [ "$mode" = keepalive ] && flags="--keepalive"
    out=$("$work/slowlab" loadgen --target "$url" --rate "$rate" --duration "$duration" $flags)
    lag=$(sed -n 's/^schedule lag ms: p50 \([^ ]*\)  p99 \([^ ]*\)  max \([^ ]*\)/\1 \2 \3/p' <<<"$out")
    ok=$(sed -n 's/^requests \([0-9]*\): ok \([0-9]*\).*/\2\/\1/p' <<<"$out")
    p99=$(sed -n 's/^latency ms: .*p99 \([^ ]*\) .*/\1/p' <<<"$out")
    read -r l50 l99 lmax <<<"$lag"
    printf "%-8s %-10s %12s %12s %12s %10s %12s\n" "$rate" "slowlab-$mode" "$l50" "$l99" "$lmax" "$ok" "$p99"
  done
  if [ -x "$vegeta" ]; then
    for mode in new keepalive; do
      ka="-keepalive=false"; [ "$mode" = keepalive ] && ka="-keepalive=true"
      rep=$(echo "GET $url" | "$vegeta" attack -rate "$rate" -duration "$duration" $ka | "$vegeta" report -type=json)
      # vegeta does not measure schedule lag; report its achieved rate and p99 latency.
      python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%-8s %-10s %12s %12s %12s %10s %12.2f   (vegeta achieved %.1f req/s)" % (sys.argv[2], "vegeta-"+sys.argv[3], "-", "-", "-", "%d/%d" % (r["status_codes"].get("200",0), r["requests"]), r["latencies"]["99th"]/1e6, r["rate"]))' "$rep" "$rate" "$mode"
    done
  fi
done
