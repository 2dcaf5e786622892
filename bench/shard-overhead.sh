#!/usr/bin/env bash
# One shard's cost over an unsharded run of the same clients (issue 23's
# target: instructions per query within 2%): dbbench's user-space
# instructions per query under valgrind's callgrind, one client, the same
# run with and without `--shard=0/1 --shard-result=FILE`. Two event counts
# are run and subtracted, so start-up and the result's writing cancel out
# of the per-query figure (the clients' path); "whole run/query" is the
# longer run's instructions over its queries, start-up and result included.
# Without report ticks (--report-interval=0): a tick's cost is per second,
# not per query, and under callgrind (~50x slower) the number of ticks in a
# run follows the host's load, which made the per-query figure vary by 25%
# between identical runs. The other threads' wake-ups (the reporter's
# timer, the time limit's check) still follow the run's wall time, so the
# figure compared is the client thread's alone (callgrind
# --separate-threads; the thread whose count grows with the events: with
# one client, the client's worker); "all threads" is printed beside it. A shard's one extra step per tick
# (its histogram kept for the result) is not measured here.
#
#   bench/shard-overhead.sh [DBBENCH]
#
# Needs valgrind and a MariaDB: DBBENCH_TEST_MYSQL_SOCKET (as from
# `scripts/servers.sh up DIR; . DIR/env`), user root, database sbtest
# (created if missing). WORKLOADS [oltp_point_select oltp_read_only],
# EVENTS ["2000 6000"].
set -euo pipefail
BIN=$(realpath "${1:-target/release/dbbench}")
SOCK=${DBBENCH_TEST_MYSQL_SOCKET:?set DBBENCH_TEST_MYSQL_SOCKET (scripts/servers.sh up DIR; . DIR/env)}
WORKLOADS=${WORKLOADS:-oltp_point_select oltp_read_only}
read -r EV_LO EV_HI <<<"${EVENTS:-2000 6000}"
command -v valgrind >/dev/null || { echo "shard-overhead.sh: needs valgrind" >&2; exit 1; }
WORK=$(mktemp -d /tmp/dbbench-shard-overhead.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
COMMON=(--db-driver=mysql "--mysql-socket=$SOCK" --mysql-user=root --mysql-db=sbtest
    --tables=1 --table-size=10000 --rand-seed=1 --report-interval=0)
mysql -S "$SOCK" -uroot -e 'CREATE DATABASE IF NOT EXISTS sbtest' 2>/dev/null ||
    "$BIN" oltp_point_select "${COMMON[@]}" cleanup >/dev/null 2>&1 || true
"$BIN" oltp_point_select "${COMMON[@]}" cleanup >/dev/null 2>&1 || true
"$BIN" oltp_point_select "${COMMON[@]}" prepare >/dev/null

# run KIND WORKLOAD EVENTS: runs it under callgrind, one profile per thread
# (--separate-threads: cg-01 the main thread, cg-02 ... the workers); writes
# "THREAD INSTRUCTIONS" lines to $WORK/threads-KIND-EVENTS and prints the
# queries the run made.
run() {
    local kind=$1 wl=$2 ev=$3 extra=()
    [ "$kind" = shard ] && extra=(--shard=0/1 "--shard-result=$WORK/result-$wl-$ev.json")
    rm -f "$WORK"/cg*
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$WORK/cg" "$BIN" "$wl" "${COMMON[@]}" \
        --threads=1 "--events=$ev" --time=0 "${extra[@]}" run >"$WORK/out" 2>/dev/null </dev/null
    awk '$1 == "thread:" { t = $2 } $1 == "summary:" { print t, $2 }' "$WORK"/cg-* >"$WORK/threads-$kind-$ev"
    awk '$1 == "queries:" { print $2 }' "$WORK/out" | tail -n 1
}

# per_query KIND QUERIES_LO QUERIES_HI: "CLIENT ALL" instructions per query
# between the two runs: CLIENT for the thread whose count grew the most
# (with one client, the client's worker), ALL for every thread together.
per_query() {
    join <(sort -k1,1 "$WORK/threads-$1-$EV_LO") <(sort -k1,1 "$WORK/threads-$1-$EV_HI") | awk -v p="$2" -v q="$3" '
        { d = $3 - $2; all += d; if (d > best) best = d }
        END { printf "%.0f %.0f", best / (q - p), all / (q - p) }'
}

printf '%-18s %-10s %14s %18s %16s\n' workload run 'instr/query' 'all threads/query' 'whole run/query'
for wl in $WORKLOADS; do
    declare -A PER=()
    for kind in unsharded shard; do
        q_lo=$(run "$kind" "$wl" "$EV_LO")
        q_hi=$(run "$kind" "$wl" "$EV_HI")
        read -r client all <<<"$(per_query "$kind" "$q_lo" "$q_hi")"
        PER[$kind]=$client
        whole=$(awk -v q="$q_hi" '{ s += $2 } END { printf "%.0f", s / q }' "$WORK/threads-$kind-$EV_HI")
        printf '%-18s %-10s %14s %18s %16s\n' "$wl" "$kind" "$client" "$all" "$whole"
    done
    awk -v s="${PER[shard]}" -v u="${PER[unsharded]}" -v w="$wl" \
        'BEGIN { printf "  %s: shard / unsharded = %.4f (%+.2f%%)\n", w, s / u, (s / u - 1) * 100 }'
done
"$BIN" oltp_point_select "${COMMON[@]}" cleanup >/dev/null 2>&1 || true
