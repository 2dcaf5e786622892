#!/usr/bin/env bash
# Start skew across 4 shards on simulated hosts (issue 23): runs the
# network-namespace tests of tests/shards.rs REPS times (as root: they make
# namespaces, a MariaDB and a PostgreSQL in one, 4 shards of
# oltp_read_write in others, started with --start-at 1.5 s ahead) and prints
# each run's merged start skew (on the database server's clock) and the
# median per server.
#
#   bench/shard-skew.sh [REPS]     (default 5; ~1 min per repetition)
set -euo pipefail
REPS=${1:-5}
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "shard-skew.sh: needs root (network namespaces)" >&2; exit 1; }
cargo test --release --locked --test shards --no-run 2>&1 | tail -n 3 >&2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 1; r <= REPS; r++)); do
    cargo test --release --locked --test shards netns_shards -- --nocapture --test-threads=1 2>&1 |
        grep '^start skew across' | tee -a "$out"
done
for server in MariaDB PostgreSQL; do
    grep "($server," "$out" | sed 's/.*): \([0-9.]*\) ms.*/\1/' | sort -g |
        awk -v s="$server" '{ v[NR] = $1 } END {
            if (NR == 0) { print s ": no runs"; exit }
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%s: start skew over %d runs: median %.2f ms, min %.2f, max %.2f\n", s, NR, m, v[1], v[NR] }'
done
