#!/usr/bin/env bash
# syscalls-openloop.sh [RATE] [DURATION]: the system calls each open-loop
# generator makes a request: slowlab loadgen with --pacer-sleep syscall and
# raw, and vegeta, each under `strace -f -c` at RATE (default 1000 req/s)
# for DURATION (default 3s), with a new connection per request and kept
# alive, against the embedded async target (`slowlab target`) on
# 127.0.0.1. Prints, per generator and mode, all calls, nanosleep and
# futex per request: where a generator's kernel time goes beyond the
# calls a request needs (socket, connect, write, read, close), which are
# the same for all. strace slows what it traces, so read the counts, not
# the times. Needs strace; installs vegeta v12.13.0 with `go install`
# when missing (a benchmark peer, not a dependency of the module).
# Processes are started and stopped by PID; files are removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-1000}
duration=${2:-3s}
command -v strace >/dev/null || { echo "strace is not installed (apt-get install strace)" >&2; exit 2; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/slowlab" ./cmd/slowlab
vegeta=$(command -v vegeta || echo "$(go env GOPATH)/bin/vegeta")
[ -x "$vegeta" ] || go install github.com/tsenart/vegeta/v12@v12.13.0

"$work/slowlab" target --model async --workers 1 --listen 127.0.0.1:0 --admin 127.0.0.1:0 >"$work/target.out" 2>&1 &
pids+=("$!")
for _ in $(seq 100); do grep -q '^ready ' "$work/target.out" && break; sleep 0.1; done
addr=$(sed -n 's/^ready listen=\([^ ]*\) .*/\1/p' "$work/target.out")
[ -n "$addr" ] || { cat "$work/target.out" >&2; exit 1; }
url="http://$addr/fast"
echo "GET $url" >"$work/targets"

# per_req FILE: "all nanosleep futex" calls per request from strace -c's table.
per_req() {
  awk -v n="$2" '$NF == "total" { all = $4 } $NF == "nanosleep" { ns = $4 } $NF == "futex" { fx = $4 }
    END { printf "%9.1f %10.2f %7.2f\n", all / n, ns / n, fx / n }' "$1"
}

n=$(awk -v r="$rate" -v d="${duration%s}" 'BEGIN { printf "%d", r * d }')
printf "%-42s %9s %10s %7s\n" "generator ($rate req/s, $duration)" all nanosleep futex
for mode in new keepalive; do
  ka="" vka="-keepalive=false"
  [ "$mode" = keepalive ] && ka="--keepalive" vka="-keepalive=true"
  for sleep in syscall raw; do
    # shellcheck disable=SC2086 # $ka is one flag or none
    strace -f -c -o "$work/strace" "$work/slowlab" loadgen --target "$url" --rate "$rate" --duration "$duration" \
      --pacer-sleep "$sleep" $ka >"$work/loadgen.out" 2>&1 || { cat "$work/loadgen.out" >&2; exit 1; }
    printf "%-42s %s\n" "slowlab $mode, --pacer-sleep $sleep" "$(per_req "$work/strace" "$n")"
  done
  strace -f -c -o "$work/strace" "$vegeta" attack -targets "$work/targets" -rate "$rate" -duration "$duration" "$vka" -output /dev/null
  printf "%-42s %s\n" "vegeta $mode" "$(per_req "$work/strace" "$n")"
done
echo "(system calls a request: every thread's, from strace -f -c; $n requests a run)"
