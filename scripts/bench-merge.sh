#!/usr/bin/env bash
# How long `slowlab merge` takes and how much memory it holds on sharded
# results of any size: scripts/genshards writes 4 shards of REQUESTS rows
# in all (default 1,000,000; 7,200,000 is an hour at 2,000/s), then the
# merge runs under /usr/bin/time -v. Its memory should not grow with the
# rows: run it with two sizes and compare "Maximum resident set size".
#   scripts/bench-merge.sh [REQUESTS]
set -euo pipefail
requests=${1:-1000000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/slowlab" ./cmd/slowlab
go run ./scripts/genshards --out "$dir/shards" --shards 4 --requests "$requests"
du -sh "$dir/shards"
/usr/bin/time -v "$dir/slowlab" merge --out "$dir/merged" "$dir"/shards/shard-{0,1,2,3} 2>"$dir/time.txt"
grep -E "Elapsed|Maximum resident" "$dir/time.txt"
