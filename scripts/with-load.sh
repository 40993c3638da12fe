#!/usr/bin/env bash
# with-load.sh CMD...: runs CMD with a CPU hog on every core beside it at
# nice $LOAD_NICE (19 unless set; 0 takes half of every core, as a machine
# shared with other tenants does) (scripts/cpuhog), and ends the hog, by
# its PID, however CMD ends.
set -euo pipefail
dir=$(mktemp -d)
go build -o "$dir/cpuhog" ./scripts/cpuhog
nice -n "${LOAD_NICE:-19}" "$dir/cpuhog" &
hog=$!
trap 'kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; rm -rf "$dir"' EXIT
"$@"
