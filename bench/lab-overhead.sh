#!/usr/bin/env bash
# The lab's overhead per run: server stop, data directory restore, server
# start, hooks — everything between two measured runs — for a managed
# MariaDB, a managed PostgreSQL and SQLite, with a writing workload so that
# every run restores its data.
#
#   bench/lab-overhead.sh            (uses target/release/dbbench; DBBENCH=... to override)
#
# Prints the lab's per-run lines, the comparison and the overhead table
# (medians and maxima from the results store) that every `lab run` ends with.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
DBBENCH=${DBBENCH:-$REPO/target/release/dbbench}
[ -x "$DBBENCH" ] || { echo "lab-overhead.sh: $DBBENCH missing; run cargo build --release" >&2; exit 1; }
WORK=$(mktemp -d /tmp/dbbench-lab-overhead.XXXXXX)
chmod 755 "$WORK"   # PostgreSQL runs as `postgres` when we are root
trap 'rm -rf "$WORK"' EXIT
cp "$REPO/bench/lab/overhead.toml" "$WORK/"
start=$(date +%s.%N)
"$DBBENCH" lab run "$WORK/overhead.toml" || echo "lab-overhead.sh: lab run exited with $?" >&2
end=$(date +%s.%N)
awk -v a="$start" -v b="$end" 'BEGIN { printf "\nwall time of the whole experiment: %.1f s (18 runs x 1 s measured, plus 3 prepares)\n", b - a }'
