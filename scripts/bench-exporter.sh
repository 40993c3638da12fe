#!/usr/bin/env bash
# bench-exporter.sh [PROCS...]: slowlab exporter, process-exporter and
# node_exporter's processes collector side by side, scraping the same
# sleeping processes (scripts/benchprocs: 3 groups, 20 descriptors each:
# 12 unlinked temp files and 8 loopback sockets) at each count (default
# 50 and 1000). For each: the median and p90 of SCRAPES scrapes (wall time,
# curl), the bytes of one scrape and the exporter's resident memory after
# them. The goals of issue 21 are checked at the end: slowlab's median
# at most 10 ms at 50 processes and 50 ms at 1000, RSS at most 25 MiB.
#
# process-exporter and node_exporter are the Debian packages
# prometheus-process-exporter and prometheus-node-exporter, installed with
# apt-get when missing (root needed; without it they are left out, saying
# so). Everything listens on 127.0.0.1 and is ended by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
counts=${*:-"50 1000"}
scrapes=${SCRAPES:-30}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for pkg in prometheus-process-exporter prometheus-node-exporter; do
  if ! dpkg -s "$pkg" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      apt-get install -y -q "$pkg" >/dev/null 2>&1 || echo "note: apt-get install $pkg failed; left out"
    else
      echo "note: $pkg is not installed and installing needs root; left out"
    fi
  fi
done
procexp=$(command -v prometheus-process-exporter || true)
nodeexp=$(command -v prometheus-node-exporter || true)
# The packages start their services; this script runs its own copies.
for svc in prometheus-process-exporter prometheus-node-exporter; do
  systemctl stop "$svc" >/dev/null 2>&1 || true
done

go build -o "$work/slowlab" ./cmd/slowlab
go build -o "$work/slowlab-exporter" ./cmd/slowlab-exporter
go build -o "$work/benchprocs" ./scripts/benchprocs

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitup() { for _ in $(seq 100); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "not up: $1" >&2; return 1; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# measure NAME URL PID: prints name, median and p90 ms, bytes, RSS MiB.
measure() {
  local name=$1 url=$2 pid=$3 times=() bytes
  curl -sf -o /dev/null "$url" # warm-up
  for _ in $(seq "$scrapes"); do
    times+=("$(curl -sf -o /dev/null -w '%{time_total}' "$url")")
  done
  bytes=$(curl -sf "$url" | wc -c)
  printf '%s\n' "${times[@]}" | sort -n | awk -v name="$name" -v bytes="$bytes" -v rss="$(rss_kib "$pid")" '
    { t[NR] = $1 * 1000 }
    END { printf "%-26s %10.1f %10.1f %10d %10.1f\n", name, t[int((NR+1)/2)], t[int(NR*0.9+0.999)], bytes, rss/1024 }'
}

fail=0
printf "%-8s %-26s %10s %10s %10s %10s\n" procs exporter median_ms p90_ms bytes rss_mib
for n in $counts; do
  mkfifo "$work/hold-$n"
  "$work/benchprocs" -n "$n" -fds 20 -dir "$work" <"$work/hold-$n" >"$work/procs-$n.out" 2>&1 &
  pids+=($!)
  exec 9>"$work/hold-$n" # held open: benchprocs ends its processes when it closes
  for _ in $(seq 300); do grep -q ready "$work/procs-$n.out" && break; sleep 0.1; done
  grep -q ready "$work/procs-$n.out" || { cat "$work/procs-$n.out"; exit 1; }

  # The standalone binary (what the Debian package's unit runs) is held
  # to the goals; `slowlab exporter` (the whole toolkit's binary, same
  # code) is shown beside it.
  for variant in slowlab-exporter "slowlab exporter"; do
    port=$(freeport)
    # shellcheck disable=SC2086 # "slowlab exporter" is a command and its subcommand
    "$work/"$variant --web.listen-address "127.0.0.1:$port" --log.level warn \
      --group 'app=cmdline:sleep 600' --group 'proxy=cmdline:sleep 601' --group 'loadgen=cmdline:sleep 602' \
      --collector.tempfiles.dir "$work" >"$work/slowlab-$n.log" 2>&1 &
    spid=$!; pids+=("$spid")
    waitup "http://127.0.0.1:$port/metrics"
    line=$(measure "$variant" "http://127.0.0.1:$port/metrics" "$spid")
    printf "%-8s %s\n" "$n" "$line"
    if [ "$variant" = slowlab-exporter ]; then
      med=$(awk '{print $2}' <<<"$line"); rss=$(awk '{print $5}' <<<"$line")
      goal=10; [ "$n" -ge 1000 ] && goal=50
      awk -v m="$med" -v g="$goal" -v r="$rss" 'BEGIN { exit !(m <= g && r <= 25) }' ||
        { echo "         goal missed: median ${med} ms (goal ${goal}), RSS ${rss} MiB (goal 25)"; fail=1; }
    fi
    kill "$spid"; wait "$spid" 2>/dev/null || true
  done

  if [ -n "$procexp" ]; then
    cat >"$work/pe.yml" <<'EOF'
process_names:
  - name: "{{.Matches.g}}"
    cmdline:
    - 'sleep (?P<g>60[012])'
EOF
    port=$(freeport)
    "$procexp" -config.path "$work/pe.yml" -web.listen-address "127.0.0.1:$port" >"$work/pe-$n.log" 2>&1 &
    ppid_=$!; pids+=("$ppid_")
    waitup "http://127.0.0.1:$port/metrics"
    printf "%-8s %s\n" "$n" "$(measure "process-exporter" "http://127.0.0.1:$port/metrics" "$ppid_")"
    kill "$ppid_"; wait "$ppid_" 2>/dev/null || true
  fi
  if [ -n "$nodeexp" ]; then
    port=$(freeport)
    "$nodeexp" --collector.disable-defaults --collector.processes --web.listen-address "127.0.0.1:$port" >"$work/ne-$n.log" 2>&1 &
    npid=$!; pids+=("$npid")
    waitup "http://127.0.0.1:$port/metrics"
    printf "%-8s %s\n" "$n" "$(measure "node_exporter processes" "http://127.0.0.1:$port/metrics" "$npid")"
    kill "$npid"; wait "$npid" 2>/dev/null || true
  fi
  exec 9>&-
done
echo "(each median over $scrapes scrapes after a warm-up; $(nproc) CPUs; $(uname -r))"
exit $fail
