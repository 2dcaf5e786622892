#!/usr/bin/env bash
# Pinned vs unpinned, one client (docs/lab.md#pinning, docs/performance.md).
#
#   bench/pinning.sh
#
# oltp_point_select with 1 thread against a MariaDB that `dbbench server
# start` runs (unix socket), in three placements:
#   split:    the server on CPU $SERVER_CPU (`dbbench server start --cpus`),
#             the client on CPU $CLIENT_CPU (taskset: the same
#             sched_setaffinity the lab's `[cpus] clients` makes)
#   same:     server and client both on CPU $SERVER_CPU
#   unpinned: neither; the scheduler places everything
# for both tools (dbbench and sysbench 1.0.20), alternated: each round runs
# every placement (order rotated every round), each placement both tools
# (order flipped every round), so drift of the machine favours none. Per run:
#   - QPS from the tool's own report line `queries: N (X per sec.)`
#   - client CPU per query = (user+sys) / queries (GNU time), in µs
#   - rescheduling IPIs per query (/proc/interrupts RES, whole machine)
# then the median of each (placement, tool) over the rounds.
#
# Environment: DBBENCH [target/release/dbbench] SYSBENCH [sysbench]
#   ROUNDS [3] TIME [10] seconds per run  TABLE_SIZE [10000]
#   SERVER_CPU [0] CLIENT_CPU [1]  KEEP [0] (1: keep the work dir)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO"
DBBENCH=${DBBENCH:-$REPO/target/release/dbbench}
SYSBENCH=${SYSBENCH:-sysbench}
ROUNDS=${ROUNDS:-3}
TIME=${TIME:-10}
TABLE_SIZE=${TABLE_SIZE:-10000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
KEEP=${KEEP:-0}

for p in "$DBBENCH" "$SYSBENCH" taskset /usr/bin/time; do
    command -v "$p" >/dev/null || { echo "bench/pinning.sh: $p not found" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/dbbench-pinning.XXXXXX)
chmod 711 "$WORK" # as root, the server runs as mysql and must reach its --dir
SRV=$WORK/srv
stop_server() { "$DBBENCH" server stop --dir "$SRV" >/dev/null 2>&1 || true; }
cleanup() {
    stop_server
    if [ "$KEEP" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# Starts the server, pinned or not; sets SOCKET.
start_server() {
    local out
    if [ "$1" != unpinned ]; then
        out=$("$DBBENCH" server start --kind=mariadb --dir "$SRV" --cpus="$SERVER_CPU" -- --innodb_buffer_pool_size=128M)
    else
        out=$("$DBBENCH" server start --kind=mariadb --dir "$SRV" -- --innodb_buffer_pool_size=128M)
    fi
    SOCKET=$(sed -n 's/^socket=//p' <<<"$out")
    PID=$(sed -n 's/^pid=//p' <<<"$out")
    echo "# $1 server pid $PID: $(grep Cpus_allowed_list /proc/"$PID"/status)" >&2
}

res_total() { awk '/^ *RES:/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i } END { print s + 0 }' /proc/interrupts; }

start_server unpinned
"$DBBENCH" oltp_point_select prepare --db-driver=mysql --mysql-socket="$SOCKET" --tables=1 --table-size="$TABLE_SIZE" >/dev/null
stop_server

# One measured run: placement, tool → "qps cpu_us_per_query res_per_query"
run_one() {
    local placement=$1 tool=$2 prog pin=() out res0 res1
    [ "$tool" = dbbench ] && prog=$DBBENCH || prog=$SYSBENCH
    [ "$placement" = split ] && pin=(taskset -c "$CLIENT_CPU")
    [ "$placement" = same ] && pin=(taskset -c "$SERVER_CPU")
    res0=$(res_total)
    out=$(/usr/bin/time -f 'cpu_s=%U %S' "${pin[@]}" "$prog" oltp_point_select run --db-driver=mysql \
        --mysql-socket="$SOCKET" --mysql-user=sbtest --mysql-db=sbtest --tables=1 --table-size="$TABLE_SIZE" \
        --threads=1 --time="$TIME" --rand-seed=1 2>&1)
    res1=$(res_total)
    awk -v res=$((res1 - res0)) '
        /^ *queries:/ { q = $2; qps = $3; sub(/^\(/, "", qps) }
        /^cpu_s=/ { sub(/^cpu_s=/, ""); cpu = $1 + $2 }
        END { if (q > 0) printf "%.0f %.2f %.3f\n", qps, cpu / q * 1e6, res / q; else print "NA NA NA" }' <<<"$out"
}

RESULTS=$WORK/results.tsv
for round in $(seq 1 "$ROUNDS"); do
    case $((round % 3)) in
        1) placements="split same unpinned" ;;
        2) placements="unpinned split same" ;;
        0) placements="same unpinned split" ;;
    esac
    if [ $((round % 2)) = 1 ]; then tools="dbbench sysbench"; else tools="sysbench dbbench"; fi
    for placement in $placements; do
        start_server "$placement"
        for tool in $tools; do
            line=$(run_one "$placement" "$tool")
            printf '%s\t%s\t%s\t%s\n' "$round" "$placement" "$tool" "$line" | tee -a "$RESULTS" >&2
        done
        stop_server
    done
done

echo "placement  tool      QPS (median)  client CPU µs/query  RES IPIs/query   (medians of $ROUNDS rounds, ${TIME}s each)"
for placement in split same unpinned; do
    for tool in dbbench sysbench; do
        awk -F'\t' -v p="$placement" -v t="$tool" '
            function median(a, n,   i, j, x) {
                for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
                return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
            }
            $2 == p && $3 == t { split($4, f, " "); n++; q[n] = f[1]; c[n] = f[2]; r[n] = f[3] }
            END { printf "%-10s %-9s %12.0f  %19.2f  %14.3f\n", p, t, median(q, n), median(c, n), median(r, n) }' "$RESULTS"
    done
done
